"""Deduplication by id within a memory budget: a fixed order of listings wins, exact, spilled.

Every fetched row leaves five keys: its ``id``, the ``seq`` of its page (each listing
numbers its pages in the order it fetched them), its listing ``source``, a 64-bit ``hash``
of its fields and its ``row`` in the scratch file of rows, or ``GHOST`` for a row of the
unfiltered sweep that was not stored there (see :mod:`petsync.export.collector`).
:class:`KeyStore` keeps them in memory up to ``budget`` bytes; beyond that it appends them,
as they come, to one file in the scratch directory (one sequential write per batch: the
listings' threads wait for it). At the end that file is split into partition files, each id
always to the same partition (by a mixed hash of the id), so a partition holds every fetch
of its ids and is deduplicated alone: memory is one partition, not the catalogue. A
partition larger than the budget is split again by other bits, the same way.

Per id (:func:`resolve`), listings rank in a fixed order and the best-ranked fetch wins:
the unfiltered sweep first (one pass over the whole catalogue, so its copies agree with
each other), then ``sold``, ``pending``, ``available`` (statuses move forward more often
than back, so the copy under the later status is the likelier current one); within one
listing, the latest fetch (highest ``seq``). So an id listed twice with different contents
(a pet that changed during the export) gets the same winner whichever listing's thread
finished last; the report counts such ids and warns. A winning ghost is replaced by the
first stored row of the same id with the same hash (equal content), or, if there is none
(the pet changed, or no status listing saw it), named for recovery from the sweep's page.
Counts: ids seen under two status filters, and ids whose copies differ.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import numpy as np
import numpy.typing as npt

GHOST = -1  # the row of a key whose row was not stored
SWEEP_SOURCE = 0
PARTITION_BITS = 8  # 256 partitions per level; one byte per key (_partition_of)
PARTITIONS = 1 << PARTITION_BITS
MAX_LEVELS = 7  # 8 bits per level of a 64-bit mix: at most 7 splits below the first
_MIX = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing: spreads ids over the top bits

KEY_DTYPE = np.dtype(
    [("id", "<i8"), ("seq", "<i4"), ("source", "i1"), ("hash", "<i8"), ("row", "<i8")]
)
KEY_BYTES = KEY_DTYPE.itemsize  # 29
# Sorting a partition holds its keys, their order and a few per-key columns at once.
WORKING_FACTOR = 4
MIN_SPLIT_BYTES = 1 << 20  # a partition this small is deduplicated whole, whatever the budget
SPILL_NAME = "spilled"  # the keys past the budget, in the order they came
# Keys split at a time: larger pieces only hold more (a few bytes beside each key), the
# writes being few already.
SPLIT_KEYS = 1 << 16

IntArray = npt.NDArray[np.int64]
Keys = npt.NDArray[np.void]


@dataclass
class Resolution:
    """What deduplication found: winners, recoveries and counts, over every partition."""

    winners: list[IntArray] = field(default_factory=list)  # stored rows that win
    recover: list[Keys] = field(default_factory=list)  # winning ghosts with no stored twin
    ids: int = 0
    seen_under_two_statuses: int = 0
    conflicting: int = 0

    def add(self, other: Resolution) -> None:
        self.winners += other.winners
        self.recover += other.recover
        self.ids += other.ids
        self.seen_under_two_statuses += other.seen_under_two_statuses
        self.conflicting += other.conflicting


class KeyStore:
    """The keys of every fetched row, in memory up to ``budget`` bytes, else in partitions.

    Not thread-safe: the collector appends under its lock. Until the keys held (with what
    deduplicating them takes, :data:`WORKING_FACTOR` times as much) pass ``budget``, they
    stay in memory; then every chunk held, and every chunk appended after, is appended to
    the spill file of ``directory`` as it comes (a chunk is a batch of rows, so spilling
    never holds more than one extra chunk). Splitting the file by partition waits for
    :meth:`resolve`, a piece of :data:`SPLIT_KEYS` keys at a time (a few thousand writes in
    all, not 256 per batch). :attr:`spilled_bytes` is what went to disk while appending.
    """

    def __init__(self, directory: Path, budget: int, min_split: int = MIN_SPLIT_BYTES) -> None:
        self._directory = directory
        self._budget = max(budget, KEY_BYTES)
        self._min_split = min_split
        self._chunks: list[Keys] = []
        self._held = 0
        self._spill: BinaryIO | None = None  # open while spilling
        self._spilled = False
        self.rows = 0
        self.spilled_bytes = 0

    def append(self, keys: Keys) -> None:
        self.rows += len(keys)
        if self._spill is not None:
            self._write(keys)
            return
        self._chunks.append(keys)
        self._held += keys.nbytes
        if self._held * WORKING_FACTOR > self._budget:
            self._directory.mkdir(parents=True, exist_ok=True)
            self._spill = (self._directory / SPILL_NAME).open("ab")
            self._spilled = True
            chunks, self._chunks, self._held = self._chunks, [], 0
            while chunks:
                self._write(chunks.pop(0))

    def _write(self, keys: Keys) -> None:
        assert self._spill is not None
        self._spill.write(keys.tobytes())
        self.spilled_bytes += int(keys.nbytes)

    def close(self) -> None:
        """Close the spill file (the directory is the caller's to remove)."""
        if self._spill is not None:
            self._spill.close()
            self._spill = None

    def resolve(self, keep: npt.NDArray[np.bool_]) -> Resolution:
        """Deduplicate everything appended (call once, at the end): mark the winning stored
        rows in ``keep`` (one entry per stored row), partition by partition."""
        if not self._spilled:
            keys = _concatenate(self._chunks)
            self._chunks, self._held = [], 0
            return _marked(resolve(keys), keep)
        self.close()
        # The spill file is the level above the first: split by the first bits of the mix.
        return self._resolve_file(self._directory / SPILL_NAME, -1, keep)

    def _resolve_file(self, path: Path, level: int, keep: npt.NDArray[np.bool_]) -> Resolution:
        size = path.stat().st_size
        small = size * WORKING_FACTOR <= self._budget or size <= self._min_split
        if small or level >= MAX_LEVELS:
            keys = np.fromfile(path, dtype=KEY_DTYPE)
            path.unlink()
            return _marked(resolve(keys), keep)
        # Too big for the budget: split it by the next bits of the mix, a piece at a time.
        prefix = path.name + "-"
        step = max(min(self._budget // (WORKING_FACTOR * KEY_BYTES), SPLIT_KEYS), 1)
        files = _Files(self._directory, prefix)
        try:
            with path.open("rb") as source:
                while len(keys := np.fromfile(source, dtype=KEY_DTYPE, count=step)):
                    _partition_into(keys, files, level + 1)
        finally:
            files.close()
        path.unlink()
        parts = list(_partition_files(self._directory, prefix))
        # One id fetched many times cannot be split: then the one part is resolved whole.
        deeper = level + 1 if len(parts) > 1 else MAX_LEVELS
        result = Resolution()
        for part in parts:
            result.add(self._resolve_file(part, deeper, keep))
        return result


def _marked(result: Resolution, keep: npt.NDArray[np.bool_]) -> Resolution:
    """Mark the result's winners in ``keep`` and drop them: memory stays one partition's."""
    for rows in result.winners:
        keep[rows] = True
    result.winners.clear()
    return result


def _concatenate(chunks: list[Keys]) -> Keys:
    return np.concatenate(chunks) if chunks else np.zeros(0, dtype=KEY_DTYPE)


def _partition_of(ids: IntArray, level: int) -> npt.NDArray[np.uint8]:
    mixed = ids.view(np.uint64) * _MIX  # wraps modulo 2**64, as intended
    shift = np.uint64(64 - PARTITION_BITS * (level + 1))
    # One byte per key: numpy sorts bytes stably by radix, in linear time.
    return (mixed >> shift).astype(np.uint8)


class _Files:
    """The partition files of one level, opened for appending when first written."""

    def __init__(self, directory: Path, prefix: str) -> None:
        self._directory = directory
        self._prefix = prefix
        self._open: dict[int, BinaryIO] = {}

    def write(self, part: int, data: bytes) -> None:
        handle = self._open.get(part)
        if handle is None:
            handle = self._open[part] = (self._directory / f"{self._prefix}{part:03d}").open("ab")
        handle.write(data)

    def close(self) -> None:
        for handle in self._open.values():
            handle.close()
        self._open.clear()


def _partition_into(keys: Keys, files: _Files, level: int) -> None:
    """Append each key to the file of its partition at ``level``."""
    parts = _partition_of(keys["id"], level)
    order = np.argsort(parts, kind="stable")
    # Gathered as rows of bytes: numpy moves a packed record of this dtype field by field,
    # several times slower.
    ordered = np.ascontiguousarray(keys).view(np.uint8).reshape(-1, KEY_BYTES).take(order, axis=0)
    bounds = np.zeros(PARTITIONS + 1, dtype=np.intp)
    np.cumsum(np.bincount(parts, minlength=PARTITIONS), out=bounds[1:])
    for part in np.flatnonzero(bounds[1:] > bounds[:-1]).tolist():
        files.write(part, ordered[bounds[part] : bounds[part + 1]].tobytes())


def _partition_files(directory: Path, prefix: str) -> Iterator[Path]:
    for part in range(PARTITIONS):
        path = directory / f"{prefix}{part:03d}"
        if path.exists():
            yield path


def resolve(keys: Keys) -> Resolution:
    """Deduplicate keys that hold every fetch of their ids (all keys, or one partition)."""
    count = len(keys)
    if not count:
        return Resolution()
    ids = keys["id"]
    seqs = keys["seq"]
    # Rows of one id together, the winner first: the best-ranked listing (the sweep, then
    # the statuses from the last), then its latest fetch (lexsort's last key is primary).
    listed = keys["source"].astype(np.int16)
    rank = np.where(listed == SWEEP_SOURCE, np.int16(-128), -listed)
    order = np.lexsort((-seqs.astype(np.int64), rank, ids))
    sorted_ids = ids[order]
    first = np.empty(count, dtype=bool)
    first[0] = True
    np.not_equal(sorted_ids[1:], sorted_ids[:-1], out=first[1:])
    starts = np.flatnonzero(first)

    sources = keys["source"][order]
    two_statuses = _seen_under_two_statuses(sources, starts)
    del sources
    hashes = keys["hash"][order]
    conflicting = _conflicting_ids(hashes, sorted_ids, first)
    rows = keys["row"][order]

    winner_rows = rows[starts]
    ghosts = np.flatnonzero(winner_rows == GHOST)
    recover: list[Keys] = []
    if len(ghosts):
        # The latest stored row with the winning hash stands in for a winning ghost.
        group = np.cumsum(first) - 1  # each sorted key's group number
        winning_hash = hashes[starts][group]
        candidate = (rows != GHOST) & (hashes == winning_hash)
        position = np.where(candidate, np.arange(count), count)
        twin = np.minimum.reduceat(position, starts)
        ghost_twins = twin[ghosts]
        found = ghost_twins < count
        winner_rows[ghosts[found]] = rows[ghost_twins[found]]
        missing = ghosts[~found]
        if len(missing):
            recover.append(keys[order[starts[missing]]])
        winner_rows = winner_rows[winner_rows != GHOST]
    return Resolution([winner_rows], recover, len(starts), two_statuses, conflicting)


def _seen_under_two_statuses(sources: npt.NDArray[np.int8], starts: npt.NDArray[np.intp]) -> int:
    """Ids listed under two or more status filters (they moved while the export ran).

    The sweep lists every pet again by design, so only filtered listings count: per id
    group, the smallest and largest filtered source differ exactly when there are two.
    """
    filtered = sources != SWEEP_SOURCE
    low = np.minimum.reduceat(np.where(filtered, sources, np.int8(127)), starts)
    high = np.maximum.reduceat(np.where(filtered, sources, np.int8(-1)), starts)
    return int(np.count_nonzero((high >= 0) & (low != high)))


def _conflicting_ids(hashes: IntArray, sorted_ids: IntArray, first: npt.NDArray[np.bool_]) -> int:
    """Ids fetched more than once whose copies differ in name, categoryId or status.

    Within an id's rows any difference shows between two neighbours, so comparing each
    row with the one before it (when both have the same id) finds every conflicting id.
    """
    differs = ~first[1:] & (hashes[1:] != hashes[:-1])
    return int(len(np.unique(sorted_ids[1:][differs])))


def make_keys(
    ids: Sequence[int] | IntArray,
    seq: Sequence[int] | npt.NDArray[np.int32],
    source: int,
    hashes: Sequence[int],
    rows: IntArray | None,
) -> Keys:
    """Keys of one batch of rows of ``source``; ``rows`` None makes them ghosts."""
    keys = np.empty(len(ids), dtype=KEY_DTYPE)
    keys["id"] = ids
    keys["seq"] = seq
    keys["source"] = source
    keys["hash"] = hashes
    keys["row"] = GHOST if rows is None else rows
    return keys
