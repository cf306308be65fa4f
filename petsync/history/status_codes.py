"""Statuses as small integers: one dictionary for every piece of an update.

A catalogue has a handful of statuses and millions of pets. Parquet stores the column as
a dictionary, and an update reads it so (``read_dictionary``) from the night and from the
open versions alike: each row group brings its own dictionary, which :class:`StatusCodes`
maps onto one list of the statuses seen, in the order first seen (the interface's first).
Every piece's status is then a :class:`pyarrow.DictionaryArray` over that list, or over an
earlier, shorter state of it: a code means the same status in every piece, so statuses
are compared and counted as numbers, and the open file is written from the codes without
hashing a string.

The list only grows (a status the interface does not name is added when first seen), and
from several threads at once: the night and the open versions are read on threads of their
own. Tables whose pieces were coded at different lengths of the list are brought to one
dictionary (``unify_dictionaries``) before they are combined.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from petsync.core.models import STATUS_VALUES
from petsync.formats.schema import PET_SCHEMA

STATUS_TYPE = pa.dictionary(pa.int32(), pa.string())
NULL_CODE = -1  # a pet without status
# The same as an Arrow scalar, taken from an array: pa.scalar() would import pandas.
_NULL_SCALAR = pa.Array.from_buffers(
    pa.int32(), 1, [None, pa.py_buffer(np.array([NULL_CODE], dtype=np.int32))]
)[0]


class StatusCodes:
    """The statuses seen by an update, each with its code (its place in :attr:`values`)."""

    def __init__(self, known: Iterable[str] = STATUS_VALUES) -> None:
        self._lock = threading.Lock()
        self._names: list[str] = list(dict.fromkeys(known))
        self._codes = {name: code for code, name in enumerate(self._names)}
        self.values: pa.Array = _strings(self._names)

    def coded(self, column: pa.Array | pa.ChunkedArray) -> pa.DictionaryArray:
        """``column`` (strings, or a dictionary of strings) as codes over :attr:`values`."""
        if isinstance(column, pa.ChunkedArray):
            column = _one_chunk(column)
        if not pa.types.is_dictionary(column.type):
            column = pc.dictionary_encode(column)
        names = column.dictionary.cast(pa.string()).to_pylist()
        if None in names:  # a null among the values themselves: coded afresh, nulls masked
            column = pc.dictionary_encode(column.cast(pa.string()))
            names = column.dictionary.to_pylist()
        with self._lock:
            fresh = [n for n in dict.fromkeys(names) if n is not None and n not in self._codes]
            if fresh:  # appended: every code given before keeps its status
                self._codes.update((n, len(self._names) + i) for i, n in enumerate(fresh))
                self._names.extend(fresh)
                self.values = _strings(self._names)
            remap = np.array([self._codes[n] for n in names], dtype=np.int32)
            values = self.values
        indices = column.indices.cast(pa.int32())
        if not np.array_equal(remap, np.arange(len(remap), dtype=np.int32)):
            raw = _raw(indices)
            mapped = np.take(remap, raw, mode="clip") if len(remap) else np.zeros_like(raw)
            indices = pa.Array.from_buffers(
                pa.int32(),
                len(indices),
                [indices.buffers()[0], pa.py_buffer(mapped)],
                null_count=indices.null_count,
                offset=indices.offset,
            )
        return pa.DictionaryArray.from_arrays(indices, values)

    def named(self, table: pa.Table) -> pa.Table:
        """A table of :func:`bare_codes` with its status coded again, over :attr:`values`."""
        index = table.schema.get_field_index("status")
        indices = table.column(index).combine_chunks()
        coded = pa.DictionaryArray.from_arrays(indices, self.values)
        return table.set_column(index, pa.field("status", STATUS_TYPE), coded)


def bare_codes(batch: pa.RecordBatch) -> pa.RecordBatch:
    """A batch whose coded status is its codes alone (int32, null for no status): how a
    spilled night is written, the dictionary kept by :class:`StatusCodes` meanwhile."""
    columns = [
        column.indices if name == "status" else column
        for name, column in zip(batch.schema.names, batch.columns, strict=True)
    ]
    return pa.RecordBatch.from_arrays(columns, names=batch.schema.names)


def codes(column: pa.DictionaryArray) -> npt.NDArray[np.int32]:
    """The codes of a coded column, :data:`NULL_CODE` where a pet has no status."""
    indices = column.indices
    if indices.null_count:
        indices = pc.fill_null(indices, _NULL_SCALAR)
    return _raw(indices)[indices.offset :]


def status_of(table: pa.Table) -> pa.DictionaryArray:
    """A coded table's status column as one array."""
    return _one_chunk(table.column("status"))


def _one_chunk(column: pa.ChunkedArray) -> pa.Array:
    return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()


def _raw(indices: pa.Array) -> npt.NDArray[np.int32]:
    """An int32 array's values from its start to its end, whatever is under its nulls."""
    data = indices.buffers()[1]
    if data is None:
        return np.zeros(indices.offset + len(indices), dtype=np.int32)
    return np.frombuffer(data, dtype=np.int32, count=indices.offset + len(indices))


def _strings(values: list[str]) -> pa.Array:
    """A string array from Python strings, built from buffers (``pa.array`` imports pandas)."""
    data = [value.encode() for value in values]
    offsets = np.zeros(len(data) + 1, dtype=np.int32)
    offsets[1:] = np.cumsum([len(d) for d in data])
    return pa.Array.from_buffers(
        pa.string(), len(data), [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(data))]
    )


def coded_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with its ``status`` column coded."""
    index = schema.get_field_index("status")
    return schema.set(index, schema.field(index).with_type(STATUS_TYPE))


def names(column: pa.DictionaryArray, others: pa.DictionaryArray | None = None) -> list[str | None]:
    """What each code of ``column`` (and of ``others``) means, by code - :data:`NULL_CODE`:
    ``[None, ...]``.

    Coded at different lengths of one list, the longer dictionary names both's codes.
    """
    dictionary = column.dictionary
    if others is not None and len(others.dictionary) > len(dictionary):
        dictionary = others.dictionary
    return [None, *dictionary.to_pylist()]


def coded_table(table: pa.Table, statuses: StatusCodes) -> pa.Table:
    """``table`` with its ``status`` column coded by ``statuses``."""
    index = table.schema.get_field_index("status")
    field = table.schema.field(index).with_type(STATUS_TYPE)
    return table.set_column(index, field, statuses.coded(table.column(index)))


NIGHT_SCHEMA = coded_schema(PET_SCHEMA)  # a night's pieces: the snapshot's, status coded
