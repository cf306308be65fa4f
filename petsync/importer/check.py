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
from petsync.importer.columns import ColumnMap, resolve_columns
from petsync.importer.config import ImportConfig
from petsync.importer.spreadsheet import ReadOptions, SheetRow, Spreadsheet, open_spreadsheet


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
        """The input's own columns that the output files repeat (``petsync_*`` ones dropped)."""
        return [self.header[i] for i in self.columns.carried]

    def carried(self, row: SheetRow) -> list[str]:
        """The cells of ``row`` under :attr:`carried_header`, blank where the row is short."""
        cells = row.cells
        return [cells[i] if i < len(cells) else "" for i in self.columns.carried if i < self.width]

    @contextmanager
    def reopen(self) -> Iterator[Spreadsheet]:
        """Open the file again for a later pass; stop if its bytes changed since the check."""
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
        rows = sum(1 for _ in sheet.rows())
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
        )
