"""Collect listed pets into Arrow columns and deduplicate them by id.

Pages arrive from several listings at once (one per status plus the unfiltered sweep). Each
listing appends its pets to plain Python column lists, turned into an Arrow record batch
every :data:`BATCH_ROWS` rows, so memory holds compact columns (about 40 bytes a pet), never
a list of a million ``Pet`` objects or a DataFrame of dicts. :meth:`PetCollector.finish`
deduplicates with Arrow compute: for each id the row from the latest fetched page wins (a
pet that changed status while the export ran is kept as last seen), and it counts what the
manifest reports about duplicates and status mismatches.
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from petsync.models import STATUS_VALUES, Pet, PetStatus
from petsync.schema import COLUMNS, PET_SCHEMA, conform, empty_table

BATCH_ROWS = 65_536

# Listing sources are small integers in the collected rows: 0 is the unfiltered sweep,
# 1.. are the statuses in interface order.
SWEEP_SOURCE = 0
_SOURCE_STATUS: tuple[str | None, ...] = (None, *STATUS_VALUES)

_WORK_SCHEMA = pa.schema(
    [*PET_SCHEMA, pa.field("seq", pa.int64(), False), pa.field("source", pa.int8(), False)]
)


def source_of(status: PetStatus | None) -> int:
    """The source number of the listing for ``status`` (None: the sweep)."""
    return SWEEP_SOURCE if status is None else _SOURCE_STATUS.index(status.value)


@dataclass(frozen=True)
class CollectedPets:
    """The deduplicated pets (ordered by id) and what deduplication found."""

    table: pa.Table
    rows_fetched: int
    seen_under_two_statuses: int
    conflicting_duplicates: int
    status_mismatches: int
    by_status: dict[str, int] = field(default_factory=dict)
    no_status: int = 0
    unknown_status: dict[str, int] = field(default_factory=dict)


class _Buffer:
    """One listing's rows not yet turned into a record batch (used by one thread)."""

    def __init__(self, source: int) -> None:
        self.source = source
        self.reset()

    def reset(self) -> None:
        self.ids: list[int] = []
        self.names: list[str] = []
        self.categories: list[int] = []
        self.statuses: list[str | None] = []
        self.seqs: list[int] = []

    def add(self, pets: list[Pet], seq: int) -> None:
        self.ids.extend([p.id for p in pets])
        self.names.extend([p.name for p in pets])
        self.categories.extend([p.categoryId for p in pets])
        self.statuses.extend([p.status for p in pets])
        self.seqs.extend(itertools.repeat(seq, len(pets)))

    def take_batch(self) -> pa.RecordBatch | None:
        if not self.ids:
            return None
        batch = pa.record_batch(
            [
                pa.array(self.ids, pa.int64()),
                pa.array(self.names, pa.string()),
                pa.array(self.categories, pa.int64()),
                pa.array(self.statuses, pa.string()),
                pa.array(self.seqs, pa.int64()),
                pa.repeat(pa.scalar(self.source, pa.int8()), len(self.ids)),
            ],
            schema=_WORK_SCHEMA,
        )
        self.reset()
        return batch


class PetCollector:
    """Thread-safe sink for the pages of several listings; :meth:`finish` dedups them.

    >>> collector = PetCollector()
    >>> collector.add(source_of(None), [Pet(1, "Rex", 7, "sold")])
    >>> collector.add(source_of(PetStatus.SOLD), [Pet(1, "Rex", 7, "sold")])
    >>> collector.finish().table.num_rows
    1
    """

    def __init__(self, batch_rows: int = BATCH_ROWS) -> None:
        self._batch_rows = batch_rows
        self._lock = threading.Lock()
        self._seq = 0
        self._buffers: dict[int, _Buffer] = {}
        self._batches: list[pa.RecordBatch] = []

    def add(self, source: int, pets: list[Pet]) -> None:
        """Append one page of ``source``. Pages of one source must come from one thread."""
        if not pets:
            return
        with self._lock:
            self._seq += 1
            seq = self._seq
            buffer = self._buffers.setdefault(source, _Buffer(source))
        buffer.add(pets, seq)
        if len(buffer.ids) >= self._batch_rows:
            batch = buffer.take_batch()
            with self._lock:
                if batch is not None:
                    self._batches.append(batch)

    def finish(self) -> CollectedPets:
        """Deduplicate everything added so far (call once, after every listing ended)."""
        with self._lock:
            for buffer in self._buffers.values():
                batch = buffer.take_batch()
                if batch is not None:
                    self._batches.append(batch)
            batches, self._batches = self._batches, []
        if not batches:
            return CollectedPets(empty_table(), 0, 0, 0, 0, dict.fromkeys(STATUS_VALUES, 0))
        rows = pa.Table.from_batches(batches, schema=_WORK_SCHEMA).combine_chunks()
        del batches
        duplicates = _duplicate_counts(rows)
        mismatches = _status_mismatches(rows)
        order = pc.sort_indices(rows, [("id", "ascending"), ("seq", "descending")])
        sorted_ids = pc.take(rows.column("id"), order).to_numpy()
        first = np.empty(len(sorted_ids), dtype=bool)
        if len(first):
            first[0] = True
            np.not_equal(sorted_ids[1:], sorted_ids[:-1], out=first[1:])
        del sorted_ids
        keep = pc.filter(order, pa.array(first))
        table = conform(rows.select(list(COLUMNS)).take(keep))
        fetched = rows.num_rows
        del rows, order, keep
        by_status, no_status, unknown = _status_counts(table)
        return CollectedPets(
            table=table,
            rows_fetched=fetched,
            seen_under_two_statuses=duplicates[0],
            conflicting_duplicates=duplicates[1],
            status_mismatches=mismatches,
            by_status=by_status,
            no_status=no_status,
            unknown_status=unknown,
        )


def _duplicate_counts(rows: pa.Table) -> tuple[int, int]:
    """(ids listed under two or more statuses, ids fetched twice with different content)."""
    # The sweep lists every pet again by design; only the filtered listings tell whether a
    # pet moved from one status to another while the export ran.
    filtered_source = pc.if_else(
        pc.equal(rows.column("source"), SWEEP_SOURCE),
        pa.scalar(None, pa.int8()),
        rows.column("source"),
    )
    work = pa.table(
        {
            "id": rows.column("id"),
            "fs": filtered_source,
            "name": rows.column("name"),
            "categoryId": rows.column("categoryId"),
            "status": pc.fill_null(rows.column("status"), "\x00(none)"),
        }
    )
    grouped = work.group_by("id").aggregate(
        [
            ("fs", "count_distinct", pc.CountOptions(mode="only_valid")),
            ("name", "count_distinct"),
            ("categoryId", "count_distinct"),
            ("status", "count_distinct"),
        ]
    )
    two_statuses = pc.sum(pc.greater(grouped.column("fs_count_distinct"), 1)).as_py() or 0
    differs = pc.or_(
        pc.or_(
            pc.greater(grouped.column("name_count_distinct"), 1),
            pc.greater(grouped.column("categoryId_count_distinct"), 1),
        ),
        pc.greater(grouped.column("status_count_distinct"), 1),
    )
    conflicting = pc.sum(differs).as_py() or 0
    return int(two_statuses), int(conflicting)


def _status_mismatches(rows: pa.Table) -> int:
    """Rows listed under ``status=X`` whose body says another status (or none)."""
    listed = pc.take(pa.array(_SOURCE_STATUS, pa.string()), rows.column("source"))
    body = pc.fill_null(rows.column("status"), "\x00(none)")
    wrong = pc.and_(pc.is_valid(listed), pc.not_equal(body, pc.fill_null(listed, "")))
    return int(pc.sum(wrong).as_py() or 0)


def _status_counts(table: pa.Table) -> tuple[dict[str, int], int, dict[str, int]]:
    counts = dict.fromkeys(STATUS_VALUES, 0)
    unknown: dict[str, int] = {}
    no_status = 0
    for item in pc.value_counts(table.column("status")).to_pylist():
        value, count = item["values"], int(item["counts"])
        if value is None:
            no_status = count
        elif value in counts:
            counts[value] = count
        else:
            unknown[value] = count
    return counts, no_status, dict(sorted(unknown.items()))
