"""``petsync demo``: the nightly export against a seeded reference server, as a try-out."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from petsync.cli.allocator import prefer_system_allocator
from petsync.cli.progress import progress_display
from petsync.cli.render import export_summary
from petsync.cli.signals import stop_on_signals
from petsync.cli.state import CliState, pass_state
from petsync.core.stop import DEFAULT_GRACE_SECONDS
from petsync.storage.location import is_uri


@click.command()
@click.option(
    "--pets",
    type=click.IntRange(min=0),
    default=10_000,
    show_default=True,
    help="Pets in the seeded catalogue.",
)
@click.option(
    "--nights",
    type=click.IntRange(min=1, max=366),
    default=7,
    show_default=True,
    help="Nights to export, ending today; the catalogue changes between them.",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False),
    default="petsync-demo",
    show_default=True,
    help="Snapshot directory: new, empty, or an earlier demo's (replaced).",
)
@click.option(
    "--extra-fields-demo",
    is_flag=True,
    help="Serve pets with fields beyond the interface's, and keep them as columns.",
)
@pass_state
def demo(state: CliState, pets: int, nights: int, out_dir: str, extra_fields_demo: bool) -> None:
    """Run a week of nightly exports against a seeded reference server, in-process.

    Starts the reference server on a free 127.0.0.1 port with a generated key and PETS
    pets, and exports it into OUT once for each of NIGHTS nights ending today, the
    catalogue changing between them as a shelter's does: arrivals, adoptions, reservations,
    renames, one pet leaving and coming back. Prints each night, the lines that load the
    result in pandas and DuckDB, and the commands that show what changed. No network, no
    key to set up.

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
            Path(out_dir),
            pets,
            nights=nights,
            progress=display,
            stop=stop,
            extra_fields=extra_fields_demo,
        )
    for export in result.exports[:-1]:
        click.echo(export_summary(export, state.terms)[0])
    for line in export_summary(result.export, state.terms):
        click.echo(line)
    click.echo("")
    click.echo("Load every night in Python with pandas, or query them with DuckDB:")
    click.echo(f"  {result.pandas_line}")
    click.echo(f"  {result.duckdb_line}")
    click.echo("")
    click.echo("See what changed: the last night's diff, each pet's history and its report:")
    for line in result.next_commands:
        click.echo(f"  {line}")
    result.export.raise_for_outcome()
