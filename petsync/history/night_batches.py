"""One night's pets for the history: read a batch at a time and handed on in id order.

A Parquet snapshot (a partition's ``pets.parquet``, local or on an object store) is read in
batches of :data:`READ_ROWS` rows, only the snapshot schema's columns. An export stores
its listings' pages as they came, so the file is made of runs each in id order. First the
``id`` column alone is read to find them:

- a file of at most :data:`MAX_RUNS` runs (listing after listing, or sorted) is read by one
  reader per run, each going through its rows in order, and the runs merged as they are
  read: nothing written, memory one batch per run;
- any other file (listings' pages interleaved, or any order at all) is read once and put in
  id order by :func:`petsync.history.id_order.in_id_order` (runs sorted in memory, spilled
  to a scratch folder, merged).

Either way memory stays flat in the catalogue's size. The footer must name the manifest's
run, as for :func:`petsync.formats.snapshots.read_table`; on an object store the object must
also be the one the read began with (same size and time): a night exported again while it
was read is an error, never a mix.

A night of a Delta or Iceberg table is streamed by its library a batch at a time, in
whatever order its files hold, and put in id order the same way; memory stays flat there too.
"""

from __future__ import annotations

import bisect
import contextlib
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from petsync.core.arrow_arrays import to_numpy
from petsync.core.errors import InputError
from petsync.formats.registry import format_of_manifest
from petsync.formats.schema import COLUMNS, conform
from petsync.history.id_order import in_id_order, merge_sorted
from petsync.history.status_codes import NIGHT_SCHEMA, StatusCodes, bare_codes, coded_table
from petsync.storage.layout import RUN_ID_KEY, SnapshotInfo
from petsync.storage.location import parse_location

if TYPE_CHECKING:
    import pyarrow.fs as pafs
    import pyarrow.parquet as pq

READ_ROWS = 1 << 16  # rows decoded from the snapshot at a time
# Every reader reads one row group at a time: pyarrow pre-buffers (reads in one request per
# row group, on an object store) every row group a read asks for and keeps it until the
# next read, so a read of the whole file would end up holding all of it.
MAX_RUNS = 16  # runs in id order read side by side, each by its own reader


@contextlib.contextmanager
def night_pieces(
    info: SnapshotInfo, statuses: StatusCodes | None = None
) -> Iterator[Iterator[pa.Table]]:
    """The night's pets (the snapshot schema's columns, status coded by ``statuses``, else
    by a list of its own) as tables in id order.

    A scratch folder the runs may spill to lives in the system's temporary directory
    (``TMPDIR``) until the block ends.

    >>> with night_pieces(info) as pieces:                       # doctest: +SKIP
    ...     pets = sum(piece.num_rows for piece in pieces)
    """
    statuses = statuses or StatusCodes()
    kind = format_of_manifest(info.manifest)
    if kind.reads_whole:  # a table's night, streamed by its library in no set order
        with tempfile.TemporaryDirectory(prefix="petsync-history-") as scratch:
            rows = (
                bare_codes(batch)
                for piece in kind.night_batches(info)
                for batch in coded_table(piece, statuses).to_batches()
            )
            yield (statuses.named(piece) for piece in in_id_order(rows, Path(scratch)))
        return
    night = _Night.open(info)
    with contextlib.ExitStack() as stack:
        yield _in_id_order(night, stack, statuses)


def _in_id_order(
    night: _Night, stack: contextlib.ExitStack, statuses: StatusCodes
) -> Iterator[pa.Table]:
    """The night's pieces in id order, then the check that the object read is still the one
    opened. Its runs are found at the first piece asked for: on the thread that reads
    ahead, while the open versions are read on another."""
    runs = night.runs()
    if runs is not None:
        streams = [night.rows(start, stop, stack, statuses) for start, stop in runs]
        yield from merge_sorted(streams, NIGHT_SCHEMA)
    else:  # spilled as bare codes: a scratch file holds one dictionary, and statuses grow
        scratch = stack.enter_context(tempfile.TemporaryDirectory(prefix="petsync-history-"))
        rows = (bare_codes(batch) for batch in night.rows(0, night.num_rows, stack, statuses))
        yield from (statuses.named(piece) for piece in in_id_order(rows, Path(scratch)))
    night.unchanged()


@dataclass
class _Night:
    """A snapshot's Parquet file, opened as many times as it is read side by side."""

    info: SnapshotInfo
    open_file: Callable[[bool], pq.ParquetFile]  # True: the status column as a dictionary
    unchanged: Callable[[], None]
    num_rows: int
    group_starts: list[int]  # the first row of each row group

    @classmethod
    def open(cls, info: SnapshotInfo) -> _Night:
        import pyarrow.parquet as pq

        shown = info.parquet_path
        unchanged: Callable[[], None] = _nothing  # a local file stays the one opened
        try:
            from petsync.storage.filesystem import open_filesystem

            # A local file too is opened through the store's file system: it proves the
            # file a regular one first (a FIFO planted there would block for ever).
            location = parse_location(
                shown.absolute() if isinstance(shown, Path) else shown, what="snapshot"
            )
            filesystem = open_filesystem(location)
            if not isinstance(shown, Path):
                unchanged = _unchanged_check(info, filesystem, location.store_path)

            def open_file(coded: bool = False) -> pq.ParquetFile:
                return pq.ParquetFile(
                    filesystem.open_input_file(location.store_path),
                    pre_buffer=True,
                    read_dictionary=["status"] if coded else None,
                )

            with open_file(False) as handle:
                schema, metadata = handle.schema_arrow, handle.metadata
        except (OSError, ValueError) as exc:
            raise InputError(f"cannot read {shown}: {exc}") from exc
        footer = (schema.metadata or {}).get(RUN_ID_KEY)
        if info.run_id is not None and (footer or b"").decode("utf-8", "replace") != info.run_id:
            raise _replaced(info)
        missing = [name for name in COLUMNS if name not in schema.names]
        if missing:
            raise InputError(f"cannot read {shown}: table lacks the column(s) {', '.join(missing)}")
        starts = [0]
        for group in range(metadata.num_row_groups):
            starts.append(starts[-1] + metadata.row_group(group).num_rows)
        return cls(info, open_file, unchanged, starts[-1], starts[:-1])

    def runs(self) -> list[tuple[int, int]] | None:
        """The file's runs in id order as row ranges, from its ``id`` column alone; None
        when there are more than :data:`MAX_RUNS` (or ids a full read must judge)."""
        starts = [0]
        last: int | None = None
        position = 0
        try:
            with self.open_file(False) as handle:
                for batch in _batches(handle, range(len(self.group_starts)), 1 << 20, ["id"]):
                    column = batch.column(0)
                    if column.type != pa.int64() or column.null_count:
                        return None  # conform() casts or refuses it, with the file's name
                    ids = to_numpy(column)
                    if not len(ids):
                        continue
                    falls = np.flatnonzero(ids[1:] < ids[:-1]) + 1
                    if last is not None and ids[0] < last:
                        starts.append(position)
                    starts.extend((falls + position).tolist())
                    if len(starts) > MAX_RUNS:
                        return None
                    last = int(ids[-1])
                    position += len(ids)
        except (OSError, ValueError) as exc:
            raise InputError(f"cannot read {self.info.parquet_path}: {exc}") from exc
        return list(zip(starts, [*starts[1:], position], strict=True))

    def rows(
        self,
        start: int,
        stop: int,
        stack: contextlib.ExitStack,
        statuses: StatusCodes | None = None,
    ) -> Iterator[pa.RecordBatch]:
        """The rows ``[start, stop)`` as conformed batches, read by a reader of their own;
        with ``statuses``, the status column read as the file stores it and coded."""
        if start >= stop:
            return
        first = bisect.bisect_right(self.group_starts, start) - 1
        last = bisect.bisect_left(self.group_starts, stop)
        shown = self.info.parquet_path
        try:
            handle = stack.enter_context(self.open_file(statuses is not None))
            batches = _batches(handle, range(first, last), READ_ROWS, list(COLUMNS))
            position = self.group_starts[first]
            for batch in batches:
                low, high = max(start - position, 0), min(stop - position, batch.num_rows)
                position += batch.num_rows
                if high > low:
                    table = pa.Table.from_batches([batch.slice(low, high - low)])
                    table = table.replace_schema_metadata(None)
                    if statuses is None:
                        yield from conform(table).to_batches()
                    else:
                        yield from _conform_coded(table, statuses).to_batches()
                if position >= stop:
                    break
        except (OSError, ValueError) as exc:
            raise InputError(f"cannot read {shown}: {exc}") from exc


def _conform_coded(table: pa.Table, statuses: StatusCodes) -> pa.Table:
    """:func:`conform`'s checks and types, the status column coded instead of decoded."""
    index = table.schema.get_field_index("status")
    status = table.column(index)
    plain = conform(table.set_column(index, "status", pa.nulls(len(table), pa.string())))
    index = plain.schema.get_field_index("status")
    return coded_table(plain.set_column(index, "status", status), statuses)


def _batches(
    handle: pq.ParquetFile, groups: range, size: int, columns: list[str]
) -> Iterator[pa.RecordBatch]:
    """The row groups' batches, read one row group at a time (see :data:`READ_ROWS`), each
    decoded on the calling thread: the night's readers already run beside the fold."""
    for group in groups:
        yield from handle.iter_batches(
            batch_size=size, row_groups=[group], columns=columns, use_threads=False
        )


def _nothing() -> None:
    return None


def _unchanged_check(
    info: SnapshotInfo, filesystem: pafs.FileSystem, path: str
) -> Callable[[], None]:
    """A check, run after the last batch, that an object store's object is still the one
    whose ranges were read (same size and time): not replaced by a night exported again."""
    import pyarrow.fs as pafs

    def stamp() -> tuple[object, object]:
        try:
            found = filesystem.get_file_info(path)
        except OSError as exc:
            raise InputError(f"cannot read {info.parquet_path}: {exc}") from exc
        if found.type != pafs.FileType.File:
            raise _replaced(info)
        return found.size, found.mtime

    before = stamp()

    def check() -> None:
        if stamp() != before:
            raise _replaced(info)

    return check


def _replaced(info: SnapshotInfo) -> InputError:
    return InputError(
        f"the snapshot of {info.date} at {info.path} was replaced while it was read; "
        "run the history again"
    )
