"""``petsync report``: the history as one HTML page of charts."""

from __future__ import annotations

from pathlib import Path

import click

from petsync.cli.allocator import prefer_system_allocator
from petsync.report.write import write_report
from petsync.storage.location import is_uri


@click.command("report")
@click.argument("directory", metavar="DIR", type=click.Path(file_okay=False))
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    help="Where to write the page, a local file; needed when DIR is a store URI.  "
    "[default: DIR/report.html]",
)
def report_command(directory: str, output: str | None) -> None:
    """Write one self-contained HTML report of the history under DIR.

    Charts of pets per status per night, pets added, changed and removed, status
    transitions, time from available to sold and each night's data quality, with the
    numbers in tooltips and tables, a filter by category and status, the nights without
    a snapshot or not trusted named, and a pet lookup. The file opens offline: it loads
    nothing, and gets your umask's permissions (0644 under 022). Run `petsync history DIR`
    first.

    \b
    Example:
      petsync report /srv/petsync -o /var/www/petsync/report.html
    """
    prefer_system_allocator()
    if output is not None and is_uri(output):  # a Path would read gs://b/x as gs:/b/x
        raise click.BadParameter(
            f"{output} is not a local path: the report is one local file; write it "
            "here (-o report.html) and copy it from there",
            param_hint="'--output'",
        )
    result = write_report(directory, Path(output) if output is not None else None)
    if result.nights < 2:
        said = "one night so far: come back tomorrow" if result.nights else "no night yet"
        click.echo(f"{result.path}: {said} (the charts start with the second night)")
        return
    click.echo(
        f"{result.path}: {len(result.charts)} charts over {result.nights} nights, "
        f"{result.bytes / 1e6:.1f} MB"
    )
