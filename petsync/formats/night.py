"""What a format commits: one night's rows and the few facts about them every format needs.

The export (:mod:`petsync.export.run`) describes its night as a :class:`Night` and hands it to
the format the registry chose (:mod:`petsync.formats.registry`); the format never sees the
export's own classes, so the imports run one way: export -> formats. The rows come as record
batches of the snapshot schema plus the kept extra fields (:class:`NightRows`), read as many
times as the format needs; a commit counts their statuses for the manifest
(:class:`StatusCounts`) and says where the night went (:class:`Committed`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import pyarrow as pa
import pyarrow.compute as pc

from petsync.core.models import STATUS_VALUES

if TYPE_CHECKING:
    from petsync.formats.schema import ColumnType
    from petsync.storage.location import Location
    from petsync.storage.store import SnapshotStore, Staged


class NightRows(Protocol):
    """The night's winning rows, streamed from the run's scratch area at each call."""

    def batches(
        self, extra_columns: Mapping[str, ColumnType] | None = None
    ) -> Iterator[pa.RecordBatch]: ...


class HeldLock(Protocol):
    """The run's lock: proven still held right before the night is published."""

    def confirm(self) -> None: ...


@dataclass(frozen=True)
class Night:
    """One export night, as every format sees it.

    ``trusted`` is the export's judgement (complete, no suspicious drop: exit 0): dated
    folders name a flagged night's data so readers of ``pets/`` skip it, and ``keep`` prunes
    only after a trusted night. ``columns`` are the kept extra fields, in the order they
    follow the snapshot's columns: the schema evolution a table makes (new columns only).
    ``staged`` holds what the run wrote aside (the quarantine); ``store`` is where dated
    folders are published and pruned.
    """

    date: dt.date
    location: Location
    run_id: str  # in the manifest and the Parquet footer: readers match the two
    rows: NightRows
    columns: Mapping[str, ColumnType]
    trusted: bool
    csv: bool  # the CSV copy beside the Parquet file (dated folders only)
    keep: int | None
    store: SnapshotStore
    staged: Staged
    lock: HeldLock


@dataclass
class StatusCounts:
    """Pets per enum status, without status, and per unknown status value."""

    by_status: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STATUS_VALUES, 0))
    no_status: int = 0
    unknown_status: dict[str, int] = field(default_factory=dict)

    def add(self, column: pa.Array) -> None:
        for item in pc.value_counts(column).to_pylist():
            value, count = item["values"], int(item["counts"])
            if value is None:
                self.no_status += count
            elif value in self.by_status:
                self.by_status[value] += count
            else:
                self.unknown_status[value] = self.unknown_status.get(value, 0) + count
        self.unknown_status = dict(sorted(self.unknown_status.items()))


@dataclass(frozen=True)
class Committed:
    """Where a night went: its partition or table, the table version, the nights pruned."""

    path: Path | str
    version: int | None = None  # the table version (or Iceberg snapshot id) it committed
    pruned: list[Path | str] = field(default_factory=list)
