"""``petsync history``: fold the snapshots into each pet's history."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click

from petsync.cli.allocator import prefer_system_allocator

if TYPE_CHECKING:
    from petsync.history.update import HistoryReport


@click.command("history")
@click.argument("directory", metavar="DIR", type=click.Path(file_okay=False))
@click.option(
    "--rebuild",
    is_flag=True,
    help="Fold every snapshot kept from scratch and replace the history in one step.",
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON on stdout.")
def history_command(directory: str, rebuild: bool, as_json: bool) -> None:
    """Update DIR/history, each pet's versions, from the snapshots under DIR.

    DIR is the export's --out: a directory or an object-store URI (s3://BUCKET/PREFIX,
    gs://, abfs://), beside Parquet partitions or a Delta table. Only snapshots newer than
    the history's last night are read; a pet missing from an incomplete night (exit 4)
    is not closed. Read the table with petsync.load_history(DIR), pandas, DuckDB or
    polars (docs/history.md).

    \b
    Example:
      petsync history /srv/petsync
      petsync history /srv/petsync --rebuild
      petsync history s3://archive/petsync
    """
    prefer_system_allocator()
    from petsync.history.update import update_history  # pandas: loaded only for this command

    report = update_history(directory, rebuild=rebuild)
    if as_json:
        click.echo(json.dumps(report.to_json(), ensure_ascii=False, indent=2))
        return
    for line in history_lines(report):
        click.echo(line)


def history_lines(report: HistoryReport) -> list[str]:
    """An update's report as lines: one per night folded in, then the table."""
    lines = []
    for night in report.nights:
        verdict = (
            "complete" if night.trusted else "drop flagged" if night.complete else "incomplete"
        )
        kept = f", {night.kept} missing kept open" if night.kept else ""
        lines.append(
            f"{night.date}  {verdict:<12} {night.pets:,} pet{'' if night.pets == 1 else 's'}: "
            f"{night.added:,} added, "
            f"{night.changed:,} changed, {night.removed:,} removed{kept}"
        )
    done = "rebuilt" if report.rebuilt else "updated" if report.nights else "up to date"
    lines.append(
        f"{report.path}: {done}, {report.versions:,} versions, {report.current:,} current, "
        f"last night {report.last_date or 'none'}"
    )
    return lines
