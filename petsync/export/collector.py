"""Collect listed pets on disk, deduplicate them by id, and write them out as a stream.

Pages arrive from several listings at once (one per status plus the unfiltered sweep). Each
listing appends its pets' columns to plain Python lists, turned into an Arrow record batch
every :data:`BATCH_ROWS` rows and appended to a scratch Arrow IPC file. What stays per
fetched row are five keys (29 bytes, see :mod:`petsync.export.dedup`), kept within the
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

Fields beyond the interface's travel in the scratch rows as one more column, each row's
extra fields as JSON text (null for a row without any: every row of the usual catalogue).
Only when some row has them does :meth:`Deduplicated.tally_extra_fields` read that column
back, and :meth:`Deduplicated.write` turn the kept fields into typed columns after the
interface's (:mod:`petsync.export.extra_fields`).
"""

from __future__ import annotations

import itertools
import json
import threading
from array import array
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, TypeAlias, cast

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from petsync.client.records import PetColumns, typed_records
from petsync.core.models import STATUS_VALUES, Pet, PetStatus
from petsync.export.dedup import Keys, KeyStore, make_keys
from petsync.export.extra_fields import ARROW_TYPES, ColumnType, FieldTally, arrow_column
from petsync.export.schema import PET_SCHEMA

_OFFSET_MAX = 2**31 - 1  # Arrow string offsets are int32
BATCH_ROWS = 16_384  # per listing: bounds the Python objects held between batches
ROW_GROUP_ROWS = 131_072  # Parquet row groups of this size: big enough to scan fast
UNLIMITED = 2**62  # a memory budget that never spills

# Listing sources are small integers: 0 is the unfiltered sweep, 1.. the statuses in
# interface order.
SWEEP_SOURCE = 0
_SOURCE_STATUS: tuple[str | None, ...] = (None, *STATUS_VALUES)

BoolArray = npt.NDArray[np.bool_]
ROWS_NAME = "rows.arrow"
REBUILT_NAME = "rebuilt.arrow"
SWEEP_PAGES_NAME = "sweep-pages.json"
KEYS_DIR = "keys"
EXTRAS_COLUMN = "__extra_fields"  # scratch only: each row's extra fields as JSON text
SCRATCH_SCHEMA: pa.Schema = PET_SCHEMA.append(pa.field(EXTRAS_COLUMN, pa.string()))
Sink: TypeAlias = "Path | str | pa.NativeFile"  # where Deduplicated.write streams a file


def _sink(target: Sink) -> str | pa.NativeFile:
    return str(target) if isinstance(target, Path) else target


def source_of(status: PetStatus | None) -> int:
    """The source number of the listing for ``status`` (None: the sweep)."""
    return SWEEP_SOURCE if status is None else _SOURCE_STATUS.index(status.value)


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


def _hashes(columns: PetColumns) -> list[int]:
    """A hash over every field of each row (tuples hashed in C): two fetches of one id with
    equal hashes have (all but surely: 64 bits, keyed per process) the same content.
    A row's extra fields count when it has some; a row without any hashes as it always did."""
    rows = zip(columns.ids, columns.names, columns.categories, columns.statuses, strict=True)
    if columns.extras is None:
        return list(map(hash, rows))
    return [
        hash(row) if extra is None else hash((*row, extra))
        for row, extra in zip(rows, columns.extras, strict=True)
    ]


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
        self.extras: list[str | None] | None = None  # None while no row had extra fields
        self.seqs: list[int] = []
        self.hashes: list[int] = []
        self.ghost_ids: list[int] = []
        self.ghost_seqs: list[int] = []
        self.ghost_hashes: list[int] = []

    def add(self, pets: PetColumns, seq: int) -> None:
        statuses = pets.statuses
        self.hashes.extend(_hashes(pets))
        if pets.extras is not None and self.extras is None:
            self.extras = [None] * len(self.ids)
        if self.extras is not None:
            self.extras.extend(pets.extras or itertools.repeat(None, len(pets)))
        self.ids.extend(pets.ids)
        self.names.extend(pets.names)
        self.categories.extend(pets.categories)
        self.statuses.extend(statuses)
        self.seqs.extend(itertools.repeat(seq, len(pets)))
        if self.expected is not None:
            # Listed under status=X but the body says otherwise: the body wins, counted.
            self.mismatches += len(statuses) - statuses.count(self.expected)

    def add_ghosts(self, ids: list[int], hashes: list[int], seq: int) -> None:
        self.ghost_ids.extend(ids)
        self.ghost_hashes.extend(hashes)
        self.ghost_seqs.extend(itertools.repeat(seq, len(ids)))

    def full(self, rows: int) -> bool:
        return len(self.ids) >= rows or len(self.ghost_ids) >= rows

    def __len__(self) -> int:
        return len(self.ids)


class _SweepPages:
    """The sweep's pages that hold ghosts, as received, in a scratch file (one thread)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._handle: BinaryIO | None = None
        self._seqs = array("q")
        self._offsets = array("q")
        self._end = 0

    def add(self, seq: int, body: bytes | bytearray) -> None:
        if self._handle is None:
            self._handle = self.path.open("wb")
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
        self._seq = 0
        self._buffers: dict[int, _Buffer] = {}
        self._keys = KeyStore(scratch / KEYS_DIR, memory_budget)
        self._sweep_pages = _SweepPages(scratch / SWEEP_PAGES_NAME)
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
        with self._lock:
            self._seq += 1
            seq = self._seq
            buffer = self._buffers.setdefault(source, _Buffer(source))
        if source == SWEEP_SOURCE and body is not None and self._listed:
            pets = self._add_ghosts(buffer, pets, body, seq)
        if len(pets):
            if pets.extras is not None:
                self.saw_extra_fields = True
            buffer.add(pets, seq)
        if buffer.full(self._batch_rows):
            self._spill(buffer)

    def _add_ghosts(
        self, buffer: _Buffer, pets: PetColumns, body: bytes | bytearray, seq: int
    ) -> PetColumns:
        """Keep the sweep's pets of listed statuses as ghosts; return the others."""
        listed = self._listed
        ghost = [status in listed for status in pets.statuses]
        if True not in ghost:
            return pets
        self._sweep_pages.add(seq, body)
        if False not in ghost:
            buffer.add_ghosts(pets.ids, _hashes(pets), seq)
            return PetColumns.empty()
        ghosts = pets.where(ghost)
        buffer.add_ghosts(ghosts.ids, _hashes(ghosts), seq)
        return pets.where([not g for g in ghost])

    def _spill(self, buffer: _Buffer) -> None:
        batch = None
        if len(buffer):
            batch = _batch(
                PetColumns(
                    buffer.ids, buffer.names, buffer.categories, buffer.statuses, buffer.extras
                )
            )
        stored = (buffer.ids, buffer.seqs, buffer.hashes)
        ghosts = (buffer.ghost_ids, buffer.ghost_seqs, buffer.ghost_hashes)
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
                writer.write_batch(_batch(rows))
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


def _batch(columns: PetColumns) -> pa.RecordBatch:
    """The columns as an Arrow record batch of the scratch schema (ids are exact: every one
    passed the int64 check)."""
    extras = columns.extras
    return pa.record_batch(
        [
            _int64_array(np.array(columns.ids, dtype=np.int64)),
            _string_array(columns.names),
            _int64_array(np.array(columns.categories, dtype=np.int64)),
            _string_array(columns.statuses),
            pa.nulls(len(columns), pa.string()) if extras is None else _string_array(extras),
        ],
        schema=SCRATCH_SCHEMA,
    )


def output_schema(extra_columns: Mapping[str, ColumnType]) -> pa.Schema:
    """The snapshot schema, then one nullable column per kept extra field, in the given order."""
    schema = PET_SCHEMA
    for name, column in extra_columns.items():
        schema = schema.append(pa.field(name, ARROW_TYPES[column], nullable=True))
    return schema


def _output_batch(
    batch: pa.RecordBatch, extra_columns: Mapping[str, ColumnType], schema: pa.Schema
) -> pa.RecordBatch:
    """A scratch batch as the snapshot writes it: the interface's columns, then the kept ones."""
    known = batch.columns[:4]
    if not extra_columns:
        return pa.RecordBatch.from_arrays(known, schema=schema)
    decoded = [None if t is None else json.loads(t) for t in batch.column(4).to_pylist()]
    kept = [
        arrow_column([None if d is None else d.get(name) for d in decoded], column)
        for name, column in extra_columns.items()
    ]
    return pa.RecordBatch.from_arrays([*known, *kept], schema=schema)


# Columns are built without pa.array(): on its first call pa.array() imports pandas (its
# array-like check), which costs about 0.6 s of CPU and 40 MiB of RSS in an export that never
# uses pandas.


def _int64_array(values: npt.NDArray[np.int64]) -> pa.Array:
    """An Arrow int64 array over a numpy array's buffer (no copy)."""
    return pa.Array.from_buffers(pa.int64(), len(values), [None, pa.py_buffer(values)])


def _string_array(values: Sequence[str | None]) -> pa.Array:
    """An Arrow string array; None becomes null.

    Built from one encoded buffer and its offsets: about 4x cheaper than appending the
    strings one by one. Text that is all ASCII (the usual case) has as many bytes as
    characters, so only other text encodes each string again to count its bytes.
    """
    count = len(values)
    validity = None
    try:
        text = "".join(values)  # type: ignore[arg-type]  # a None raises: handled below
    except TypeError:
        present = np.array([value is not None for value in values], dtype=np.bool_)
        validity = pa.py_buffer(np.packbits(present, bitorder="little"))
        values = [value if value is not None else "" for value in values]
        text = "".join(values)  # type: ignore[arg-type]
    data = text.encode()  # a lone surrogate raises UnicodeEncodeError, as pa.array() did
    if len(data) > _OFFSET_MAX:  # beyond int32 offsets (16k names of 128 KiB each)
        builder = pa.lib.StringBuilder()
        builder.append_values(values)
        return builder.finish()
    texts = cast("Sequence[str]", values)
    lengths = map(len, texts) if len(data) == len(text) else map(len, map(str.encode, texts))
    offsets = np.zeros(count + 1, dtype=np.int32)
    np.cumsum(np.fromiter(lengths, dtype=np.int32, count=count), out=offsets[1:])
    return pa.StringArray.from_buffers(count, pa.py_buffer(offsets), pa.py_buffer(data), validity)


@dataclass(frozen=True)
class CollectedPets:
    """What the export collected: the pets written, their statuses, the duplicates found."""

    pets: int
    statuses: StatusCounts
    rows_fetched: int
    seen_under_two_statuses: int
    conflicting_duplicates: int
    status_mismatches: int
    scratch_bytes: int = 0


@dataclass
class Deduplicated:
    """The outcome of deduplication: which spilled rows win, and what was found."""

    spill_path: Path
    keep: BoolArray
    rows_fetched: int
    seen_under_two_statuses: int
    conflicting_duplicates: int
    status_mismatches: int
    rebuilt_path: Path | None = None  # winning sweep rows rebuilt from their pages
    rebuilt: int = 0
    scratch_bytes: int = 0  # written to the scratch area: rows, sweep pages, spilled keys
    has_extra_fields: bool = False  # some row stored had fields beyond the interface's

    @property
    def pets(self) -> int:
        return int(np.count_nonzero(self.keep)) + self.rebuilt

    def write(
        self,
        parquet_path: Sink,
        csv_path: Sink | None,
        *,
        metadata: Mapping[bytes, bytes] | None = None,
        extra_columns: Mapping[str, ColumnType] | None = None,
    ) -> CollectedPets:
        """Stream the winning rows into Parquet (zstd) and, if given, CSV; count statuses.

        Each target is a local path or an open pyarrow output stream (an object store's
        multipart upload: the caller closes it). ``metadata`` goes into the Parquet
        footer's key-value metadata (the run id readers match with the manifest).

        pyarrow's CSV writer quotes every string and writes null as an empty unquoted
        field, so a null status (``,``) and an empty string (``,""``) stay distinct; ints
        are plain digits. ``extra_columns`` names the extra fields kept as columns, with
        their types, in the order they follow the interface's columns.
        """
        import pyarrow.csv as pa_csv
        import pyarrow.parquet as pq

        counts = StatusCounts()
        columns = extra_columns or {}
        plain = output_schema(columns)
        schema = plain.with_metadata(dict(metadata)) if metadata else plain
        parquet = pq.ParquetWriter(_sink(parquet_path), schema, compression="zstd")
        csv = (
            pa_csv.CSVWriter(
                _sink(csv_path),
                plain,
                write_options=pa_csv.WriteOptions(include_header=True, quoting_style="needed"),
            )
            if csv_path is not None
            else None
        )
        pending: list[pa.RecordBatch] = []
        pending_rows = 0

        def flush() -> None:
            nonlocal pending, pending_rows
            if pending:
                parquet.write_table(pa.Table.from_batches(pending, schema=plain))
                pending, pending_rows = [], 0

        try:
            for batch in self.batches(columns):
                counts.add(batch.column(3))
                if csv is not None:
                    csv.write_batch(batch)
                pending.append(batch)
                pending_rows += batch.num_rows
                if pending_rows >= ROW_GROUP_ROWS:
                    flush()
            flush()
        finally:
            parquet.close()
            if csv is not None:
                csv.close()
        return self.counted(counts)

    def counted(self, statuses: StatusCounts) -> CollectedPets:
        """The run's counts, with ``statuses`` counted over the rows as written."""
        return CollectedPets(
            pets=self.pets,
            statuses=statuses,
            rows_fetched=self.rows_fetched,
            seen_under_two_statuses=self.seen_under_two_statuses,
            conflicting_duplicates=self.conflicting_duplicates,
            status_mismatches=self.status_mismatches,
            scratch_bytes=self.scratch_bytes,
        )

    def batches(
        self, extra_columns: Mapping[str, ColumnType] | None = None
    ) -> Iterator[pa.RecordBatch]:
        """The winning rows as record batches of the snapshot schema (and ``extra_columns``),
        streamed from the scratch file."""
        columns = extra_columns or {}
        schema = output_schema(columns)
        for batch in self._winning_batches():
            yield _output_batch(batch, columns, schema)

    def tally_extra_fields(self) -> FieldTally:
        """Count the extra fields of the winning rows (reads the scratch file only when some
        row had any)."""
        tally = FieldTally()
        if not self.has_extra_fields:
            return tally
        for batch in self._winning_batches():
            extras = batch.column(4)
            if extras.null_count == len(extras):
                continue
            for text in extras.to_pylist():
                if text is not None:
                    tally.add(text)
        return tally

    def _winning_batches(self) -> Iterator[pa.RecordBatch]:
        """The scratch file's batches, read one at a time (no memory map), winners only."""
        with pa.OSFile(str(self.spill_path), "rb") as source:
            reader = pa.ipc.open_file(source)
            offset = 0
            for index in range(reader.num_record_batches):
                batch = reader.get_batch(index)
                mask = self.keep[offset : offset + batch.num_rows]
                offset += batch.num_rows
                if mask.all():
                    yield batch
                elif mask.any():
                    yield batch.filter(pa.array(mask))
        if self.rebuilt_path is not None:
            with pa.OSFile(str(self.rebuilt_path), "rb") as source:
                reader = pa.ipc.open_file(source)
                for index in range(reader.num_record_batches):
                    yield reader.get_batch(index)
