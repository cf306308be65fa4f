"""Which reader opens a spreadsheet: a workbook by its suffix, anything else as CSV."""

from __future__ import annotations

from pathlib import Path

from petsync.core.errors import InputError
from petsync.importer.sheets.csv_sheet import open_csv
from petsync.importer.sheets.sheet import WORKBOOK_SUFFIXES, ReadOptions, Spreadsheet, open_input
from petsync.importer.sheets.workbook import open_workbook


def open_spreadsheet(path: Path, options: ReadOptions | None = None) -> Spreadsheet:
    """Open a CSV file or a workbook, read its header and detect how to read the rest."""
    options = options or ReadOptions()
    open_input(path).close()  # what the path is, before any reader opens it (exit 2 if no file)
    if path.suffix.lower() in WORKBOOK_SUFFIXES:
        if options.encoding or options.delimiter:
            raise InputError(
                f"{path}: --encoding and --delimiter apply to CSV files only, not to workbooks"
            )
        return open_workbook(path, options.sheet, options.stop)
    if options.sheet:
        raise InputError(f"{path}: --sheet applies to workbooks (.xlsx, .ods...), not to CSV")
    return open_csv(path, options)
