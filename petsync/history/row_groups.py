"""Pieces of any size written as row groups of one size, each encoded on a thread of its own.

A night's fold hands on its open versions in blocks of whatever size the two streams cut
(:func:`petsync.history.fold.fold_night`). :func:`row_group_sink` gathers them into row
groups of a fixed number of rows, so the open file is made of even row groups, and
encodes each on a thread of its own (pyarrow releases the GIL there) while the next
pieces are folded: one row group waits at most.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

import pyarrow as pa

if TYPE_CHECKING:
    import pyarrow.parquet as pq


@contextlib.contextmanager
def row_group_sink(
    writer: pq.ParquetWriter, schema: pa.Schema, rows: int, release_every: int
) -> Iterator[Callable[[pa.Table], None]]:
    """A sink writing pieces (of ``schema``) through ``writer`` in row groups of ``rows``.

    Every ``release_every`` row groups, memory the allocator keeps is handed back to the
    system. The rows left over are written when the block ends without an error; the
    writer is closed by its owner.
    """
    pending: list[Future[None]] = []
    gathered: list[pa.Table] = []
    written = itertools.count(1)

    def encode(group: pa.Table, release: bool) -> None:
        writer.write_table(group.cast(schema).unify_dictionaries(), row_group_size=rows)
        if release:
            # Pieces are made on some threads and freed on others: the allocator keeps
            # what they free until asked, and RSS would creep up all night.
            pa.default_memory_pool().release_unused()

    def flush(group: pa.Table) -> None:
        if pending:
            pending.pop().result()
        release = next(written) % release_every == 0
        pending.append(worker.submit(encode, group, release))

    def write(piece: pa.Table) -> None:
        if not piece.num_rows:
            return
        gathered.append(piece)
        if sum(p.num_rows for p in gathered) < rows:
            return
        table = pa.concat_tables(gathered)
        gathered.clear()
        while table.num_rows >= rows:
            flush(table.slice(0, rows))
            table = table.slice(rows)
        if table.num_rows:
            gathered.append(table)

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="history-writer") as worker:
        try:
            yield write
            if gathered:
                flush(pa.concat_tables(gathered))
            if pending:
                pending.pop().result()
        finally:
            for left in pending:
                left.cancel()
                with contextlib.suppress(BaseException):
                    left.result()
