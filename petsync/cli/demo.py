"""``petsync demo``: the nightly export against a seeded reference server, as a try-out."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from petsync.cli.export import prefer_system_allocator
from petsync.cli.progress import progress_display
from petsync.cli.render import export_summary
from petsync.cli.signals import stop_on_signals
from petsync.cli.state import CliState, pass_state
from petsync.core.stop import DEFAULT_GRACE_SECONDS
from petsync.export.location import is_uri


@click.command()
@click.option(
    "--pets",
    type=click.IntRange(min=0),
    default=10_000,
    show_default=True,
    help="Pets in the seeded catalogue.",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False),
    default="petsync-demo",
    show_default=True,
    help="Snapshot directory.",
)
@click.option(
    "--extra-fields-demo",
    is_flag=True,
    help="Serve pets with fields beyond the interface's, and keep them as columns.",
)
@pass_state
def demo(state: CliState, pets: int, out_dir: str, extra_fields_demo: bool) -> None:
    """Run the nightly export against a seeded reference server, in-process.

    Starts the reference server on a free 127.0.0.1 port with a generated key and PETS
    pets, exports it into OUT and prints the two lines that load the result in pandas and
    DuckDB. No network, no key to set up.

    \b
    Example:
      petsync demo --pets 100000 --out /tmp/petsync-demo
    """
    if is_uri(out_dir):
        raise click.BadParameter(
            f"{out_dir}: the demo writes to a local directory; export to an object store "
            "with `petsync export --out`",
            param_hint="'--out'",
        )
    prefer_system_allocator()
    from petsync.demo import run_demo

    with (
        stop_on_signals(DEFAULT_GRACE_SECONDS, json_logs=state.json_logs) as stop,
        progress_display(sys.stderr, json_logs=state.json_logs, environ=state.environ) as display,
    ):
        result = run_demo(
            Path(out_dir), pets, progress=display, stop=stop, extra_fields=extra_fields_demo
        )
    for line in export_summary(result.export):
        click.echo(line)
    click.echo("")
    click.echo("Load it in Python with pandas, or query it with DuckDB:")
    click.echo(f"  {result.pandas_line}")
    click.echo(f"  {result.duckdb_line}")
    result.export.raise_for_outcome()
