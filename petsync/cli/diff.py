"""``petsync diff``: what changed between two snapshots."""

from __future__ import annotations

import json
from pathlib import Path

import click

from petsync.cli.render import diff_lines


@click.command("diff")
@click.argument("old")
@click.argument("new")
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="Snapshot directory that dates refer to (the export's --out).",
)
@click.option("--details", is_flag=True, help="List the changed pets, not just counts.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON on stdout.")
def diff_command(old: str, new: str, directory: Path, details: bool, as_json: bool) -> None:
    """Show pets added, removed, renamed and moved between statuses from OLD to NEW.

    OLD and NEW are snapshot dates (YYYY-MM-DD, under --dir) or snapshot paths.

    \b
    Example:
      petsync diff 2026-11-21 2026-11-22 --dir /srv/petsync --details
    """
    from petsync.export.diff import diff_snapshots  # pandas: loaded only for this command

    result = diff_snapshots(old, new, directory=directory)
    if as_json:
        click.echo(json.dumps(result.to_json(details=details), ensure_ascii=False, indent=2))
        return
    for line in diff_lines(result, details=details):
        click.echo(line)
