"""The collector's scratch area: the file of stored rows, the sweep's pages, spilled keys.

Rows are appended to an Arrow IPC file (:data:`ROWS_NAME`) as record batches of
:data:`SCRATCH_SCHEMA`: the snapshot's columns and one more, each row's fields beyond the
interface's as JSON text (null for a row without any: every row of the usual catalogue).
The sweep's pages that hold ghosts are kept as received (:class:`SweepPages`), so a ghost
can be rebuilt from its page (into :data:`REBUILT_NAME`); the keys spill under
:data:`KEYS_DIR` (:mod:`petsync.export.id_keys`).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from petsync.core.arrow_arrays import int64_array, string_array
from petsync.formats.schema import PET_SCHEMA

ROWS_NAME = "rows.arrow"
REBUILT_NAME = "rebuilt.arrow"
SWEEP_PAGES_NAME = "sweep-pages.json"
KEYS_DIR = "keys"
WRITE_BUFFER = 1 << 20  # the sweep's pages are written in pieces of 1 MiB, not one by one
EXTRAS_COLUMN = "__extra_fields"  # scratch only: each row's extra fields as JSON text
SCRATCH_SCHEMA: pa.Schema = PET_SCHEMA.append(pa.field(EXTRAS_COLUMN, pa.string()))


def scratch_batch(
    ids: Sequence[int] | npt.NDArray[np.int64],
    names: Sequence[str],
    categories: Sequence[int] | npt.NDArray[np.int64],
    statuses: Sequence[str | None],
    extras: Sequence[str | None] | None,
) -> pa.RecordBatch:
    """Columns as an Arrow record batch of the scratch schema (ids are exact: every one
    passed the int64 check). Integer columns already in numpy are used as they are."""
    return pa.record_batch(
        [
            int64_array(np.asarray(ids, dtype=np.int64)),
            string_array(names),
            int64_array(np.asarray(categories, dtype=np.int64)),
            string_array(statuses),
            pa.nulls(len(ids), pa.string()) if extras is None else string_array(extras),
        ],
        schema=SCRATCH_SCHEMA,
    )


class SweepPages:
    """The sweep's pages that hold ghosts, as received, in a scratch file (one thread)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._handle: BinaryIO | None = None
        self._seqs = array("q")
        self._offsets = array("q")
        self._end = 0

    def add(self, seq: int, body: bytes | bytearray) -> None:
        if self._handle is None:  # a page (about 10 KB) passes the default 8 KiB buffer
            self._handle = self.path.open("wb", buffering=WRITE_BUFFER)
        self._handle.write(body)
        self._seqs.append(seq)
        self._offsets.append(self._end)
        self._end += len(body)

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    @property
    def size(self) -> int:
        return self._end

    def bodies(self, seqs: Sequence[int]) -> Iterator[tuple[int, bytes]]:
        """The bodies of the pages ``seqs`` (sorted), read back one at a time."""
        self.close()
        known = np.frombuffer(self._seqs, dtype=np.int64) if self._seqs else np.zeros(0, "q")
        ends = np.append(np.frombuffer(self._offsets, dtype=np.int64)[1:], self._end)
        with self.path.open("rb") as source:
            for seq in seqs:
                index = int(np.searchsorted(known, seq))
                start = self._offsets[index]
                source.seek(start)
                yield seq, source.read(int(ends[index]) - start)
