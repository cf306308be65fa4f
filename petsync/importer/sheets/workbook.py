"""Workbooks (.xlsx, .xlsm, .xls, .xlsb, .ods) read once with calamine, as rows of text.

python-calamine parses the whole sheet in Rust, about ten times faster than openpyxl, and
reads the old ``.xls``, ``.xlsb`` and OpenDocument ``.ods`` too. It gives each cell's cached
value, never its formula. The sheet is read once when the workbook is opened (its rows kept
in ``cached_records`` for a look at its merged cells), so the file is parsed once per run.
Every workbook is measured before calamine expands it (docs/limits.md, "Workbooks"): an
.xlsx or .xlsm in :mod:`.sheet_values`, an .ods here (:mod:`.ods_content`: calamine expands
every sheet of an .ods as it opens it); an ``.xls`` or ``.xlsb`` is read in a child process
whose memory is limited (:mod:`.isolated_read`), so a sheet that makes calamine abort
costs that file only.

Values become text by :func:`render_cell`: text as it is; whole numbers without a decimal
point (``12``; ``12.0`` gives ``12``) below 2**53 in magnitude, where doubles stop being
exact; other numbers in Python's shortest round-trip form (``12.5``); booleans
``TRUE``/``FALSE``; dates ``2024-03-01``, date-times ``2024-03-01 14:30:00``, times
``14:30:00``; durations as Python writes them (``1:30:00``). An empty cell and an error
cell (``#N/A``, ``#DIV/0!``) are blank. Number formats are not applied (a cell showing
``007`` that holds the number 7 reads ``7``): store identifiers as text cells.

What calamine cannot render rejects its row, naming the cell
(:attr:`Spreadsheet.cell_problems`, :mod:`.cell_problems`):

* a whole number from 2**53 on is read as the file writes it where the file holds its
  digits (.xlsx, .xlsm: :mod:`.xlsx_cells`; .ods: :mod:`.ods_content`); where the file
  holds only a double (.xls, .xlsb, any float form), it is ``number_not_exact``;
* a 16-digit .ods number written with 15 significant digits (LibreOffice's most:
  ``9.00719925474099E+015`` for 9007199254740993) is ``number_not_exact`` too;
* a formula with no saved value (.xlsx, .xlsm, .ods; an .xls or .xlsb formula record
  always holds its value) is ``formula_without_value``.

Where calamine differs from the openpyxl reader petsync used before: every number is a
double, and error cells read blank instead of as their text (a name ``#N/A`` is now
rejected as blank, not imported).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any, BinaryIO

from petsync.importer.sheets.cell_problems import (
    FORMULA_WITHOUT_VALUE,
    NUMBER_NOT_EXACT,
    NUMBER_ROUNDED,
)
from petsync.importer.sheets.held import held_workbook
from petsync.importer.sheets.inflating import UnmeasuredWorkbook
from petsync.importer.sheets.isolated_read import ISOLATED_SUFFIXES, read_in_child
from petsync.importer.sheets.merged_ranges import read_merged_ranges
from petsync.importer.sheets.ods_content import ODS_SUFFIXES, measure_ods
from petsync.importer.sheets.sheet import Record, Spreadsheet, cut_cells
from petsync.importer.sheets.sheet_values import read_sheet_values
from petsync.importer.sheets.xlsx_cells import XLSX_SUFFIXES, ExactCells, read_exact_cells

_MAX_EXACT_FLOAT = 2**53


def open_workbook(source: BinaryIO, path: Path, sheet_name: str | None) -> Spreadsheet:
    """Read the workbook ``path``, open and checked as ``source`` (which this closes): choose
    the sheet (the first worksheet by default), read it whole.

    Hashed and read from that one descriptor (:mod:`.held`); a stop request ends the hash
    within one chunk. An .xlsx, .xlsm or .ods is measured, then read here; an .xls or
    .xlsb (not measurable beforehand), or a zip the measures could not read through, is
    read in the child process whose memory is limited (:mod:`.isolated_read`). The
    sheet's merged ranges are read from that descriptor too (:mod:`.merged_ranges`).
    """
    suffix = path.suffix.lower()
    exact = ExactCells()
    with source, held_workbook(source, path) as held:
        in_child = suffix in ISOLATED_SUFFIXES
        if not in_child:
            try:
                if suffix in ODS_SUFFIXES:  # calamine expands every sheet as it opens one
                    exact = measure_ods(path, sheet_name, held.name).exact
                chosen, values = read_sheet_values(path, sheet_name, held.name)
            except UnmeasuredWorkbook:
                in_child = True
        if in_child:
            chosen, values = read_in_child(path, sheet_name, held)
        if suffix in XLSX_SUFFIXES:
            exact = read_exact_cells(path, chosen, held.name)
        merged = read_merged_ranges(path, chosen, held.name)
    problems: dict[int, list[tuple[int, str]]] = {}
    records = list(_records(values, exact, problems))
    for number, column in sorted(exact.formulas):
        problems.setdefault(number, []).append((column, FORMULA_WITHOUT_VALUE))
    for (number, column), shown in sorted(exact.rounded.items()):
        why = NUMBER_ROUNDED.format(value=shown)
        problems.setdefault(number, []).append((column, why))
    sheet = Spreadsheet(path, "workbook", held.sha256, sheet=chosen)
    sheet.cell_problems = problems
    sheet.start(iter(records))
    sheet.cached_records = records
    sheet.merged_ranges = merged
    return sheet


def _records(
    values: list[list[Any]], exact: ExactCells, problems: dict[int, list[tuple[int, str]]]
) -> Iterator[Record]:
    by_row: dict[int, dict[int, str]] = {}
    for (number, column), text in exact.integers.items():
        by_row.setdefault(number, {})[column] = text
    runs = exact.runs
    for number, row in enumerate(values, start=1):
        cells = [render_cell(value) for value in row]
        if "e+" in "".join(cells):  # a number past 2**53 shows in exponent form
            exact_here = dict(by_row.get(number, {}))
            for first, last, column, count, text in runs:
                if first <= number <= last:
                    exact_here.update(dict.fromkeys(range(column, column + count), text))
            _large_numbers(number, row, cells, exact_here, problems)
        while cells and not cells[-1]:
            cells.pop()
        kept, cut = cut_cells(cells)
        yield number, kept, cut
    # calamine ends the sheet at its last cell with a value: rows past it holding only
    # formulas without a value are rows all the same (rejected, not skipped as blank).
    for number in sorted({row for row, _ in exact.formulas if row > len(values)}):
        yield number, (), ()


def _large_numbers(
    number: int,
    row: list[Any],
    cells: list[str],
    exact: dict[int, str],
    problems: dict[int, list[tuple[int, str]]],
) -> None:
    """A row's numbers past 2**53: the file's digits where it holds them, else a problem."""
    for column, cell in enumerate(cells):
        value = row[column]
        if not isinstance(value, float) or abs(value) < _MAX_EXACT_FLOAT:
            continue
        text = exact.get(column)
        if text is not None and value == float(text):
            cells[column] = text  # the integer as the file holds it, not as a double
        else:
            why = NUMBER_NOT_EXACT.format(value=cell)
            problems.setdefault(number, []).append((column, why))


def render_cell(value: object) -> str:
    """The text of a cached workbook cell value (the rule is in the module docstring).

    >>> [render_cell(v) for v in (12, 12.0, 12.5, None, True, "007", 2.0**53)]
    ['12', '12', '12.5', '', 'TRUE', '007', '9.007199254740992e+15']
    """
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value.is_integer() and abs(value) < _MAX_EXACT_FLOAT:
            return str(int(value))
        if value.is_integer():  # past 2**53 a double is not an exact integer: never 123.0
            return _exponent_form(value)
        return repr(value)
    if isinstance(value, dt.datetime):
        if value.time() == dt.time(0, 0) and value.tzinfo is None:
            return value.date().isoformat()
        return value.isoformat(sep=" ")
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, Decimal):
        return format(value, "f")
    return str(value)


def _exponent_form(value: float) -> str:
    """A large whole double in exponent form, every digit of its shortest repr kept.

    >>> _exponent_form(2.0**53), _exponent_form(-1e20)
    ('9.007199254740992e+15', '-1e+20')
    """
    text = repr(value)
    if "e" in text or "inf" in text or "nan" in text:
        return text
    sign = "-" if text.startswith("-") else ""
    digits = text.lstrip("-").split(".")[0]
    rest = digits[1:].rstrip("0")
    return f"{sign}{digits[0]}{'.' + rest if rest else ''}e+{len(digits) - 1}"
