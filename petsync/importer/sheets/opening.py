"""Which reader reads a spreadsheet: a workbook by its suffix, anything else as CSV.

The file is opened once, here, and proven a regular file within its bound; the reader it
goes to reads that one descriptor, not the name again, so a file swapped in at the name
meanwhile is not what is read. (A workbook's merged ranges, read after its rows, come from
the file opened and checked again: :mod:`.merged_ranges`.)
"""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO

from petsync.core.errors import InputError
from petsync.core.interface import SPREADSHEET_FILE_LIMIT
from petsync.core.reading import open_regular
from petsync.core.settings_table import DELIMITER, ENCODING, SHEET
from petsync.importer.sheets.csv_sheet import open_csv
from petsync.importer.sheets.sheet import WORKBOOK_SUFFIXES, ReadOptions, Spreadsheet, StopRequest


def open_spreadsheet(path: Path, options: ReadOptions | None = None) -> Spreadsheet:
    """Open a CSV file or a workbook, read its header and detect how to read the rest."""
    options = options or ReadOptions()
    source = open_input(path, options.stop)  # what the path is, first (exit 2 if no file)
    try:
        if path.suffix.lower() in WORKBOOK_SUFFIXES:
            if options.encoding or options.delimiter:
                raise InputError(
                    f"{path}: "
                    + ENCODING
                    + " and "
                    + DELIMITER
                    + " apply to CSV files only, not to workbooks"
                )
            from petsync.importer.sheets.workbook import open_workbook  # not for a CSV

            return open_workbook(source, path, options.sheet)
        if options.sheet:
            raise InputError(
                f"{path}: " + SHEET + " applies to workbooks (.xlsx, .ods...), not to CSV"
            )
        return open_csv(source, path, options)
    except BaseException:
        source.close()
        raise


def open_input(path: Path, stop: StopRequest | None = None) -> BinaryIO:
    """A spreadsheet opened for reading, once proven a regular file within
    :data:`~petsync.core.interface.SPREADSHEET_FILE_LIMIT` bytes (a FIFO or ``/dev/zero``
    is exit 2, naming it); each read looks at ``stop`` first."""
    return open_regular(path, "spreadsheet", limit=SPREADSHEET_FILE_LIMIT, stop=stop)
