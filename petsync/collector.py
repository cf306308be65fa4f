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

BATCH_ROWS = 16_384  # per listing: bounds the Python objects held between batches

# Listing sources are small integers in the collected rows: 0 is the unfiltered sweep,
# 1.. are the statuses in interface order.
SWEEP_SOURCE = 0
_SOURCE_STATUS: tuple[str | None, ...] = (None, *STATUS_VALUES)

_WORK_SCHEMA = pa.schema(
    [*PET_SCHEMA, pa.field("seq", pa.int32(), False), pa.field("source", pa.int8(), False)]
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
        self.expected = _SOURCE_STATUS[source]
        self.mismatches = 0
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
        statuses = [p.status for p in pets]
        self.statuses.extend(statuses)
        self.seqs.extend(itertools.repeat(seq, len(pets)))
        if self.expected is not None:
            # Listed under status=X but the body says otherwise: the body wins, counted.
            self.mismatches += len(statuses) - statuses.count(self.expected)

    def take_batch(self) -> pa.RecordBatch | None:
        if not self.ids:
            return None
        batch = pa.record_batch(
            [
                pa.array(self.ids, pa.int64()),
                pa.array(self.names, pa.string()),
                pa.array(self.categories, pa.int64()),
                pa.array(self.statuses, pa.string()),
                pa.array(self.seqs, pa.int32()),
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
            mismatches = sum(b.mismatches for b in self._buffers.values())
        if not batches:
            return CollectedPets(empty_table(), 0, 0, 0, 0, dict.fromkeys(STATUS_VALUES, 0))
        rows = pa.Table.from_batches(batches, schema=_WORK_SCHEMA)
        del batches
        fetched = rows.num_rows
        ids = rows.column("id").to_numpy()
        seqs = rows.column("seq").to_numpy()
        # Rows of one id together, its latest fetch first (lexsort's last key is primary).
        order = np.lexsort((-seqs.astype(np.int64), ids))
        del seqs
        sorted_ids = ids[order]
        del ids
        first = np.empty(fetched, dtype=bool)
        first[0] = True
        np.not_equal(sorted_ids[1:], sorted_ids[:-1], out=first[1:])
        two_statuses = _seen_under_two_statuses(rows, order, first)
        conflicting = _conflicting_ids(rows, order, sorted_ids, first)
        del sorted_ids
        keep = pa.array(order[first])
        del order, first
        table = conform(rows.select(list(COLUMNS)).take(keep).combine_chunks())
        del rows, keep
        by_status, no_status, unknown = _status_counts(table)
        return CollectedPets(
            table=table,
            rows_fetched=fetched,
            seen_under_two_statuses=two_statuses,
            conflicting_duplicates=conflicting,
            status_mismatches=mismatches,
            by_status=by_status,
            no_status=no_status,
            unknown_status=unknown,
        )


def _seen_under_two_statuses(rows: pa.Table, order: np.ndarray, first: np.ndarray) -> int:
    """Ids listed under two or more status filters (they moved while the export ran).

    The sweep lists every pet again by design, so only filtered listings count: per id
    group, the smallest and largest filtered source differ exactly when there are two.
    """
    sources = rows.column("source").to_numpy()[order]
    starts = np.flatnonzero(first)
    filtered = sources != SWEEP_SOURCE
    low = np.minimum.reduceat(np.where(filtered, sources, np.int8(127)), starts)
    high = np.maximum.reduceat(np.where(filtered, sources, np.int8(-1)), starts)
    return int(np.count_nonzero((high >= 0) & (low != high)))


def _conflicting_ids(
    rows: pa.Table, order: np.ndarray, sorted_ids: np.ndarray, first: np.ndarray
) -> int:
    """Ids fetched more than once whose copies differ in name, categoryId or status.

    Within an id's rows any difference shows between two neighbours, so comparing each
    row with the one before it (when both have the same id) finds every conflicting id.
    """
    same = ~first[1:]
    if not same.any():
        return 0
    index = pa.array(order)
    differs = np.zeros(len(same), dtype=bool)
    categories = rows.column("categoryId").to_numpy()[order]
    differs |= categories[1:] != categories[:-1]
    del categories
    for name in ("name", "status"):
        column = pc.fill_null(rows.column(name).take(index), "\x00(none)").combine_chunks()
        differs |= pc.not_equal(column.slice(1), column.slice(0, len(column) - 1)).to_numpy(
            zero_copy_only=False
        )
        del column
    conflicted = sorted_ids[1:][same & differs]
    return int(len(np.unique(conflicted)))


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
