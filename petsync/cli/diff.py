"""``petsync diff``: what changed between two snapshots."""

from __future__ import annotations

import click

from petsync.cli.options import LOCATION, json_option
from petsync.cli.render import diff_lines


@click.command("diff")
@click.argument("old")
@click.argument("new")
@click.option(
    "--dir",
    "directory",
    type=LOCATION,
    metavar="LOCATION",
    default=".",
    show_default=True,
    help="Snapshot location that dates refer to (the export's --out: a directory or "
    "s3://..., gs://..., abfs://...).",
)
@click.option("--details", is_flag=True, help="List the changed pets, not just counts.")
@json_option
def diff_command(old: str, new: str, directory: str, details: bool, as_json: bool) -> None:
    """Show pets added, removed, renamed and moved between statuses from OLD to NEW.

    OLD and NEW are snapshot dates (YYYY-MM-DD, under --dir) or snapshot paths or URIs.

    \b
    Example:
      petsync diff 2026-11-21 2026-11-22 --dir /srv/petsync --details
      petsync diff 2026-11-21 2026-11-22 --dir s3://archive/petsync
    """
    from petsync.history.diff import diff_snapshots  # pandas: loaded only for this command

    result = diff_snapshots(old, new, directory=directory)
    if as_json:
        click.echo(result.json_line(details=details))  # one line, as every --json
        return
    for line in diff_lines(result, details=details):
        click.echo(line)
