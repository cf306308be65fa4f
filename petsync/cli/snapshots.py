"""``petsync snapshots``: the nights a store holds, one line each."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from petsync.cli.options import json_option
from petsync.cli.output import echo_json
from petsync.cli.state import terminal_line
from petsync.core.errors import InputError
from petsync.storage.location import parse_location

if TYPE_CHECKING:
    from petsync.export.inventory import NightSummary


@click.command("snapshots")
@click.argument("directory", metavar="DIR|URI")
@json_option
def snapshots_command(directory: str, as_json: bool) -> None:
    """List the snapshots under DIR|URI, one line per night, oldest first: date, trust
    (complete, incomplete, drop flagged, dated ahead), pets, size, extra fields, and why a
    night is flagged.

    DIR|URI is the export's --out: a directory or an object-store URI (s3://, gs://, az://),
    holding Parquet folders, a Delta table or an Iceberg table. Nothing is fetched from the
    API and nothing is written. Exit 0, also when there is no snapshot yet; 2 when DIR
    is not a folder.

    \b
    Example:
      petsync snapshots /srv/petsync
      petsync snapshots s3://archive/petsync --json
    """
    from petsync.export.inventory import describe_snapshots  # pyarrow: only for this command

    local = parse_location(directory, what="DIR|URI").local
    if local is not None and not local.is_dir():  # a typo, not "no snapshot yet"
        raise InputError(
            f"{directory} is not a folder: pass the export's --out, the folder holding pets/"
        )
    nights = describe_snapshots(directory)
    if as_json:
        echo_json({"location": directory, "snapshots": [n.to_json() for n in nights]})
        return
    if not nights:
        click.echo(f"no snapshots under {directory}")
        return
    for night in nights:
        click.echo(terminal_line(night_line(night)))


def night_line(night: NightSummary) -> str:
    """One night as a line: date, trust, pets, size, extra fields, then why it is flagged.

    The columns line up for the usual sizes; the reasons come last, as long as they are.
    """
    extra = ", ".join(night.extra_fields) if night.extra_fields else "none"
    if night.extra_fields and night.extra_fields_mode:
        extra += f" ({night.extra_fields_mode})"
    line = (
        f"{night.date}  {night.trust:<12}  {night.pets:>9,} pets  {_size(night.size):>9}  "
        f"extra fields: {extra}"
    )
    if night.reasons:
        line += f"  flagged: {'; '.join(night.reasons)}"
    return line


def _size(size: int | None) -> str:
    """Bytes as people read them: ``812 B``, ``1.3 KiB``, ``24.0 MiB``."""
    if size is None:
        return "?"
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{size} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")  # pragma: no cover
