"""The outcome of deduplication: the winning rows, streamed into the snapshot's files.

:class:`Deduplicated` holds which rows of the scratch file win (and the winning sweep rows
rebuilt from their pages); :meth:`Deduplicated.write` streams them into Parquet and CSV, in
the order they were stored, then the rebuilt ones; not sorted. Only when some row has fields
beyond the interface's does :meth:`Deduplicated.tally_extra_fields` read them back, and
:meth:`Deduplicated.write` turn the kept fields into typed columns after the interface's
(:mod:`petsync.export.extra_fields`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeAlias

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from petsync.export.extra_fields import ARROW_TYPES, ColumnType, FieldTally, arrow_column
from petsync.export.schema import PET_SCHEMA
from petsync.export.tallies import CollectedPets, StatusCounts

ROW_GROUP_ROWS = 131_072  # Parquet row groups of this size: big enough to scan fast

BoolArray = npt.NDArray[np.bool_]
Sink: TypeAlias = "Path | str | pa.NativeFile"  # where Deduplicated.write streams a file


def _sink(target: Sink) -> str | pa.NativeFile:
    return str(target) if isinstance(target, Path) else target


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
