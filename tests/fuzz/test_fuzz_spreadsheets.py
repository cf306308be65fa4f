"""Spreadsheets from outside (CSV bytes, workbook cells): any input ends in rows, a reject or
an InputError (exit 2) naming the file; never another exception, never a row past the
bounds of petsync.core.interface."""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from petsync.core.errors import InputError
from petsync.core.interface import (
    CELL_LIMIT,
    ROW_CELL_LIMIT,
    SHEET_CELL_LIMIT,
    SHEET_COLUMN_LIMIT,
)
from petsync.importer.columns import resolve_columns
from petsync.importer.sheets.opening import open_spreadsheet
from petsync.importer.sheets.sheet import CUT_NOTE
from petsync.importer.sheets.sheet_range import UsedRange, check_sheet_range, column_letters
from petsync.importer.validation import validate_row
from tests.fuzz.budget import fuzz
from tests.importer.test_workbook_bounds import _with_sheet

# Text that exercises the CSV reader: delimiters, quotes, line ends, NUL and other
# controls, non-ASCII, and runs of them.
_PIECES = st.sampled_from(
    [",", ";", "\t", '"', '""', "\n", "\r", "\r\n", "\x00", "\x1b", "é", "\u202e", "a", " "]
)
_CSV_TEXT = st.lists(st.one_of(_PIECES, st.text(max_size=20)), max_size=300).map("".join)
_HEADERS = st.sampled_from(["", "name,categoryId,status\n", "name;categoryId\n", "x\n"])
_ENCODINGS = st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "cp1252"])


def _read_all(path: Path) -> int:
    """Open, read every row and validate it as the import does; the rows read."""
    rows = 0
    with open_spreadsheet(path) as sheet:
        columns = resolve_columns(sheet.header, (), path)
        for row in sheet.rows():
            rows += 1
            assert len(row.cells) <= ROW_CELL_LIMIT
            assert all(len(c) <= CELL_LIMIT or c.endswith(CUT_NOTE) for c in row.cells)
            validate_row(row.cells, columns, len(sheet.header), row.cut)
    return rows


@fuzz
@given(header=_HEADERS, body=_CSV_TEXT, encoding=_ENCODINGS)
def test_any_csv_text_reads_or_fails_as_an_input_error(
    header: str, body: str, encoding: str
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, "in.csv")
        errors = "surrogatepass" if encoding.startswith("utf") else "replace"
        path.write_bytes((header + body).encode(encoding, errors=errors))
        try:
            _read_all(path)
        except InputError as exc:
            assert str(path) in str(exc) or "--" in str(exc)


@fuzz
@given(data=st.binary(max_size=4_000))
def test_any_bytes_named_csv_read_or_fail_as_an_input_error(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, "in.csv")
        path.write_bytes(b"name,categoryId\n" + data)
        with contextlib.suppress(InputError):
            _read_all(path)


# A workbook cell: (row, column, holds a value, written with its r attribute).
_NEAR = st.tuples(st.integers(1, 40), st.integers(1, 30), st.booleans(), st.booleans())
_FAR = st.tuples(st.integers(1, 1_048_576), st.integers(1, 16_384), st.booleans(), st.just(True))


def _sheet(cells: list[tuple[int, int, bool, bool]]) -> tuple[str, UsedRange]:
    """Sheet XML for ``cells`` (rows in order, as the format wants) and its used range."""
    by_row: dict[int, dict[int, tuple[bool, bool]]] = {}
    for row, column, value, with_r in cells:
        by_row.setdefault(row, {})[column] = (value, with_r)
    parts = ["<sheetData>"]
    last_row = last_column = 0
    for row in sorted(by_row):
        parts.append(f'<row r="{row}">')
        previous = 0
        for column in sorted(by_row[row]):
            value, with_r = by_row[row][column]
            with_r = with_r or column != previous + 1  # no r only for the next column
            ref = f' r="{column_letters(column)}{row}"' if with_r else ""
            parts.append(f"<c{ref}><v>1</v></c>" if value else f'<c{ref} s="1"/>')
            previous = column
            if value:
                last_row, last_column = max(last_row, row), max(last_column, column)
        parts.append("</row>")
    parts.append("</sheetData>")
    return "".join(parts), UsedRange(last_row, last_column)


@fuzz
@given(cells=st.lists(st.one_of(_NEAR, _NEAR, _NEAR, _FAR), max_size=60))
def test_a_workbook_range_is_measured_exactly_and_a_far_one_refused(
    cells: list[tuple[int, int, bool, bool]],
) -> None:
    xml, expected = _sheet(cells)
    too_big = (
        expected.columns > SHEET_COLUMN_LIMIT or expected.rows * expected.columns > SHEET_CELL_LIMIT
    )
    with tempfile.TemporaryDirectory() as folder:
        path = _with_sheet(Path(folder, "w.xlsx"), xml)
        if too_big:
            try:
                check_sheet_range(path, "Pets")
            except InputError as exc:
                assert f"uses the range {expected.text}" in str(exc)
            else:
                raise AssertionError(f"{expected} was not refused")
            return
        assert check_sheet_range(path, "Pets") == expected
        if expected.rows * expected.columns <= 4_000:  # calamine reads it: rows or a reject
            with contextlib.suppress(InputError):
                _read_all(path)


@fuzz
@given(data=st.binary(max_size=3_000))
def test_any_bytes_named_xlsx_fail_as_an_input_error(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, "in.xlsx")
        path.write_bytes(b"PK\x03\x04" + data)
        with contextlib.suppress(InputError):
            _read_all(path)
