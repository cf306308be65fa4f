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
# A table, row or cell tag, opening or closing; attribute values may hold ">" (quoted).
_TAG = re.compile(
    rb"<(/?)table:(table|table-row|table-cell|covered-table-cell)(?=[\s/>])"
    rb"""((?:[^>"']+|"[^"]*"|'[^']*')*)>"""
)
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
    """The sheets' names in order, and the chosen sheet's cells calamine cannot render."""

    sheets: list[str] = field(default_factory=list)
    exact: ExactCells = field(default_factory=ExactCells)


def measure_ods(path: Path, sheet_name: str | None) -> OdsMeasure:
    """Refuse (:class:`InputError`) an .ods too big to expand; else what calamine loses.

    ``sheet_name`` None means the first sheet. :class:`UnmeasuredWorkbook` when ``path`` is
    not a zip holding a ``content.xml`` this scan can read through.
    """
    try:
        archive = zipfile.ZipFile(path)
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
    """One pass over ``content.xml``: the state of the table, row and cell being read."""

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
        self.open_cell: tuple[bytes, int, int] | None = None  # kind, offset, repeats
        self.depth = 0  # cells of the same kind inside the open one (a table in a cell)

    def run(self, chunks: Iterator[bytes]) -> OdsMeasure:
        for offset, buffer in whole_tags(chunks):
            for match in _TAG.finditer(buffer):
                self._tag(match, offset + match.start(), offset + match.end())
        return self.found

    def _tag(self, match: re.Match[bytes], start: int, end: int) -> None:
        closing, kind, attrs = match.group(1), match.group(2), match.group(3)
        if self.open_cell is not None:  # inside a cell: only its own end matters
            if kind == self.open_cell[0]:
                if closing:
                    if self.depth == 0:
                        self._cell_text(end - self.open_cell[1], self.open_cell[2])
                        self.open_cell = None
                    else:
                        self.depth -= 1
                elif not attrs.rstrip().endswith(b"/"):
                    self.depth += 1
            return
        if kind == b"table":
            if closing:
                self._end_table()
            else:
                named = _NAME.search(attrs)
                raw = (named.group(1) or named.group(2)) if named else b""
                name = unescape(raw.decode("utf-8", "replace"), {"&quot;": '"', "&apos;": "'"})
                self.table = _Table(name)
                self.found.sheets.append(name)
                self.chosen = (
                    name == self.wanted if self.wanted is not None else len(self.found.sheets) == 1
                )
        elif self.table is None:
            return
        elif kind == b"table-row":
            if closing:
                self._end_row()
            else:
                repeated = _ROWS_REPEATED.search(attrs) if b"rows-repeated" in attrs else None
                self.row_repeats = max(int(repeated.group(1)), 1) if repeated else 1
                self.column = self.row_used = 0
                if attrs.rstrip().endswith(b"/"):
                    self._end_row()
        elif not closing:
            self._cell(kind, attrs, start, end)

    def _cell(self, kind: bytes, attrs: bytes, start: int, end: int) -> None:
        repeated = _COLUMNS_REPEATED.search(attrs) if b"columns-repeated" in attrs else None
        repeats = max(int(repeated.group(1)), 1) if repeated else 1
        formula = b"table:formula" in attrs
        has_value = _HAS_VALUE.search(attrs) is not None or _STRING_TYPE.search(attrs)
        if formula or has_value or b"office:value-type" in attrs:
            self.row_used = self.column + repeats
            if (repeats > 1 or self.row_repeats > 1) and self.table is not None:
                # A repeated value: the range it reaches, before the bytes it copies.
                reach = max(self.table.used_columns, self.row_used)
                rows = self.table.rows + self.row_repeats
                check_used_range(self.path, self.table.name, UsedRange(rows, reach))
            if self.chosen:
                self._note(attrs, formula and not has_value, repeats)
            if attrs.rstrip().endswith(b"/"):
                self._cell_text(end - start, repeats)
            else:
                self.open_cell = (kind, start, repeats)
                self.depth = 0
        elif not attrs.rstrip().endswith(b"/"):
            # An empty cell's content (a note, a frame) is not a value: skipped whole.
            self.open_cell = (kind, -1, 0)
            self.depth = 0
        self.column += repeats

    def _note(self, attrs: bytes, formula_only: bool, repeats: int) -> None:
        """What calamine would lose in this cell of the chosen sheet (first row repeat)."""
        row = self.table.rows + 1 if self.table else 1
        exact = self.found.exact
        if formula_only:
            targets = exact.formulas
            for column in range(self.column, self.column + min(repeats, _PROBLEMS_PER_ROW)):
                if len(targets) < SHEET_CELL_LIMIT:
                    for number in range(row, row + min(self.row_repeats, _PROBLEMS_PER_ROW)):
                        targets.add((number, column))
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
            for column in range(self.column, self.column + min(repeats, _PROBLEMS_PER_ROW)):
                for number in range(row, row + min(self.row_repeats, _PROBLEMS_PER_ROW)):
                    exact.rounded[(number, column)] = raw

    def _cell_text(self, size: int, repeats: int) -> None:
        if size < 0:
            return  # an empty cell's content
        self.text += size * repeats * self.row_repeats
        if self.text > WORKBOOK_TEXT_LIMIT:
            raise InputError(
                f"{self.path}: the cells of the workbook would hold more than "
                f"{WORKBOOK_TEXT_LIMIT} bytes once its repeated cells are expanded (at "
                f"sheet {self._name!r}, row {self._row}); petsync reads workbooks up to that. "
                "Save the sheet as CSV UTF-8, which petsync reads a row at a time, or split it"
            )

    @property
    def _name(self) -> str:
        return self.table.name if self.table else ""

    @property
    def _row(self) -> int:
        return self.table.rows + 1 if self.table else 0

    def _end_row(self) -> None:
        table = self.table
        if table is None:
            return
        if self.row_used:
            table.used_rows = table.rows + self.row_repeats
            table.used_columns = max(table.used_columns, self.row_used)
        table.rows += self.row_repeats
        self.row_repeats = 1
        self.column = self.row_used = 0
        self._check(table)

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
        self.table = None
        self.chosen = False
