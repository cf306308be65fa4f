"""Collect listed pets on disk, spilling to a scratch directory, and deduplicate them by id.

Pages arrive from several listings at once (one per status plus the unfiltered sweep). Each
listing appends its pets' columns to plain Python lists, turned into an Arrow record batch
every :data:`BATCH_ROWS` rows and appended to a scratch Arrow IPC file. What stays per
fetched row are five keys (29 bytes, see :mod:`petsync.export.id_keys`), kept within the
memory budget and spilled to the scratch directory beyond it, never a list of a million
``Pet`` objects or a DataFrame of dicts.

The unfiltered sweep fetches every pet again, but a pet it lists under a status that a
status listing also covers is stored as keys only (a *ghost*: its id, page and hash), and
the page's JSON goes to a scratch file as received: the sweep builds and stores rows only
for pets the status listings cannot have seen (no status, an unknown one, a status not
listed). :meth:`PetCollector.finish` deduplicates on the keys, latest fetch wins: a winning
ghost is written as the stored row of the same id with the same hash (the same content),
and only a ghost with no such twin (the pet changed, or its status listing missed it) is
rebuilt from its page. :meth:`Deduplicated.write` then streams the winners into Parquet and
CSV. Rows are written in the order they were stored, then the rebuilt ones; not sorted.

Only the pages' bookkeeping lives here: the scratch files are :mod:`petsync.export.scratch`,
the keys' deduplication :mod:`petsync.export.id_keys`, and the winners and their writing
:mod:`petsync.export.winning_rows`.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Collection, Iterable, Iterator
from itertools import compress
from operator import not_
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from petsync.client.records import PetColumns, typed_records
from petsync.core.models import STATUS_VALUES, Pet, PetStatus
from petsync.export.id_keys import SWEEP_SOURCE, Keys, KeyStore, make_keys
from petsync.export.scratch import (
    KEYS_DIR,
    REBUILT_NAME,
    ROWS_NAME,
    SCRATCH_SCHEMA,
    SWEEP_PAGES_NAME,
    SweepPages,
    scratch_batch,
)
from petsync.export.winning_rows import Deduplicated

BATCH_ROWS = 16_384  # per listing: bounds the Python objects held between batches
UNLIMITED = 2**62  # a memory budget that never spills

# Listing sources are small integers: 0 (id_keys.SWEEP_SOURCE) is the unfiltered sweep, 1.. the
# statuses in interface order.
_SOURCE_STATUS: tuple[str | None, ...] = (None, *STATUS_VALUES)


def source_of(status: PetStatus | None) -> int:
    """The source number of the listing for ``status`` (None: the sweep)."""
    return SWEEP_SOURCE if status is None else _SOURCE_STATUS.index(status.value)


def _hashes(columns: PetColumns) -> Iterator[int]:
    """A hash over every field of each row (tuples hashed in C): two fetches of one id with
    equal hashes have (all but surely: 64 bits, keyed per process) the same content.
    A row's extra fields count when it has some; a row without any hashes as it always did."""
    rows = zip(columns.ids, columns.names, columns.categories, columns.statuses, strict=True)
    if columns.extras is None:
        return map(hash, rows)
    return (
        hash(row) if extra is None else hash((*row, extra))
        for row, extra in zip(rows, columns.extras, strict=True)
    )


class _PageRuns:
    """The seq of each row of a batch, as one (seq, rows) pair per page."""

    def __init__(self) -> None:
        self._seqs: list[int] = []
        self._rows: list[int] = []

    def add(self, seq: int, rows: int) -> None:
        self._seqs.append(seq)
        self._rows.append(rows)

    def seqs(self) -> npt.NDArray[np.int32]:
        return np.repeat(np.array(self._seqs, dtype=np.int32), self._rows)


class _Buffer:
    """One listing's rows not yet turned into a record batch (used by one thread).

    Each column is extended by a page's list in one C call, and each integer column becomes
    numpy once per batch, for the scratch file and the keys alike; a page's seq is kept
    once with its count of rows, repeated in numpy.
    """

    def __init__(self, source: int) -> None:
        self.source = source
        self.expected = _SOURCE_STATUS[source]
        self.mismatches = 0
        self.fetched = 0  # the listing's pages so far: the seq of its latest
        self.reset()

    def reset(self) -> None:
        self.ids: list[int] = []
        self.names: list[str] = []
        self.categories: list[int] = []
        self.statuses: list[str | None] = []
        self.extras: list[str | None] | None = None  # None while no row had extra fields
        self.hashes: list[int] = []
        self.pages = _PageRuns()
        self.ghost_ids: list[int] = []
        self.ghost_hashes: list[int] = []
        self.ghost_pages = _PageRuns()

    def add(self, pets: PetColumns, seq: int, hashes: Iterable[int] | None = None) -> None:
        statuses = pets.statuses
        self.hashes.extend(_hashes(pets) if hashes is None else hashes)
        if pets.extras is not None and self.extras is None:
            self.extras = [None] * len(self.ids)
        if self.extras is not None:
            self.extras.extend(pets.extras or itertools.repeat(None, len(pets)))
        self.ids.extend(pets.ids)
        self.names.extend(pets.names)
        self.categories.extend(pets.categories)
        self.statuses.extend(statuses)
        self.pages.add(seq, len(pets))
        if self.expected is not None:
            # Listed under status=X but the body says otherwise: the body wins, counted.
            self.mismatches += len(statuses) - statuses.count(self.expected)

    def add_ghosts(self, ids: Iterable[int], hashes: Iterable[int], seq: int) -> None:
        before = len(self.ghost_ids)
        self.ghost_ids.extend(ids)
        self.ghost_hashes.extend(hashes)
        self.ghost_pages.add(seq, len(self.ghost_ids) - before)

    def full(self, rows: int) -> bool:
        return len(self.ids) >= rows or len(self.ghost_ids) >= rows

    def __len__(self) -> int:
        return len(self.ids)


class PetCollector:
    """Thread-safe sink for the pages of several listings, spilling to ``scratch``.

    ``memory_budget`` bounds the bytes of keys held in memory (beyond it they go to
    ``scratch``); ``listed_statuses`` are the statuses the run lists with a filter, whose
    pets the sweep keeps as keys only (see the module docstring).

    >>> import tempfile, pathlib
    >>> collector = PetCollector(pathlib.Path(tempfile.mkdtemp()))
    >>> collector.add(source_of(None), [Pet(1, "Rex", 7, "sold")])
    >>> collector.add(source_of(PetStatus.SOLD), [Pet(1, "Rex", 7, "sold")])
    >>> collector.finish().pets
    1
    """

    def __init__(
        self,
        scratch: Path,
        batch_rows: int = BATCH_ROWS,
        *,
        memory_budget: int = UNLIMITED,
        listed_statuses: Collection[str] = (),
    ) -> None:
        scratch.mkdir(parents=True, exist_ok=True)
        self._scratch = scratch
        self._batch_rows = batch_rows
        self._listed = frozenset(listed_statuses)
        self._lock = threading.Lock()
        self._buffers: dict[int, _Buffer] = {}
        self._keys = KeyStore(scratch / KEYS_DIR, memory_budget)
        self._sweep_pages = SweepPages(scratch / SWEEP_PAGES_NAME)
        self._spill_path = scratch / ROWS_NAME
        self._writer = pa.ipc.new_file(str(self._spill_path), SCRATCH_SCHEMA)
        self.saw_extra_fields = False
        self._rows = 0
        self._spilled_bytes = 0
        self._closed = False

    def add(
        self, source: int, pets: PetColumns | list[Pet], body: bytes | bytearray | None = None
    ) -> None:
        """Append one page of ``source``. Pages of one source must come from one thread.

        ``body`` is the page's JSON when ``pets`` is exactly what the typed decoder reads
        from it (:attr:`~petsync.client.listing.Page.body`): only then may sweep rows be
        kept as ghosts, rebuilt from it if needed.
        """
        if isinstance(pets, list):
            pets = PetColumns.of(pets)
        if not pets:
            return
        buffer = self._buffers.get(source)
        if buffer is None:  # the listing's first page
            with self._lock:
                buffer = self._buffers.setdefault(source, _Buffer(source))
        # Numbered per listing, by the listing's own thread: no lock a page. The listings'
        # threads met at a shared counter's lock on about every other page, each meeting a
        # hand-over of the interpreter; only a listing's own order decides which fetch wins.
        buffer.fetched += 1
        seq = buffer.fetched
        hashes = None
        if source == SWEEP_SOURCE and body is not None and self._listed:
            pets, hashes = self._add_ghosts(buffer, pets, body, seq)
        if len(pets):
            if pets.extras is not None:
                self.saw_extra_fields = True
            buffer.add(pets, seq, hashes)
        if buffer.full(self._batch_rows):
            self._spill(buffer)

    def _add_ghosts(
        self, buffer: _Buffer, pets: PetColumns, body: bytes | bytearray, seq: int
    ) -> tuple[PetColumns, list[int] | None]:
        """Keep the sweep's pets of listed statuses as ghosts; return the others (with their
        hashes when they were computed here: the page's rows are hashed once)."""
        ghost = list(map(self._listed.__contains__, pets.statuses))
        if True not in ghost:
            return pets, None
        self._sweep_pages.add(seq, body)
        if False not in ghost:
            buffer.add_ghosts(pets.ids, _hashes(pets), seq)
            return PetColumns.empty(), None
        hashes = list(_hashes(pets))
        buffer.add_ghosts(compress(pets.ids, ghost), compress(hashes, ghost), seq)
        kept = list(map(not_, ghost))
        return pets.where(kept), list(compress(hashes, kept))

    def _spill(self, buffer: _Buffer) -> None:
        batch = None
        ids = np.array(buffer.ids, dtype=np.int64)  # once, for the batch and the keys
        if len(buffer):
            batch = scratch_batch(
                ids, buffer.names, buffer.categories, buffer.statuses, buffer.extras
            )
        stored = (ids, buffer.pages.seqs(), buffer.hashes)
        ghosts = (buffer.ghost_ids, buffer.ghost_pages.seqs(), buffer.ghost_hashes)
        buffer.reset()
        with self._lock:
            if batch is not None:
                rows = np.arange(self._rows, self._rows + batch.num_rows, dtype=np.int64)
                self._writer.write_batch(batch)
                self._rows += batch.num_rows
                self._keys.append(make_keys(*stored[:2], buffer.source, stored[2], rows))
            if ghosts[0]:
                self._keys.append(make_keys(*ghosts[:2], buffer.source, ghosts[2], None))

    def finish(self) -> Deduplicated:
        """Deduplicate everything added so far (call once, after every listing ended)."""
        for buffer in list(self._buffers.values()):
            self._spill(buffer)
        with self._lock:
            self._close_writer()
            mismatches = sum(b.mismatches for b in self._buffers.values())
        keep = np.zeros(self._rows, dtype=bool)
        resolution = self._keys.resolve(keep)
        rebuilt_path, rebuilt = self._rebuild(resolution.recover)
        scratch_bytes = self.scratch_bytes
        if rebuilt_path is not None:
            scratch_bytes += rebuilt_path.stat().st_size
        return Deduplicated(
            spill_path=self._spill_path,
            keep=keep,
            rows_fetched=self._keys.rows,
            seen_under_two_statuses=resolution.seen_under_two_statuses,
            conflicting_duplicates=resolution.conflicting,
            status_mismatches=mismatches,
            rebuilt_path=rebuilt_path,
            rebuilt=rebuilt,
            scratch_bytes=scratch_bytes,
            has_extra_fields=self.saw_extra_fields,
        )

    @property
    def scratch_bytes(self) -> int:
        """Bytes written to the scratch area so far: rows, sweep pages, spilled keys."""
        rows = self._spill_path.stat().st_size if self._spill_path.exists() else 0
        return rows + self._sweep_pages.size + self._keys.spilled_bytes

    def _rebuild(self, recover: list[Keys]) -> tuple[Path | None, int]:
        """Rows for winning ghosts without a stored twin, from their sweep pages."""
        if not recover:
            self._sweep_pages.close()
            return None, 0
        keys = np.concatenate(recover)
        keys = keys[np.argsort(keys["seq"], kind="stable")]
        path = self._scratch / REBUILT_NAME
        wanted_seqs = keys["seq"]
        count = 0
        with pa.ipc.new_file(str(path), SCRATCH_SCHEMA) as writer:
            for seq, body in self._sweep_pages.bodies(np.unique(wanted_seqs).tolist()):
                records = typed_records(body)
                assert records is not None  # it was decoded by the typed decoder before
                columns = records.columns
                low, high = np.searchsorted(wanted_seqs, [seq, seq + 1])
                wanted = dict(
                    zip(keys["id"][low:high].tolist(), keys["hash"][low:high].tolist(), strict=True)
                )
                take = [
                    wanted.get(i) == h for i, h in zip(columns.ids, _hashes(columns), strict=True)
                ]
                rows = columns.where(take)
                count += len(rows)
                writer.write_batch(
                    scratch_batch(rows.ids, rows.names, rows.categories, rows.statuses, rows.extras)
                )
        self._sweep_pages.close()
        return path, count

    def close(self) -> None:
        """Close the scratch files if :meth:`finish` was never reached (a failed run)."""
        with self._lock:
            self._close_writer()
            self._sweep_pages.close()
            self._keys.close()

    def _close_writer(self) -> None:
        if not self._closed:
            self._closed = True
            self._writer.close()
