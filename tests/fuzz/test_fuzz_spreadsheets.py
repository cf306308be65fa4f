"""Spreadsheets from outside (CSV bytes, workbook cells): any input ends in rows, a reject or
an InputError (exit 2) naming the file; never another exception, never a row past the
bounds of petsync.core.interface."""

from __future__ import annotations

import contextlib
import json
import select
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

import pytest
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
from petsync.importer.sheets import ods_content
from petsync.importer.sheets.ods_content import measure_ods
from petsync.importer.sheets.opening import open_spreadsheet
from petsync.importer.sheets.sheet import CUT_NOTE, column_letters
from petsync.importer.sheets.sheet_range import UsedRange, check_sheet_range
from petsync.importer.validation import validate_row
from tests.fuzz.budget import DEADLINE, fuzz
from tests.fuzz.workbook_worker import CELL_LIMIT as CELL_LIMIT_SCALED
from tests.fuzz.workbook_worker import TEXT_LIMIT as TEXT_LIMIT_SCALED
from tests.fuzz.workbook_worker import XML_LIMIT as XML_LIMIT_SCALED
from tests.importer.test_workbook_bounds import _with_sheet
from tests.importer.workbook_bombs import (
    HEADER_ROW,
    ods_cell,
    ods_row,
    write_ods,
    write_shared_xlsx,
)

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
            ref = f' r="{column_letters(column - 1)}{row}"' if with_r else ""
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


# Workbooks that stand for more than their bytes (repeated cells, shared strings,
# whitespace), each read in a child process under an address-space limit with the bounds
# scaled down (tests/fuzz/workbook_worker.py): each ends refused naming a bound, or read
# within the bounds; an example that escapes the measurement kills the child.
_MEMORY_LIMIT = 1 << 30
_REFUSALS = (
    "uses the range",
    "hold more than",
    "inflates to more than",
    "shared strings, more than",
)


class _Reader:
    """The worker child: one path in, one JSON answer out, or None if it died."""

    def __init__(self) -> None:
        self.process: subprocess.Popen[str] | None = None

    def read(self, path: Path) -> dict[str, Any] | None:
        if self.process is None or self.process.poll() is not None:
            self.close()  # a child that died: its pipes closed before the next starts
            self.process = subprocess.Popen(
                [sys.executable, "-m", "tests.fuzz.workbook_worker", str(_MEMORY_LIMIT)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
                cwd=Path(__file__).resolve().parents[2],
            )
        assert self.process.stdin is not None and self.process.stdout is not None
        try:
            self.process.stdin.write(f"{path}\n")
            self.process.stdin.flush()
        except BrokenPipeError:
            return None
        ready, _, _ = select.select([self.process.stdout], [], [], DEADLINE.total_seconds())
        line = self.process.stdout.readline() if ready else ""
        return json.loads(line) if line else None

    def close(self) -> None:
        if self.process is not None:
            self.process.kill()  # the child this fixture started
            self.process.wait()
            for stream in (self.process.stdin, self.process.stdout):
                if stream is not None:
                    with contextlib.suppress(BrokenPipeError):
                        stream.close()
            self.process = None


@pytest.fixture(scope="module")
def reader() -> Iterator[_Reader]:
    child = _Reader()
    yield child
    child.close()


def _check(answer: dict[str, Any] | None, text_limit: int) -> None:
    assert answer is not None, "the reader died: a workbook escaped the measurement"
    assert answer["peak"] < _MEMORY_LIMIT
    if "refused" in answer:
        assert any(bound in answer["refused"] for bound in _REFUSALS), answer
    else:
        assert answer["cells"] <= CELL_LIMIT_SCALED
        assert answer["text"] <= text_limit


# Repeats around the bounds' scale most of the time (a derandomized run must meet them):
# columns mostly within a sheet's width, rows often past the cell bound.
_COLUMN_REPEATS = st.one_of(st.sampled_from([1, 1, 2, 3, 60, 700]), st.integers(1, 10**7))
_ROW_REPEATS = st.one_of(st.sampled_from([1, 2, 500, 100_000, 2_000_000]), st.integers(1, 10**7))
_ODS_VALUE = st.one_of(
    st.none(),
    st.integers(-(2**63), 2**63),
    st.text(alphabet="ab <&é", max_size=30).map(escape),
    st.integers(0, 300_000).map(lambda n: "x" * n),
)
_ODS_CELL = st.builds(
    ods_cell,
    _ODS_VALUE,
    repeats=_COLUMN_REPEATS,
    formula=st.one_of(st.none(), st.just("of:=1+1")),
)
_ODS_ROW = st.builds(
    lambda cells, repeats: ods_row("".join(cells), repeats),
    st.lists(_ODS_CELL, max_size=4),
    _ROW_REPEATS,
)
_ODS_TABLE = st.lists(_ODS_ROW, max_size=6).map("".join)


@fuzz
@given(
    tables=st.lists(_ODS_TABLE, min_size=1, max_size=3),
    padding=st.one_of(st.just(0), st.integers(0, 10 << 20)),
)
def test_an_ods_of_any_repeats_and_whitespace_ends_bounded(
    reader: _Reader, tables: list[str], padding: int
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        named = [(f"S{n}", HEADER_ROW + rows) for n, rows in enumerate(tables)]
        path = write_ods(Path(folder, "w.ods"), *named, padding=padding)
        _check(reader.read(path), TEXT_LIMIT_SCALED)


@fuzz
@given(
    strings=st.lists(
        st.one_of(
            st.text(alphabet="ab <&é", max_size=20).map(escape),
            st.integers(0, 2_000_000).map(lambda n: "y" * n),
        ),
        min_size=1,
        max_size=5,
    ),
    uses=st.lists(st.integers(0, 6), max_size=300),
    unique=st.one_of(st.none(), st.integers(0, 10**12)),
)
def test_an_xlsx_of_any_shared_strings_ends_bounded(
    reader: _Reader, strings: list[str], uses: list[int], unique: int | None
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        kept = [index % len(strings) for index in uses]
        path = write_shared_xlsx(Path(folder, "w.xlsx"), strings, kept, unique_count=unique)
        # Inline text and numbers are bounded by the inflation limit, not the text bound.
        _check(reader.read(path), TEXT_LIMIT_SCALED + XML_LIMIT_SCALED)


@fuzz
@given(tables=st.lists(_ODS_TABLE, min_size=1, max_size=2))
def test_the_plain_row_reading_of_an_ods_counts_at_least_the_tag_by_tag_one(
    tables: list[str],
) -> None:
    """Rows read at once (ods_content._plain_row) give the same notes and a range at least
    as large as reading them tag by tag."""
    with tempfile.TemporaryDirectory() as folder:
        named = [(f"S{n}", HEADER_ROW + rows) for n, rows in enumerate(tables)]
        path = write_ods(Path(folder, "w.ods"), *named)
        try:
            fast = measure_ods(path, None)
        except InputError:
            return  # refused: the tag-by-tag reading may refuse later or not at all
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(ods_content._Scan, "_plain_row", lambda self, buffer, start: start)
            slow = measure_ods(path, None)
    assert fast.sheets == slow.sheets
    assert fast.exact == slow.exact
    for wide, narrow in zip(fast.used, slow.used, strict=True):
        assert wide.rows >= narrow.rows and wide.columns >= narrow.columns
