"""An .ods workbook measured from its XML before calamine expands it, and what calamine
cannot say of its cells.

An OpenDocument sheet says "this cell, 1,024 times" (``table:number-columns-repeated``)
and "this row, 97,000 times" (``table:number-rows-repeated``): an 851-byte file can stand
for 99 million cells, which calamine expands, every sheet of the workbook, as soon as it
opens it (a process abort no ``except`` can catch). :func:`measure_ods` reads
``content.xml`` first, a megabyte at a time under the workbook's inflation budget
(:mod:`.inflating`), and counts per sheet, with repeats:

* the used range, from A1 to the last row and column holding a value (calamine holds that
  grid), held to the limits every workbook format has (:func:`.sheet_range.check_used_range`),
  and the cells of all sheets together to the same cell limit;
* the bytes the cells would hold: each cell holding a value counts the length of its XML
  once for every cell it stands for (calamine copies the text into each), held to
  :data:`~petsync.core.interface.WORKBOOK_TEXT_LIMIT`.

The same pass notes, for the chosen sheet, the two things calamine loses (as
:mod:`.xlsx_cells` does for .xlsx): an integer cell past 2**53, whose ``office:value``
holds every digit, and a formula cell with no saved value (calamine shows it empty).

The tags are found with a regular expression, in C, a chunk at a time; only the table,
row and cell tags reach Python. calamine knows these tags by their usual ``table:`` prefix
only, and so does this scan.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import unescape

from petsync.core.errors import InputError
from petsync.core.interface import SHEET_CELL_LIMIT, WORKBOOK_TEXT_LIMIT
from petsync.importer.sheets.inflating import (
    DAMAGED_ZIP,
    InflationBudget,
    UnmeasuredWorkbook,
    member_chunks,
    skip_member,
    whole_tags,
)
from petsync.importer.sheets.sheet_range import UsedRange, check_used_range
from petsync.importer.sheets.xlsx_cells import ExactCells, exact_integer

ODS_SUFFIXES = frozenset({".ods"})
_CONTENT = "content.xml"
# A table, row or cell tag opening, or a table or row closing (a cell's end is searched
# for on its own); attribute values may hold ">" (quoted).
_TAG = re.compile(
    rb"<(?:table:(table|table-row|table-cell|covered-table-cell)(?=[\s/>])"
    rb"""((?:[^>"']+|"[^"]*"|'[^']*')*)|/table:(table|table-row)\s*)>"""
)
_CELLS = frozenset({b"table-cell", b"covered-table-cell"})
# A cell's end tag: found as written by every tool, else (XML allows blanks before its
# ">") by a pattern; never cut by a buffer (whole_tags).
_END_TAGS = {
    b"table-cell": b"</table:table-cell",
    b"covered-table-cell": b"</table:covered-table-cell",
}
_END_TAG_PATTERNS = {kind: re.compile(re.escape(tag) + rb"\s*>") for kind, tag in _END_TAGS.items()}
_GT = ord(">")
_INNER_TAG = re.compile(rb"</?table:(?:table|covered-table-cell)[\s/>-]")
# The empty cells LibreOffice repeats to the last column at the end of every row.
_TRAILING_EMPTY = re.compile(
    rb'<table:table-cell(?: table:style-name="[^"<>]*")? table:number-columns-repeated="'
    rb'[0-9]{1,9}"\s*/>\s*'
)
# A value a cell of the chosen sheet may not render: 16 characters or more, or an exponent.
_NOTEWORTHY_VALUE = re.compile(rb"""office:value\s*=\s*["'](?:[^"']{16}|[^"']*[eE])""")
# Below this many cells in a sheet's range, a plain row (no repeats) needs no check: it
# grows the range by one row only (checked at the table's end).
_CHECK_FROM = SHEET_CELL_LIMIT // 2
_ROWS_REPEATED = re.compile(rb"""table:number-rows-repeated\s*=\s*["']\s*([0-9]+)""")
_COLUMNS_REPEATED = re.compile(rb"""table:number-columns-repeated\s*=\s*["']\s*([0-9]+)""")
_NAME = re.compile(rb"""table:name\s*=\s*(?:"([^"]*)"|'([^']*)')""")
_VALUE = re.compile(rb"""office:value\s*=\s*["']\s*([^"']*)["']""")
_HAS_VALUE = re.compile(rb"office:(?:value|string-value|date-value|time-value|boolean-value)\s*=")
_STRING_TYPE = re.compile(rb"""office:value-type\s*=\s*["']string["']""")
# A 16-digit number written with 15 significant digits, LibreOffice's most: it may have
# had a 16th (9007199254740993 is written 9.00719925474099E+015). Fewer digits are exact;
# from 2**53 on, every format's rule applies (workbook.py).
_ROUNDED = re.compile(r"[-+]?[1-9]\.[0-9]{14}[eE]\+?0*15")
_EXACT_FROM = 2**53
_PROBLEMS_PER_ROW = 8  # a row with one cell calamine cannot render is rejected already


@dataclass
class _Table:
    name: str
    rows: int = 0  # rows so far, with repeats
    used_rows: int = 0
    used_columns: int = 0


@dataclass
class OdsMeasure:
    """The sheets' names in order, their used ranges as measured (at least calamine's), and
    the chosen sheet's cells calamine cannot render."""

    sheets: list[str] = field(default_factory=list)
    used: list[UsedRange] = field(default_factory=list)
    exact: ExactCells = field(default_factory=ExactCells)


def measure_ods(path: Path, sheet_name: str | None, name: str | None = None) -> OdsMeasure:
    """Refuse (:class:`InputError`) an .ods too big to expand; else what calamine loses.

    ``sheet_name`` None means the first sheet. :class:`UnmeasuredWorkbook` when ``path`` is
    not a zip holding a ``content.xml`` this scan can read through. ``name`` is what to
    open (a name leading to the checked descriptor, :mod:`.held`); the path by default.
    """
    try:
        archive = zipfile.ZipFile(name or path)
    except (OSError, zipfile.BadZipFile, ValueError) as exc:
        raise UnmeasuredWorkbook(str(exc)) from exc
    with archive:
        try:
            budget = InflationBudget(path)
            found: OdsMeasure | None = None
            for info in archive.infolist():
                if info.filename == _CONTENT:
                    with member_chunks(archive, info, budget) as chunks:
                        found = _Scan(path, sheet_name).run(chunks)
                else:  # every member counts against the budget, as for .xlsx
                    skip_member(archive, info, budget)
        except DAMAGED_ZIP as exc:
            raise UnmeasuredWorkbook(str(exc)) from exc
    if found is None:
        raise UnmeasuredWorkbook(f"no {_CONTENT}")
    return found


class _Scan:
    """One pass over ``content.xml``: the state of the table, row and cell being read.

    Per cell tag as little Python as can be (a sheet of 100,000 rows has half a million):
    a cell's content is passed over by one search for its end tag, and its length
    counted only where repeats multiply it. A table, row or cell tag inside a cell's
    content (calamine skips it; this scan would miscount it) ends the measure: the file
    is read in the bounded child instead (:class:`UnmeasuredWorkbook`).
    """

    def __init__(self, path: Path, sheet_name: str | None) -> None:
        self.path = path
        self.wanted = sheet_name
        self.found = OdsMeasure()
        self.table: _Table | None = None
        self.chosen = False
        self.cells = 0  # cells of the finished sheets' used ranges
        self.text = 0  # bytes the cells would hold, all sheets
        self.row_repeats = 1
        self.column = 0  # 0-based column of the next cell in the row
        self.row_used = 0  # columns up to the last cell holding a value in this row
        # A cell whose content runs into the next buffer: its end tag, where it started
        # and what its length counts for (0: nothing).
        self.pending: tuple[re.Pattern[bytes], int, int] | None = None

    def run(self, chunks: Iterator[bytes]) -> OdsMeasure:
        search = _TAG.search
        for offset, buffer in whole_tags(chunks):
            position = self._pending(offset, buffer)
            while position >= 0 and (match := search(buffer, position)) is not None:
                position = match.end()
                kind, attrs, closing = match.groups()
                if kind in _CELLS:
                    if self.table is not None:
                        position = self._cell(kind, attrs, offset, buffer, match.start(), position)
                elif kind == b"table-row":
                    self._start_row(attrs)
                    if self.row_repeats == 1 and not attrs.endswith(b"/"):
                        position = self._plain_row(buffer, position)
                elif kind == b"table":
                    self._start_table(attrs)
                elif closing == b"table-row":
                    self._end_row()
                else:
                    self._end_table()
        if self.pending is not None:
            raise UnmeasuredWorkbook("a cell without its end")
        if self.table is not None:
            # calamine reads a sheet until its end tag and would wait for it forever.
            raise InputError(
                f"{self.path}: the workbook ends inside sheet {self.table.name!r} (a damaged "
                "or cut file); open it in LibreOffice and save it again"
            )
        return self.found

    def _plain_row(self, buffer: bytes, start: int) -> int:
        """A row's cells at once, where the row is plain: whole in this buffer, no repeats
        but LibreOffice's trailing empty cells, nothing inside its cells that a tag-by-tag
        reading would count (and in the chosen sheet nothing to note). Where it ends; or
        ``start``, for the tag-by-tag reading, where it is not plain."""
        end = buffer.find(b"</table:table-row>", start)
        if end < 0 or self.table is None:
            return start
        cells = buffer.count(b"<table:table-cell", start, end)
        cells += buffer.count(b"<table:covered-table-cell", start, end)
        if buffer.count(b"<table:", start, end) != cells:
            return start  # another table tag inside the row: a table in a cell?
        repeated = buffer.count(b"repeated", start, end)
        if repeated:
            last = buffer.rfind(b"<table:", start, end)
            if repeated > 1 or _TRAILING_EMPTY.fullmatch(buffer, last, end) is None:
                return start
            cells -= 1
        valued = buffer.find(b"office:", start, end) >= 0
        formula = buffer.find(b"table:formula", start, end) >= 0
        if self.chosen and (formula or _NOTEWORTHY_VALUE.search(buffer, start, end)):
            return start
        # At most the row's cells (a trailing empty one before the repeated ones counts).
        self.row_used = cells if valued or formula else 0
        self._end_row()
        return end + len(b"</table:table-row>")

    def _pending(self, offset: int, buffer: bytes) -> int:
        """Pass over the rest of a cell's content; where the tags resume (-1: not here)."""
        if self.pending is None:
            return 0
        end_tag, start, weight = self.pending
        end = end_tag.search(buffer)
        _no_table_inside(buffer, 0, len(buffer) if end is None else end.start())
        if end is None:
            return -1
        self.pending = None
        self._cell_text(offset + end.end() - start, weight)
        return end.end()

    def _cell(
        self, kind: bytes, attrs: bytes, offset: int, buffer: bytes, start: int, after: int
    ) -> int:
        repeats = 1
        if b"repeated" in attrs and (repeated := _COLUMNS_REPEATED.search(attrs)) is not None:
            repeats = max(int(repeated.group(1)), 1)
        weight = 0  # what the cell's length counts for: only a repeated value is multiplied
        if b"office:" in attrs or b"table:formula" in attrs:
            self.row_used = self.column + repeats
            if repeats > 1 or self.row_repeats > 1:
                weight = repeats * self.row_repeats
                self._check_reach()
            if self.chosen and _worth_noting(attrs):
                self._note(attrs, repeats)
        self.column += repeats
        if attrs.endswith(b"/"):
            self._cell_text(after - start, weight)
            return after
        end_tag = _END_TAGS[kind]
        end = buffer.find(end_tag, after)
        if end >= 0 and buffer[end + len(end_tag)] == _GT:  # the usual end tag, no blanks
            closed = end + len(end_tag) + 1
        else:
            found = _END_TAG_PATTERNS[kind].search(buffer, after)
            end, closed = (found.start(), found.end()) if found else (-1, -1)
        _no_table_inside(buffer, after, len(buffer) if end < 0 else end)
        if end < 0:
            self.pending = (_END_TAG_PATTERNS[kind], offset + start, weight)
            return -1
        self._cell_text(closed - start, weight)
        return closed

    def _start_table(self, attrs: bytes) -> None:
        named = _NAME.search(attrs)
        raw = (named.group(1) or named.group(2)) if named else b""
        name = unescape(raw.decode("utf-8", "replace"), {"&quot;": '"', "&apos;": "'"})
        self.table = _Table(name)
        self.found.sheets.append(name)
        wanted = self.wanted
        self.chosen = name == wanted if wanted is not None else len(self.found.sheets) == 1

    def _start_row(self, attrs: bytes) -> None:
        if self.table is None:
            return
        self.row_repeats = 1
        if b"repeated" in attrs and (repeated := _ROWS_REPEATED.search(attrs)) is not None:
            self.row_repeats = max(int(repeated.group(1)), 1)
        self.column = self.row_used = 0
        if attrs.endswith(b"/"):
            self._end_row()

    def _check_reach(self) -> None:
        """A repeated value: the range it reaches, before the bytes it copies."""
        table = self.table
        if table is not None:
            reach = max(table.used_columns, self.row_used)
            rows = table.rows + self.row_repeats
            check_used_range(self.path, table.name, UsedRange(rows, reach))

    def _note(self, attrs: bytes, repeats: int) -> None:
        """What calamine would lose in this cell of the chosen sheet (first row repeats)."""
        row = self.table.rows + 1 if self.table else 1
        exact = self.found.exact
        columns = range(self.column, self.column + min(repeats, _PROBLEMS_PER_ROW))
        rows = range(row, row + min(self.row_repeats, _PROBLEMS_PER_ROW))
        if b"table:formula" in attrs and _HAS_VALUE.search(attrs) is None:
            if _STRING_TYPE.search(attrs) is None and len(exact.formulas) < SHEET_CELL_LIMIT:
                exact.formulas.update((number, column) for column in columns for number in rows)
            return
        value = _VALUE.search(attrs)
        raw = value.group(1).decode("ascii", "replace").strip() if value else ""
        text = exact_integer(raw) if raw else None
        if text is not None:
            exact.runs.append((row, row + self.row_repeats - 1, self.column, repeats, text))
        elif (
            _ROUNDED.fullmatch(raw)
            and abs(float(raw)) < _EXACT_FROM
            and len(exact.rounded) < SHEET_CELL_LIMIT
        ):
            # 16 digits written with 15: the 16th may be lost (LibreOffice keeps 15).
            exact.rounded.update(((number, column), raw) for column in columns for number in rows)

    def _cell_text(self, size: int, weight: int) -> None:
        if not weight:
            return  # a cell's own bytes: bounded by the inflation limit
        self.text += size * weight
        if self.text > WORKBOOK_TEXT_LIMIT:
            table = self.table
            raise InputError(
                f"{self.path}: the cells of the workbook would hold more than "
                f"{WORKBOOK_TEXT_LIMIT} bytes once its repeated cells are expanded (at "
                f"sheet {table.name if table else ''!r}, row {table.rows + 1 if table else 0}); "
                "petsync reads workbooks up to that. Save the sheet as CSV UTF-8, which "
                "petsync reads a row at a time, or split it"
            )

    def _end_row(self) -> None:
        table = self.table
        if table is None:
            return
        if self.row_used:
            table.used_rows = table.rows + self.row_repeats
            if self.row_used > table.used_columns:
                table.used_columns = self.row_used
        table.rows += self.row_repeats
        if self.row_repeats > 1 or table.used_rows * table.used_columns > _CHECK_FROM:
            self._check(table)
        self.row_repeats = 1
        self.column = self.row_used = 0

    def _check(self, table: _Table) -> None:
        used = UsedRange(table.used_rows, table.used_columns)
        check_used_range(self.path, table.name, used)
        if self.cells + used.rows * used.columns > SHEET_CELL_LIMIT:
            raise InputError(
                f"{self.path}: the sheets of the workbook hold more than {SHEET_CELL_LIMIT} "
                f"cells together (at sheet {table.name!r}, range {used.text}); an .ods is read "
                "whole, every sheet. Delete the sheets and the rows after your data, or save "
                "the sheet as CSV UTF-8"
            )

    def _end_table(self) -> None:
        table = self.table
        if table is None:
            return
        self._check(table)
        self.cells += table.used_rows * table.used_columns
        self.found.used.append(UsedRange(table.used_rows, table.used_columns))
        self.table = None
        self.chosen = False


def _no_table_inside(buffer: bytes, start: int, end: int) -> None:
    """Refuse to measure a cell whose content holds a table, row or cell tag."""
    if buffer.find(b"table:", start, end) >= 0 and _INNER_TAG.search(buffer, start, end):
        raise UnmeasuredWorkbook("a table, row or cell inside a cell")


def _worth_noting(attrs: bytes) -> bool:
    """A formula, or a value of 16 characters or more or in exponent form."""
    if b"table:formula" in attrs:
        return True
    start = attrs.find(b'office:value="')
    if start < 0:
        return b"office:value=" in attrs  # spelled otherwise: looked at closely
    start += 14
    end = attrs.find(b'"', start)
    return (
        end - start >= 16 or attrs.find(b"e", start, end) >= 0 or attrs.find(b"E", start, end) >= 0
    )
