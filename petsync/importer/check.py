"""The check pass: read every row before anything is sent, and remember how it was read.

A malformed file stops here with :class:`~petsync.core.errors.InputError` and nothing
created. What the pass learnt (the file's sha256, its columns, how it was decoded) is a
:class:`CheckedInput`. The send and write passes open the file again through
:meth:`CheckedInput.reopen`, which refuses a file whose bytes changed in between.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from petsync.core.errors import InputError
from petsync.core.models import NewPet
from petsync.importer.columns import ColumnMap, resolve_columns
from petsync.importer.config import ImportConfig
from petsync.importer.spreadsheet import (
    PETSYNC_MARKER_COLUMN,
    ReadOptions,
    Record,
    SheetRow,
    Spreadsheet,
    open_spreadsheet,
)
from petsync.importer.validation import validate_row

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

    def original_number(self, row: SheetRow) -> int:
        """The row's number in the first sheet it came from: its ``petsync_row``, else its own.

        So a rejected row keeps its number through any number of rounds of fixing.
        """
        if self.row_column is not None and self.row_column < len(row.cells):
            text = row.cells[self.row_column].strip()
            if text.isdigit():
                return int(text)
        return row.number

    def carried(self, row: SheetRow) -> list[str]:
        """The cells of ``row`` under :attr:`carried_header`, blank where the row is short."""
        cells = row.cells
        return [cells[i] if i < len(cells) else "" for i in self.columns.carried if i < self.width]

    @contextmanager
    def reopen(self) -> Iterator[Spreadsheet]:
        """Open the file again for a later pass; stop if its bytes changed since the check.

        A workbook is not read again: its rows, read once by the check, are served again.
        """
        if self.workbook_records is not None:
            from petsync.importer.workbook import reopen_workbook

            yield reopen_workbook(self.path, self.sha256, self.sheet, self.workbook_records)
            return
        with open_spreadsheet(self.path, self.options) as sheet:
            if sheet.sha256 != self.sha256:
                raise InputError(
                    f"{self.path} changed while the import was running; re-run the same "
                    "command once nobody is editing it"
                )
            yield sheet


def check_input(config: ImportConfig) -> CheckedInput:
    """Read and match the header, then read every row once (a malformed file raises here)."""
    with open_spreadsheet(config.path, config.read_options) as sheet:
        columns = resolve_columns(sheet.header, config.mappings, config.path)
        row_column = _row_column(sheet)
        rows = valid = 0
        originals: set[int] = set()
        for row in sheet.rows():
            rows += 1
            if row_column is not None and row_column < len(row.cells):
                text = row.cells[row_column].strip()
                if text.isdigit():
                    originals.add(int(text))
            if config.dry_run:  # the write pass validates; only a real run needs the count
                continue
            result = validate_row(row.cells, columns, len(sheet.header), row.cut)
            if result.pet is not None:
                valid += 1
        return CheckedInput(
            path=config.path,
            options=config.read_options,
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
        )


def _row_column(sheet: Spreadsheet) -> int | None:
    if not sheet.petsync_written:
        return None
    for index, title in enumerate(sheet.header):
        if title.strip() == PETSYNC_MARKER_COLUMN:
            return index
    return None
