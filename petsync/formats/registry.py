"""Which formats there are, and which one a name, a place or a manifest means.

One line per format: the name ``--table-format`` takes (and the manifest's ``table_format``
records), the module implementing :class:`~petsync.formats.protocol.SnapshotFormat` as its
``FORMAT``, and whether the format can hold the CSV copy. Light on purpose: the command line
reads the names from here, and a format's module (with pyarrow behind it) loads only when
that format is used.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from petsync.formats.protocol import SnapshotFormat
    from petsync.storage.location import Location


@dataclass(frozen=True)
class Registered:
    """A format as the registry knows it before loading it."""

    module: str  # defines FORMAT, the format's SnapshotFormat
    holds_csv: bool = False  # can hold the CSV copy beside the Parquet data (format "both")

    def load(self) -> SnapshotFormat:
        found: SnapshotFormat = importlib.import_module(self.module).FORMAT
        return found


# hive: one Parquet file (and CSV) per dated partition; delta: one Delta Lake table;
# iceberg: one Apache Iceberg table.
FORMATS: dict[str, Registered] = {
    "hive": Registered("petsync.formats.folders", holds_csv=True),
    "delta": Registered("petsync.formats.delta"),
    "iceberg": Registered("petsync.formats.iceberg"),
}
FORMAT_NAMES: tuple[str, ...] = tuple(FORMATS)
DEFAULT_NAME = "hive"  # a place that holds no table holds this format's folders


def format_named(name: str) -> SnapshotFormat:
    """The format ``--table-format NAME`` chose (a name :data:`FORMAT_NAMES` holds)."""
    return FORMATS[name].load()


def format_of(location: Location) -> SnapshotFormat:
    """The format the snapshots at ``location`` are in: the table it holds, else folders."""
    for name, entry in FORMATS.items():
        if name != DEFAULT_NAME:
            found = entry.load()
            if found.holds(location):
                return found
    return format_named(DEFAULT_NAME)


def format_of_manifest(manifest: Mapping[str, Any]) -> SnapshotFormat:
    """The format that wrote the night a manifest describes (its ``table_format``)."""
    name = manifest.get("table_format")
    return format_named(name if isinstance(name, str) and name in FORMATS else DEFAULT_NAME)
