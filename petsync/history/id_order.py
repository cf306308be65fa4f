"""Record batches put in id order within bounded memory: sorted runs, spilled, then merged.

A night's pets arrive in the order the export stored them: each listing's pages in the
server's order, the listings' batches interleaved. :func:`in_id_order` turns any such
stream into tables in id order without holding the night: it sorts :data:`RUN_ROWS` rows
at a time into a *run*, appends each run to one scratch Arrow IPC file (uncompressed) in batches of
:data:`MERGE_ROWS`, and then merges the runs, holding one batch of each. A night that fits
in one run is sorted in memory and never touches the disk.

Memory is one run while sorting and ``runs x MERGE_ROWS`` rows while merging (at
20,000,000 pets: 39 runs, 320,000 rows), whatever the order the rows came in; the scratch
file holds the night once, about 40 bytes a pet, and is removed with its folder.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from petsync.core.arrow_arrays import int64_array, to_numpy

RUN_ROWS = 1 << 19  # rows sorted in memory at a time (about 20 MiB of pets)
MERGE_ROWS = 1 << 13  # rows of each run held while merging
OUT_ROWS = 1 << 16  # the merge hands on pieces of at least this many rows (but the last)
SPILL_NAME = "night-runs.arrow"
SPILL_COMPRESSION: str | None = (
    None  # page cache speed: lz4 would halve the bytes for a third more CPU
)


def in_id_order(
    batches: Iterable[pa.RecordBatch], scratch: Path, *, run_rows: int | None = None
) -> Iterator[pa.Table]:
    """The rows of ``batches`` (one schema, an int64 ``id`` column), as tables in id order.

    Equal ids come out next to each other (the caller decides what a duplicate means).
    ``scratch`` is a folder the runs may be spilled to; nothing is written there when the
    rows fit in one run.
    """
    limit = run_rows or RUN_ROWS
    pending: list[pa.RecordBatch] = []
    pending_rows = 0
    spill: _Spill | None = None
    for batch in batches:
        if not batch.num_rows:
            continue
        pending.append(batch)
        pending_rows += batch.num_rows
        if pending_rows >= limit:
            spill = spill or _Spill(scratch / SPILL_NAME, batch.schema)
            spill.add(_sorted(pa.Table.from_batches(pending)))
            pending, pending_rows = [], 0
    if spill is None:  # one run: sorted in memory, no scratch file
        if pending:
            table = _sorted(pa.Table.from_batches(pending))
            yield from (pa.Table.from_batches([b]) for b in table.to_batches(OUT_ROWS))
        return
    if pending:
        spill.add(_sorted(pa.Table.from_batches(pending)))
    yield from spill.merged()


def _ids(values: pa.Table | pa.RecordBatch) -> npt.NDArray[np.int64]:
    return to_numpy(values.column("id"))


def _is_sorted(ids: npt.NDArray[np.int64]) -> bool:
    return len(ids) < 2 or bool(np.all(ids[1:] >= ids[:-1]))


def _sorted(table: pa.Table) -> pa.Table:
    """``table`` in id order (stable: a listing's runs are merged, not sorted afresh)."""
    ids = _ids(table)
    if _is_sorted(ids):
        return table
    return table.take(int64_array(np.argsort(ids, kind="stable")))


@dataclass
class _Cursor:
    """Where the merge is in one sorted stream: the batch held and the rows of it not yet
    handed on."""

    stream: Iterator[pa.RecordBatch]
    batch: pa.RecordBatch | None = None
    ids: npt.NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, np.int64))
    offset: int = 0

    def held(self) -> bool:
        """Whether rows are held, reading the stream's next batch if none are (False: done)."""
        while self.offset == len(self.ids):
            batch = next(self.stream, None)
            if batch is None:
                return False
            self.batch, self.ids, self.offset = batch, _ids(batch), 0
        return True


def merge_sorted(
    streams: Iterable[Iterator[pa.RecordBatch]], schema: pa.Schema
) -> Iterator[pa.Table]:
    """Streams of batches, each in id order, merged into tables in id order of at least
    :data:`OUT_ROWS` rows (but the last).

    Each step hands on, from every stream, the rows up to the smallest last id among the
    batches held: no row still to come can come before them. The stream that held that id
    is then done with its batch and reads its next. Memory: one batch of each stream, and
    the piece being handed on.
    """
    cursors = [_Cursor(stream) for stream in streams]
    slices: list[pa.RecordBatch] = []
    held = 0
    while True:
        live = [cursor for cursor in cursors if cursor.held()]
        if not live:
            break
        bound = min(int(c.ids[-1]) for c in live)
        for cursor in live:
            cut = int(np.searchsorted(cursor.ids[cursor.offset :], bound, side="right"))
            if cut:
                assert cursor.batch is not None
                slices.append(cursor.batch.slice(cursor.offset, cut))
                held += cut
                cursor.offset += cut
        if held >= OUT_ROWS:
            yield _sorted(_one_piece(slices, schema))
            slices, held = [], 0
    if slices:
        yield _sorted(_one_piece(slices, schema))


def _one_piece(slices: list[pa.RecordBatch], schema: pa.Schema) -> pa.Table:
    """The slices as one table; streams' dictionary columns (a coded status) may each have
    their own dictionary, brought to one first."""
    return pa.Table.from_batches(slices, schema=schema).unify_dictionaries()


class _Spill:
    """One scratch IPC file of sorted runs, written run by run, then merged."""

    def __init__(self, path: Path, schema: pa.Schema) -> None:
        self.path = path
        self.schema = schema
        self.runs: list[list[int]] = []  # each run's batches in the file, in id order
        self.count = 0  # batches written
        self.writer = pa.ipc.new_file(
            str(path), schema, options=pa.ipc.IpcWriteOptions(compression=SPILL_COMPRESSION)
        )

    def add(self, table: pa.Table) -> None:
        batches = table.combine_chunks().to_batches(MERGE_ROWS)
        for batch in batches:
            self.writer.write_batch(batch)
        self.runs.append(list(range(self.count, self.count + len(batches))))
        self.count += len(batches)

    def merged(self) -> Iterator[pa.Table]:
        """The runs merged (:func:`merge_sorted`), each read a batch at a time."""
        self.writer.close()
        with pa.OSFile(str(self.path), "rb") as source:  # read, not mapped: RSS stays ours
            reader = pa.ipc.open_file(source)
            streams = [(reader.get_batch(index) for index in run) for run in self.runs]
            yield from merge_sorted(streams, self.schema)
