"""Reading spreadsheets as rows of text, numbered as a person sees them.

Every cell comes out as text: no type guessing, so ``NA``, ``None`` and ``null`` stay names.
Row numbers are the spreadsheet's own (the header is row 1), also when a quoted CSV cell
spans several lines. Rows whose cells are all blank are skipped and counted. A cell over
:data:`CELL_LIMIT` characters is cut (:class:`CutCell`): its row is rejected, not the file.

:func:`open_spreadsheet` opens CSV through :mod:`petsync.importer.sheets.csv_sheet` (encoding,
delimiter, a reader whose memory is bounded whatever the line length) and workbooks
(``.xlsx``, ``.xlsm``, ``.xls``, ``.xlsb``, ``.ods``) through
:mod:`petsync.importer.sheets.workbook` (calamine, cached values, read once). csv, decoding and
workbook errors never leave those modules: they become
:class:`~petsync.core.errors.InputError` naming the file and the row.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from petsync.core.errors import InputError
from petsync.core.interface import CELL_LIMIT as CELL_LIMIT  # read here by callers
from petsync.core.interface import ROW_CELL_LIMIT, ROW_CHAR_LIMIT
from petsync.core.settings_table import HEADER_ROW
from petsync.core.stop import StopRequest as StopRequest  # read here by the readers
from petsync.core.wording import Said
from petsync.importer.sheets.excel_safe import unescape_row

logger = logging.getLogger(__name__)

SpreadsheetKind = Literal["csv", "workbook"]

DELIMITERS: dict[str, str] = {",": "comma", ";": "semicolon", "\t": "tab"}
DELIMITER_NAMES: dict[str, str] = {
    "comma": ",",
    ",": ",",
    "semicolon": ";",
    ";": ";",
    "tab": "\t",
    "\\t": "\t",
    "\t": "\t",
}
WORKBOOK_SUFFIXES = frozenset({".xlsx", ".xlsm", ".xls", ".xlsb", ".ods"})
# A column that only petsync writes; its presence marks a file petsync wrote, whose cells
# carry the Excel-safe prefix (see petsync.importer.sheets.excel_safe).
PETSYNC_MARKER_COLUMN = "petsync_row"
# Beside it in the files petsync writes: the sha256 of the first file each row came from.
# With petsync_row it is the row's identity through every round of fixing.
PETSYNC_ORIGIN_COLUMN = "petsync_origin"
CHUNK = 1 << 20
# A cell over CELL_LIMIT characters (petsync.core.interface) rejects its row
# (cell_too_long); the reader keeps only its first CUT_KEEP characters. So does a row over
# ROW_CELL_LIMIT cells (row_too_wide) or ROW_CHAR_LIMIT characters (row_too_long).
CUT_KEEP = 1_000
# Put after the start of a cut cell; a petsync-written file holding it is rejected again.
CUT_NOTE = " [petsync: cell cut: too long]"


@dataclass(frozen=True)
class ReadOptions:
    """How to read a spreadsheet; None means detect. ``stop`` ends a long read at a signal."""

    sheet: str | None = None
    encoding: str | None = None
    delimiter: str | None = None
    stop: StopRequest | None = field(default=None, compare=False, repr=False)


CutKind = Literal["cell", "row_cells", "row_chars"]


@dataclass(frozen=True)
class CutCell:
    """What a reader had to cut to keep a row's memory bounded: where, and how much.

    ``kind`` ``cell``: the cell at ``column`` is over :data:`CELL_LIMIT` characters
    (``length``); the row keeps its start and :data:`CUT_NOTE` in its place. ``row_cells``:
    the row has ``length`` cells, over :data:`ROW_CELL_LIMIT`; only the first are kept.
    ``row_chars``: the row holds ``length`` characters, over :data:`ROW_CHAR_LIMIT`; cells
    from ``column`` on keep only their start. Any of them rejects the row.
    """

    column: int  # 0-based
    length: int  # characters (or cells) in the file; -1 when only known to be over the limit
    kind: CutKind = "cell"


@dataclass(frozen=True)
class MergedRange:
    """A merged cell: rows as the sheet numbers them (1-based), columns 0-based, inclusive."""

    first_row: int
    first_column: int
    last_row: int
    last_column: int

    def __str__(self) -> str:
        """As a spreadsheet names it.

        >>> str(MergedRange(2, 1, 3, 1))
        'B2:B3'
        """
        return (
            f"{column_letters(self.first_column)}{self.first_row}:"
            f"{column_letters(self.last_column)}{self.last_row}"
        )


def column_letters(index: int) -> str:
    """A 0-based column index as a spreadsheet names it.

    >>> column_letters(0), column_letters(27)
    ('A', 'AB')
    """
    letters = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        letters = chr(ord("A") + rest) + letters
    return letters


# One row as a reader yields it: number (header = 1), cells, the cells it had to cut.
Record = tuple[int, tuple[str, ...], tuple["CutCell", ...]]


@dataclass(frozen=True)
class SheetRow:
    """One non-blank row: its number as a person sees it (header = 1) and its cells.

    ``cut`` lists the cells that were over :data:`CELL_LIMIT` characters and were cut.
    In a fed-back file read by identity (:attr:`Spreadsheet.identity_column`), ``number``
    is the row's number in the first file (its ``petsync_row``; negative when it has
    none) and ``line`` its own row number in this file; elsewhere both are the same.
    """

    number: int
    cells: tuple[str, ...]
    cut: tuple[CutCell, ...] = ()
    physical: int | None = None

    @property
    def line(self) -> int:
        """The row's number in this file, as a person sees it."""
        return self.number if self.physical is None else self.physical


class Spreadsheet:
    """An open spreadsheet: header, detected settings and a one-pass row iterator.

    ``encoding`` and ``delimiter`` are what was used (None for .xlsx); ``encoding_notice``
    says when cp1252 was guessed; ``sha256`` fingerprints the file's bytes;
    ``petsync_written`` is True for files petsync wrote (their cells are unescaped);
    ``blank_rows`` counts the blank rows skipped so far by :meth:`rows`.

    >>> with open_spreadsheet(Path("pets.csv")) as sheet:        # doctest: +SKIP
    ...     for row in sheet.rows():
    ...         print(row.number, row.cells)
    """

    def __init__(
        self,
        path: Path,
        kind: SpreadsheetKind,
        sha256: str,
        *,
        encoding: str | None = None,
        encoding_label: str | None = None,
        encoding_notice: Said | None = None,
        delimiter: str | None = None,
        sheet: str | None = None,
    ) -> None:
        self.path = path
        self.kind: SpreadsheetKind = kind
        self.sha256 = sha256
        self.encoding = encoding
        self.encoding_label = encoding_label
        self.encoding_notice = encoding_notice
        self.delimiter = delimiter
        self.sheet = sheet
        self.header: tuple[str, ...] = ()
        self.petsync_written = False
        # Set by the import for a fed-back file whose rows carry their identity: rows are
        # then numbered by this column (petsync_row), as in the first file.
        self.identity_column: int | None = None
        self.blank_rows = 0
        # Cells that cannot be read as the sheet shows them (a formula with no saved
        # value), by row number: (0-based column, why).
        self.cell_problems: dict[int, list[tuple[int, str]]] = {}
        self._records: Iterator[Record] = iter(())
        self._leading: list[Record] = []  # the rows read ahead for the header (see start)
        self.header_row = 1  # the header's row number: rows above it are skipped
        # A workbook's rows, read once when it was opened (None for CSV, which streams),
        # and the merged ranges of its sheet, read then too.
        self.cached_records: list[Record] | None = None
        self.merged_ranges: list[MergedRange] = []
        self._closers: list[Callable[[], object]] = []

    def __enter__(self) -> Spreadsheet:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def add_closer(self, closer: Callable[[], object]) -> None:
        """Call ``closer`` when the spreadsheet is closed (the reader's open file)."""
        self._closers.append(closer)

    def close(self) -> None:
        for closer in self._closers:
            closer()
        self._closers.clear()

    @property
    def delimiter_name(self) -> str | None:
        return None if self.delimiter is None else DELIMITERS.get(self.delimiter, self.delimiter)

    def rows(self) -> Iterator[SheetRow]:
        """Yield the rows after the header, skipping (and counting) all-blank ones."""
        if len(self._leading) > 1:  # read ahead for a header that stayed on its row
            self._records = itertools.chain(self._leading[1:], self._records)
            self._leading = self._leading[:1]
        for number, cells, cut in self._records:
            if not cut and not "".join(cells).strip() and number not in self.cell_problems:
                self.blank_rows += 1
                continue
            if self.petsync_written:
                cells = tuple(unescape_row(cells))
                # A cell cut by an earlier round and not replaced is still too long.
                cut = cut or tuple(
                    CutCell(i, -1) for i, cell in enumerate(cells) if cell.endswith(CUT_NOTE)
                )
            if self.identity_column is not None:
                identity = identity_number(cells, self.identity_column, number)
                yield SheetRow(identity, cells, cut, number)
            else:
                yield SheetRow(number, cells, cut)

    def start(self, records: Iterator[Record]) -> None:
        """Take row 1 as the header from ``records``; the rest are the rows (for the readers).

        The import may choose another header row after this (:meth:`leading_rows`,
        :meth:`use_header_row`): row 1 is only checked once it is used as the header.
        """
        first = next(records, None)
        if first is None:
            raise InputError(f"{self.path}: the file is empty; row 1 must be the header row")
        self._leading = [first]
        self._records = records
        self._set_header(first, check=False)

    def leading_rows(self, count: int) -> list[Record]:
        """The first rows of the sheet (at most ``count``, numbered as the sheet shows them,
        header candidates), read once and kept for :meth:`use_header_row`."""
        while len(self._leading) < count and self._leading[-1][0] < count:
            record = next(self._records, None)
            if record is None:
                break
            self._leading.append(record)
        return [record for record in self._leading if record[0] <= count]

    def use_header_row(self, number: int) -> None:
        """Make row ``number`` the header: the rows above it are skipped, not read as rows.

        Row numbers stay the sheet's own. A row past :meth:`leading_rows` is read up to.
        """
        while self._leading[-1][0] < number:
            record = next(self._records, None)
            if record is None:
                raise InputError(
                    f"{self.path}: "
                    + HEADER_ROW.given(number)
                    + f": the sheet ends at row {self._leading[-1][0]}"
                )
            self._leading = [record]  # rows above a stated header are not kept
        index = next((i for i, r in enumerate(self._leading) if r[0] >= number), 0)
        header = self._leading[index]
        if header[0] != number:  # a blank row a CSV reader does not yield
            raise InputError(
                f"{self.path}: " + HEADER_ROW.given(number) + f": row {number} is blank"
            )
        self._set_header(header, check=True)
        self._records = itertools.chain(self._leading[index + 1 :], self._records)
        self._leading = [header]
        self.header_row = number

    def _set_header(self, record: Record, *, check: bool) -> None:
        number, header, cut = record
        row = f"row {number}"
        if cut and check:
            raise InputError(
                f"{self.path}: a header cell is over {CELL_LIMIT} characters; {row} must be the "
                "header row (name, categoryId, status)"
            )
        while header and not header[-1].strip():
            header = header[:-1]
        if not header and check:
            raise InputError(
                f"{self.path}: {row} is blank; {row} must be the header row "
                "(name, categoryId, status)"
            )
        self.petsync_written = self.kind == "csv" and PETSYNC_MARKER_COLUMN in header
        self.header = tuple(unescape_row(header)) if self.petsync_written else header


def identity_number(cells: Sequence[str], column: int, line: int) -> int:
    """A fed-back row's number in the first file: its ``petsync_row``, else ``-line``.

    A row without a usable ``petsync_row`` (one a person added) gets a negative number,
    which no row of a first file has; the import rejects it.

    >>> identity_number(["Rex", " 7 "], 1, 2), identity_number(["Rex", ""], 1, 3)
    (7, -3)
    """
    text = cells[column].strip() if column < len(cells) else ""
    if text.isdigit() and len(text) <= 18 and int(text) >= 2:
        return int(text)
    return -line


def cut_cells(cells: Sequence[str]) -> tuple[tuple[str, ...], tuple[CutCell, ...]]:
    """A row held whole in memory (a workbook's), bounded as the CSV reader bounds it.

    Cells over :data:`CELL_LIMIT` are cut to their start and :data:`CUT_NOTE`; cells past
    :data:`ROW_CELL_LIMIT` are dropped; past :data:`ROW_CHAR_LIMIT` characters in all,
    the rest of the cells keep only their start. Each cut is noted (:class:`CutCell`).

    >>> cut_cells(["Rex", "x" * (CELL_LIMIT + 1)])[1]
    (CutCell(column=1, length=131073, kind='cell'),)
    """
    width = len(cells)
    # The usual row: a few cells, none too long, so the row cannot be either.
    if max(map(len, cells), default=0) <= CELL_LIMIT and (
        width <= _ALWAYS_SHORT
        or (width <= ROW_CELL_LIMIT and sum(map(len, cells)) <= ROW_CHAR_LIMIT)
    ):
        return tuple(cells), ()
    total = sum(map(len, cells))
    cut: list[CutCell] = []
    kept: list[str] = []
    used = 0
    for i, cell in enumerate(cells[:ROW_CELL_LIMIT]):
        if len(cell) > CELL_LIMIT:
            cut.append(CutCell(i, len(cell)))
            cell = cell[:CUT_KEEP] + CUT_NOTE
        elif used + len(cell) > ROW_CHAR_LIMIT and len(cell) > CUT_KEEP:
            cell = cell[:CUT_KEEP] + CUT_NOTE
        used += len(cell)
        kept.append(cell)
    if total > ROW_CHAR_LIMIT:
        cut.append(CutCell(_first_over(cells), total, "row_chars"))
    if width > ROW_CELL_LIMIT:
        cut.append(CutCell(ROW_CELL_LIMIT, width, "row_cells"))
    return tuple(kept), tuple(cut)


# Rows of at most this many cells, none over CELL_LIMIT, are within ROW_CHAR_LIMIT.
_ALWAYS_SHORT = ROW_CHAR_LIMIT // CELL_LIMIT


def _first_over(cells: Sequence[str]) -> int:
    """The first cell that takes a row past :data:`ROW_CHAR_LIMIT` characters."""
    used = 0
    for i, cell in enumerate(cells):
        used += len(cell)
        if used > ROW_CHAR_LIMIT:
            return i
    return len(cells)
