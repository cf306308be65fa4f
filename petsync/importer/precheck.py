"""The check pass: read every row before anything is sent, and remember how it was read.

A malformed file stops here with :class:`~petsync.core.errors.InputError` and nothing
created. What the pass learnt (the file's sha256, its columns, how it was decoded) is a
:class:`CheckedInput`. The send and write passes open the file again through
:meth:`CheckedInput.reopen`, which refuses a file whose bytes changed in between.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from petsync.core.errors import InputError
from petsync.core.models import NewPet
from petsync.core.stop import StopRequest
from petsync.importer.category_map import with_category_map
from petsync.importer.columns import ColumnMap, resolve_columns
from petsync.importer.config import ImportConfig
from petsync.importer.duplicates import RepeatedRows
from petsync.importer.header_row import choose_header
from petsync.importer.merged import MergedFill, fill_merged_cells
from petsync.importer.provenance import FixIdentity
from petsync.importer.sheets.merged_ranges import column_letters
from petsync.importer.sheets.opening import open_spreadsheet
from petsync.importer.sheets.sheet import (
    PETSYNC_MARKER_COLUMN,
    PETSYNC_ORIGIN_COLUMN,
    ReadOptions,
    Record,
    SheetRow,
    Spreadsheet,
)
from petsync.importer.sheets.workbook import cell_problem_code
from petsync.importer.validation import ErrorCode, FieldError, Validated, validate_row

# What a row asks the API to create: (name, categoryId, status or None). Rows with equal
# content ask for the same pet; the settle step compares pets by it.
PetContent = tuple[str, int, str | None]


def content_of(pet: NewPet) -> PetContent:
    """The content key of a pet to create.

    >>> content_of(NewPet(name="Rex", categoryId=1))
    ('Rex', 1, None)
    """
    return (pet.name, pet.categoryId, None if pet.status is None else pet.status.value)


@dataclass(frozen=True)
class CheckedInput:
    """The input file as the check pass read it.

    ``rows`` counts the rows read and ``blank_rows`` the blank ones skipped; the rest is
    how the file was read (``encoding_label`` such as ``"utf-8 (BOM)"``, the delimiter's
    name, the sheet), as the report and the journal header tell it.
    """

    path: Path
    options: ReadOptions
    sha256: str
    header: tuple[str, ...]
    columns: ColumnMap
    rows: int
    blank_rows: int
    encoding_label: str | None
    encoding_notice: str | None
    delimiter: str | None
    sheet: str | None
    delimiter_char: str = ","
    row_column: int | None = None
    original_rows: frozenset[int] = frozenset()
    valid_rows: int = 0
    workbook_records: list[Record] | None = None  # a workbook's rows, read once
    # The sha256 of the first file the rows came from: this file's own, or for a fed-back
    # file the one its petsync_origin column names (see petsync.importer.provenance).
    origin: str = ""
    # A fed-back file read by identity: the petsync_row column that numbers its rows.
    identity_column: int | None = None
    # What is wrong with a row as a whole, by its row number in this file (a fed-back row
    # of no known origin, a formula cell with no saved value): such rows are rejected.
    problems: Mapping[int, tuple[FieldError, ...]] = field(default_factory=dict)
    # The numbers of the rows that fail their check: a dry run asks the journals of other
    # files whether a fix created them since.
    invalid_rows: frozenset[int] = frozenset()
    # The rows (by ``line``) whose cells failed their check: the write pass checks these
    # again for their errors, and takes every other row without problems as valid.
    failed_lines: frozenset[int] = frozenset()
    # The normalisations of the rows the write pass takes as valid, counted by the check
    # pass (a dry run reports them; the write pass does not check those rows again).
    normalisations: Mapping[str, int] = field(default_factory=dict)
    repeats: RepeatedRows | None = None  # rows repeating an earlier row, sent once
    allow_duplicates: bool = False
    header_row: int = 1  # the header's row number (rows above it are skipped)
    merged: MergedFill | None = None  # a workbook's merged cells below the header

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

    def carried_as_sent(self, row: SheetRow, pet: PetContent) -> list[str]:
        """:meth:`carried` with the field cells replaced by ``pet``, the pet as a fix file
        sent it (so the first file's accepted row shows the pet that exists)."""
        cells = self.carried(row)
        name, category, status = pet
        sent = {"name": name, "categoryId": str(category), "status": status or ""}
        for position, index in enumerate(i for i in self.columns.carried if i < self.width):
            field_name = self.columns.field_at(index)
            if field_name is not None:
                cells[position] = sent[field_name]
        return cells

    def problems_of(self, row: SheetRow) -> tuple[FieldError, ...]:
        """What rejects ``row`` as a whole, before its cells are checked."""
        return self.problems.get(row.line, ()) if self.problems else ()

    def repeats_row(self, row: SheetRow) -> int | None:
        """The earlier row that ``row`` repeats when repeats are not sent, else None."""
        if self.allow_duplicates or self.repeats is None:
            return None
        return self.repeats.first_of(row.line)

    def passed(self, row: SheetRow) -> bool:
        """True if ``row`` passed the check pass and nothing rejects it as a whole: its
        :meth:`validate` would find no error (the file's bytes are the same, see
        :meth:`reopen`), so a later pass need not check it again."""
        return row.line not in self.failed_lines and not self.problems_of(row)

    def validate(self, row: SheetRow) -> Validated:
        """Check ``row``: its problems as a whole, then its cells."""
        return validate_row(row.cells, self.columns, self.width, row.cut, self.problems_of(row))

    def close(self) -> None:
        """Remove the working files of the check (the index of repeated rows)."""
        if self.repeats is not None:
            self.repeats.close()

    def original_number(self, row: SheetRow) -> int:
        """The row's number in the first sheet it came from: its ``petsync_row``, else its own.

        So a rejected row keeps its number through any number of rounds of fixing. A
        fed-back row with no ``petsync_row`` has none: a negative number (see
        :func:`~petsync.importer.sheets.sheet.identity_number`).
        """
        if self.identity_column is not None:
            return row.number
        if self.row_column is not None and self.row_column < len(row.cells):
            text = row.cells[self.row_column].strip()
            if text.isdigit():
                return int(text)
        return row.number

    def carried(self, row: SheetRow) -> list[str]:
        """The cells of ``row`` under :attr:`carried_header`, blank where the row is short."""
        cells, width = row.cells, self.width
        return [cells[i] if i < len(cells) else "" for i in self.columns.carried if i < width]

    @contextmanager
    def reopen(self) -> Iterator[Spreadsheet]:
        """Open the file again for a later pass; stop if its bytes changed since the check.

        A workbook is not read again: its rows, read once by the check, are served again.
        """
        if self.workbook_records is not None:
            from petsync.importer.sheets.workbook import reopen_workbook

            again = reopen_workbook(self.path, self.sha256, self.sheet, self.workbook_records)
            again.use_header_row(self.header_row)
            # A row whose only cells could not be read is a row (rejected), not a blank one.
            again.cell_problems = {line: [] for line in self.problems}
            again.identity_column = self.identity_column
            yield again
            return
        with open_spreadsheet(self.path, self.options) as sheet:
            if sheet.sha256 != self.sha256:
                raise InputError(
                    f"{self.path} changed while the import was running; re-run the same "
                    "command once nobody is editing it"
                )
            sheet.use_header_row(self.header_row)
            sheet.identity_column = self.identity_column
            yield sheet


def check_input(config: ImportConfig, stop: StopRequest | None = None) -> CheckedInput:
    """Read and match the header, then read every row once (a malformed file raises here).

    Besides validating, the pass finds rows repeated inside the sheet, and in a fed-back
    file each row's identity (``petsync_origin`` and ``petsync_row``).
    """
    # A signal ends the check pass's read; the later passes run to write the outputs.
    options = dataclasses.replace(config.read_options, stop=stop)
    with open_spreadsheet(config.path, options) as sheet:
        choose_header(sheet, config.mappings, config.header_row)
        merged = fill_merged_cells(sheet, config.merged_cells)
        columns = with_category_map(
            resolve_columns(sheet.header, config.mappings, config.path), config.category_map
        )
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
        carried = columns.carried
        try:
            rows = valid = 0
            originals: set[int] = set()
            invalid: set[int] = set()  # rows failing their check (few: the reject file's)
            failed: set[int] = set()  # the same rows by line (every one of them)
            normalised: Counter[str] = Counter()  # of the valid rows
            normalised_by_identity: Counter[str] = Counter()  # of those not refused
            problems: dict[int, tuple[FieldError, ...]] = {}
            identity_problems: dict[int, tuple[FieldError, ...]] = {}
            valid_by_identity = 0
            for row in sheet.rows():
                rows += 1
                found = _cell_problems(sheet, row, columns)
                if found:
                    problems[row.line] = found
                if row_column is not None and row_column < len(row.cells):
                    text = row.cells[row_column].strip()
                    if text.isdigit():
                        originals.add(int(text))
                refused: tuple[FieldError, ...] = ()
                if identity is not None:
                    assert origin_column is not None
                    refused = identity.problems(row, _cell(row, origin_column))
                    if refused:
                        identity_problems[row.line] = refused
                result = validate_row(row.cells, columns, len(sheet.header), row.cut, found)
                if result.pet is None:
                    failed.add(row.line)
                    if not refused and row.number > 0:
                        invalid.add(row.number)
                    continue
                valid += 1
                if result.normalisations:
                    normalised.update(n.value for n in result.normalisations)
                if not refused:  # a refused row is no copy of anything: it is rejected
                    valid_by_identity += 1
                    if result.normalisations:
                        normalised_by_identity.update(n.value for n in result.normalisations)
                    repeats.see(row.line, row.cells, carried)
            repeats.finish()
            if not config.allow_duplicates:  # repeats are not sent: they are not to do
                valid -= repeats.count
                valid_by_identity -= repeats.count
            if identity is not None and identity.origin is None:
                # No row names its origin (a file of an older petsync, or every cell
                # cleared): read it as before, by its own bytes and its petsync_row.
                identity = None
            if identity is not None:
                valid = valid_by_identity
                normalised = normalised_by_identity
                for line, why in identity_problems.items():
                    problems[line] = problems.get(line, ()) + why
            return CheckedInput(
                path=config.path,
                options=config.read_options,  # later passes: no stop (outputs still get written)
                sha256=sheet.sha256,
                header=sheet.header,
                columns=columns,
                rows=rows,
                blank_rows=sheet.blank_rows,
                encoding_label=sheet.encoding_label,
                encoding_notice=sheet.encoding_notice,
                delimiter=sheet.delimiter_name,
                sheet=sheet.sheet,
                delimiter_char=sheet.delimiter or ",",
                row_column=row_column,
                original_rows=frozenset(originals),
                valid_rows=valid,
                workbook_records=sheet.cached_records,
                origin=sheet.sha256 if identity is None else identity.origin or sheet.sha256,
                identity_column=row_column if identity is not None else None,
                problems=problems,
                invalid_rows=frozenset(invalid),
                failed_lines=frozenset(failed),
                normalisations=dict(normalised),
                repeats=repeats,
                allow_duplicates=config.allow_duplicates,
                header_row=sheet.header_row,
                merged=merged,
            )
        except BaseException:
            repeats.close()
            raise


def _cell(row: SheetRow, column: int) -> str:
    return row.cells[column] if column < len(row.cells) else ""


def _cell_problems(sheet: Spreadsheet, row: SheetRow, columns: ColumnMap) -> tuple[FieldError, ...]:
    """Cells the reader could not read as the sheet shows them (a workbook's formula without
    a value, a number past 2**53 held only as a double)."""
    if not sheet.cell_problems:
        return ()
    found = []
    for column, why in sheet.cell_problems.get(row.line, ()):
        title = sheet.header[column] if column < len(sheet.header) else ""
        where = f"cell {column_letters(column)}{row.line}" + (f" ({title})" if title else "")
        code = ErrorCode(cell_problem_code(why))
        found.append(FieldError(code, columns.field_at(column), f"{where} {why}"))
    return tuple(found)


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
