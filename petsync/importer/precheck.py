"""The check stage: every row read and checked before anything is sent.

A malformed file stops here with :class:`~petsync.core.errors.InputError` and nothing
created. What the stage learnt (the file's sha256, its columns, how it was decoded) and
each row's verdict are a :class:`CheckedInput`, which it hands to the plan, send and write
stages: they take the checked rows (:mod:`petsync.importer.checked_rows`) and never open
the input again.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from petsync.core.wording import Said
from petsync.importer.category_map import with_category_map
from petsync.importer.checked_rows import CheckedRows
from petsync.importer.columns import ColumnMap, names_fields, resolve_columns
from petsync.importer.config import MergedCells
from petsync.importer.duplicates import RepeatedRows
from petsync.importer.header_row import HEADER_SCAN_ROWS, find_header_row
from petsync.importer.merged import MergedFill, fill_merged_cells
from petsync.importer.provenance import FixIdentity
from petsync.importer.sheets.sheet import (
    PETSYNC_MARKER_COLUMN,
    PETSYNC_ORIGIN_COLUMN,
    SheetRow,
    Spreadsheet,
)
from petsync.importer.validation import FieldError, cell_errors, validate_row


@dataclass(frozen=True)
class CheckedInput:
    """The input file as the check stage read it, and its rows as it checked them.

    ``rows`` are the checked rows (:class:`~petsync.importer.checked_rows.CheckedRows`),
    which the later stages iterate instead of reading the file again; ``rows_read``
    counts them and ``blank_rows`` the blank ones skipped. The rest is how the file was
    read (``encoding_label`` such as ``"utf-8 (BOM)"``, the delimiter's name, the sheet),
    as the report and the journal header tell it.
    """

    path: Path
    sha256: str
    header: tuple[str, ...]
    columns: ColumnMap
    rows: CheckedRows
    rows_read: int
    blank_rows: int
    encoding_label: str | None
    encoding_notice: Said | None
    delimiter: str | None
    sheet: str | None
    delimiter_char: str = ","
    row_column: int | None = None
    original_rows: frozenset[int] = frozenset()
    valid_rows: int = 0
    # The sha256 of the first file the rows came from: this file's own, or for a fed-back
    # file the one its petsync_origin column names (see petsync.importer.provenance).
    origin: str = ""
    # A fed-back file read by identity: the petsync_row column that numbers its rows.
    identity_column: int | None = None
    # The normalisations of the rows a dry run counts as valid (it sends none).
    normalisations: Mapping[str, int] = field(default_factory=dict)
    repeats: RepeatedRows | None = None  # rows repeating an earlier row, sent once
    header_row: int = 1  # the header's row number (rows above it are skipped)
    merged: MergedFill | None = None  # a workbook's merged cells below the header
    # Where a carried row holds a field: a fix file's created row is written with the
    # pet as it was sent there (see :func:`~petsync.importer.output_rows.as_sent`).
    field_positions: Mapping[int, str] = field(default_factory=dict)

    @property
    def width(self) -> int:
        """The number of header columns (cells beyond it are an error)."""
        return len(self.header)

    @property
    def column_names(self) -> dict[str, str]:
        """``{field: header}`` of the columns used."""
        return self.columns.describe(self.header)

    @property
    def settings(self) -> dict[str, Any]:
        """How the file was read, as the journal's first line records it.

        A resumed run must read the file the same way, or its row numbers and cells could
        mean other pets.
        """
        return {
            "columns": self.column_names,
            "encoding": self.encoding_label,
            "delimiter": self.delimiter,
            "sheet": self.sheet,
        }

    @property
    def carried_header(self) -> list[str]:
        """The input's own columns that the output files repeat (``petsync_*`` ones dropped).

        Columns read through ``--map`` are written under their field's name.
        """
        return self.columns.output_header(self.header)

    @property
    def petsync_written(self) -> bool:
        """True for a file petsync wrote (a reject or uncertain file fed back)."""
        return self.row_column is not None

    @property
    def fed_back(self) -> bool:
        """True for a fix file whose rows carry their origin: its rows belong to another file."""
        return self.identity_column is not None

    @property
    def unsent_columns(self) -> list[str]:
        """The headers of the columns no field is read from: carried to the outputs, not sent."""
        return self.columns.unsent(self.header)

    @property
    def output_origin(self) -> str:
        """The ``petsync_origin`` the outputs write: blank for a fed-back file of an older
        petsync, whose rows name no origin (their ``petsync_row`` is kept as it is)."""
        return "" if self.petsync_written and not self.fed_back else self.origin

    def close(self) -> None:
        """Remove the working files of the check (the checked rows, the index of repeats)."""
        self.rows.close()
        if self.repeats is not None:
            self.repeats.close()


@dataclass(frozen=True)
class CheckRules:
    """What the check stage needs of the import's settings: how to find the header and
    the columns, and whether repeated rows are sent."""

    mappings: tuple[str, ...] = ()
    header_row: int | None = None
    merged_cells: MergedCells = "fill"
    category_map: Path | None = None
    allow_duplicates: bool = False


def check_input(sheet: Spreadsheet, rules: CheckRules) -> CheckedInput:
    """Match the header, then read and check every row once (a malformed file raises here).

    Besides validating, the pass finds rows repeated inside the sheet, and in a fed-back
    file each row's identity (``petsync_origin`` and ``petsync_row``). Every row's verdict
    goes to the checked rows the later stages take.
    """
    path = sheet.path
    number = rules.header_row  # as given, else row 1 or the one found in the first rows
    if number is None:
        line, cells, cut = sheet.leading_rows(1)[0]
        number = 1
        if line != 1 or cut or not names_fields(cells, rules.mappings, path):
            number = find_header_row(sheet.leading_rows(HEADER_SCAN_ROWS), rules.mappings, path)
    sheet.use_header_row(number)
    merged = fill_merged_cells(sheet, rules.merged_cells)
    width = len(sheet.header)
    columns = resolve_columns(sheet.header, rules.mappings, path)
    positions = columns.carried_fields(width)
    columns = with_category_map(columns, rules.category_map)
    row_column = _row_column(sheet)
    origin_column = _column(sheet, PETSYNC_ORIGIN_COLUMN)
    if row_column is None and origin_column is not None:  # a reject file saved as a workbook
        row_column = _column(sheet, PETSYNC_MARKER_COLUMN)
    identity = None
    if row_column is not None and origin_column is not None:
        identity = FixIdentity()
    if identity is not None:
        sheet.identity_column = row_column  # rows numbered as in the first file
    repeats = RepeatedRows()
    spool = CheckedRows()
    carried, header, cell_problems = columns.carried, sheet.header, sheet.cell_problems
    kept = [i for i in carried if i < width]
    # Usually every column is carried, in order: a slice, not a cell at a time.
    prefix = len(kept) if kept == list(range(len(kept))) else None
    try:
        rows = valid = 0
        originals: set[int] = set()
        normalised: Counter[str] = Counter()  # of the valid rows
        normalised_by_identity: Counter[str] = Counter()  # of those not refused
        valid_by_identity = 0
        for row in sheet.rows():
            rows += 1
            cells, line = row.cells, row.line
            found: tuple[FieldError, ...] = ()
            if cell_problems and line in cell_problems:  # a workbook's cells it cannot read
                found = cell_errors(cell_problems[line], line, header, columns)
            original = line
            if row_column is not None and row_column < len(cells):
                text = cells[row_column].strip()
                if text.isdigit():
                    originals.add(int(text))
                    original = int(text)
            refused: tuple[FieldError, ...] = ()
            identity_errors: tuple[FieldError, ...] | None = None
            if identity is not None:
                assert origin_column is not None
                refused = identity.problems(row, _cell(row, origin_column))
                if refused:
                    identity_errors = validate_row(
                        cells, columns, width, row.cut, found + refused
                    ).errors
            result = validate_row(cells, columns, width, row.cut, found)
            normalisations = tuple(n.value for n in result.normalisations)
            spool.add(
                row.number,
                line,
                original,
                result.pet,
                result.errors,
                normalisations if result.pet is not None else (),
                bool(found),
                identity_errors,
                cells[:prefix]
                if prefix is not None and len(cells) >= prefix
                else tuple(cells[i] if i < len(cells) else "" for i in kept),
            )
            if result.pet is None:
                continue
            valid += 1
            if normalisations:
                normalised.update(normalisations)
            if not refused:  # a refused row is no copy of anything: it is rejected
                valid_by_identity += 1
                if normalisations:
                    normalised_by_identity.update(normalisations)
                repeats.see(line, cells, carried)
        repeats.finish()
        if not rules.allow_duplicates:  # repeats are not sent: they are not to do
            valid -= repeats.count
            valid_by_identity -= repeats.count
        if identity is not None and identity.origin is None:
            # No row names its origin (a file of an older petsync, or every cell
            # cleared): read it as before, by its own bytes and its petsync_row.
            identity = None
        if identity is not None:
            valid = valid_by_identity
            normalised = normalised_by_identity
        spool.finish(
            by_identity=identity is not None,
            repeats=None if rules.allow_duplicates else repeats,
        )
        return CheckedInput(
            path=path,
            sha256=sheet.sha256,
            header=sheet.header,
            columns=columns,
            rows=spool,
            rows_read=rows,
            blank_rows=sheet.blank_rows,
            encoding_label=sheet.encoding_label,
            encoding_notice=sheet.encoding_notice,
            delimiter=sheet.delimiter_name,
            sheet=sheet.sheet,
            delimiter_char=sheet.delimiter or ",",
            row_column=row_column,
            original_rows=frozenset(originals),
            valid_rows=valid,
            origin=sheet.sha256 if identity is None else identity.origin or sheet.sha256,
            identity_column=row_column if identity is not None else None,
            normalisations=dict(normalised),
            repeats=repeats,
            header_row=sheet.header_row,
            merged=merged,
            field_positions=positions,
        )
    except BaseException:
        spool.close()
        repeats.close()
        raise


def _cell(row: SheetRow, column: int) -> str:
    return row.cells[column] if column < len(row.cells) else ""


def _column(sheet: Spreadsheet, title: str) -> int | None:
    """The column headed ``title`` (a fix saved as a workbook keeps petsync's columns too)."""
    for index, found in enumerate(sheet.header):
        if found.strip() == title:
            return index
    return None


def _row_column(sheet: Spreadsheet) -> int | None:
    if not sheet.petsync_written:
        return None
    for index, title in enumerate(sheet.header):
        if title.strip() == PETSYNC_MARKER_COLUMN:
            return index
    return None
