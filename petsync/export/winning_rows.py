"""The outcome of deduplication: the winning rows, streamed to the night's format.

:class:`Deduplicated` holds which rows of the scratch file win (and the winning sweep rows
rebuilt from their pages); :meth:`Deduplicated.batches` streams them as record batches, in
the order they were stored, then the rebuilt ones; not sorted: the rows a format commits
(:class:`~petsync.formats.night.NightRows`). Only when some row has fields beyond the
interface's does :meth:`Deduplicated.tally_extra_fields` read them back, and
:meth:`Deduplicated.batches` turn the kept fields into typed columns after the interface's
(:mod:`petsync.export.extra_fields`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from petsync.export.extra_fields import FieldTally, arrow_column
from petsync.export.tallies import CollectedPets
from petsync.formats.night import StatusCounts
from petsync.formats.schema import ColumnType, output_schema

BoolArray = npt.NDArray[np.bool_]


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
