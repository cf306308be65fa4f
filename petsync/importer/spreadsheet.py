"""Reading spreadsheets (CSV and .xlsx) as rows of text, numbered as a person sees them.

Every cell comes out as text: no type guessing, so ``NA``, ``None`` and ``null`` stay names.
Row numbers are the spreadsheet's own (the header is row 1), also when a quoted CSV cell
spans several lines. Rows whose cells are all blank are skipped and counted.

CSV encoding, first rule that applies:

1. ``encoding=`` given (``--encoding``): decode strictly with it (a UTF-8 BOM is still
   dropped when the encoding is UTF-8).
2. A UTF-8 byte-order mark: UTF-8, BOM removed. A UTF-16 BOM: UTF-16. NUL bytes without a
   BOM (UTF-16 that lost its mark) stop the read with the ``--encoding`` to pass.
3. The whole file decodes as strict UTF-8: UTF-8.
4. Otherwise cp1252 (what Excel on Windows writes), with a notice for the summary; a byte
   cp1252 does not define stops the read. Replacement characters are never produced.

The CSV delimiter is comma, semicolon or tab, detected from the header line (outside
quotes): exactly one of them present wins, none means a one-column file (comma), several
is ambiguous and stops with a hint to pass ``--delimiter``.

.xlsx files are read with openpyxl in read-only mode with ``data_only=True``: the cached
value of each cell, never its formula. Values become text by this rule: text as it is;
whole numbers without a decimal point (``12``, and ``12.0`` stored as a float gives
``12``) as long as they are below 2**53 in magnitude, where doubles stop being exact;
other numbers in Python's shortest round-trip form (``12.5``, ``1e+20``); booleans
``TRUE``/``FALSE``; dates ``2024-03-01``, date-times ``2024-03-01 14:30:00``, times
``14:30:00``; an empty cell or a formula without a cached value is blank. Number formats
are not applied (a cell showing ``007`` that holds the number 7 reads ``7``): store
identifiers as text cells in Excel.

csv, decoding and openpyxl errors never leave this module: they become
:class:`~petsync.core.errors.InputError` naming the file and the row.
"""

from __future__ import annotations

import codecs
import csv
import datetime as dt
import hashlib
import logging
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import IO, Any, Literal

from petsync.core.errors import InputError
from petsync.importer.excel_safe import unescape_row

logger = logging.getLogger(__name__)

SpreadsheetKind = Literal["csv", "xlsx"]

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
XLSX_SUFFIXES = frozenset({".xlsx", ".xlsm"})
# A column that only petsync writes; its presence marks a file petsync wrote, whose cells
# carry the Excel-safe prefix (see petsync.importer.excel_safe).
PETSYNC_MARKER_COLUMN = "petsync_row"
_CHUNK = 1 << 20
# Characters one cell may hold (Python's csv default field limit, 128 Ki). A longer cell
# rejects its row (cell_too_long); the reader keeps only its first CUT_KEEP characters.
CELL_LIMIT = 131_072
CUT_KEEP = 1_000
# Put after the start of a cut cell; a petsync-written file holding it is rejected again.
CUT_NOTE = " [petsync: cell cut, it was too long]"
_MAX_EXACT_FLOAT = 2**53
_UTF8_BOM = codecs.BOM_UTF8
_UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)


@dataclass(frozen=True)
class ReadOptions:
    """How to read a spreadsheet; None means detect."""

    sheet: str | None = None
    encoding: str | None = None
    delimiter: str | None = None


@dataclass(frozen=True)
class CutCell:
    """A cell too long to keep (over :data:`CELL_LIMIT` characters): where, and how long.

    The row keeps the start of the cell and :data:`CUT_NOTE` in its place.
    """

    column: int  # 0-based
    length: int  # characters in the file; -1 when only known to be over the limit


@dataclass(frozen=True)
class SheetRow:
    """One non-blank row: its number as a person sees it (header = 1) and its cells.

    ``cut`` lists the cells that were over :data:`CELL_LIMIT` characters and were cut.
    """

    number: int
    cells: tuple[str, ...]
    cut: tuple[CutCell, ...] = ()


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
        encoding_notice: str | None = None,
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
        self.blank_rows = 0
        self._records: Iterator[tuple[int, tuple[str, ...]]] = iter(())
        self._closers: list[Any] = []

    def __enter__(self) -> Spreadsheet:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        for closer in self._closers:
            closer()
        self._closers.clear()

    @property
    def delimiter_name(self) -> str | None:
        return None if self.delimiter is None else DELIMITERS.get(self.delimiter, self.delimiter)

    def rows(self) -> Iterator[SheetRow]:
        """Yield the rows after the header, skipping (and counting) all-blank ones."""
        for number, cells in self._records:
            if all(not cell.strip() for cell in cells):
                self.blank_rows += 1
                continue
            if self.petsync_written:
                cells = tuple(unescape_row(cells))
            yield SheetRow(number, cells)

    def _start(self, records: Iterator[tuple[int, tuple[str, ...]]]) -> None:
        first = next(records, None)
        if first is None:
            raise InputError(f"{self.path}: the file is empty; row 1 must be the header row")
        header = first[1]
        while header and not header[-1].strip():
            header = header[:-1]
        if not header:
            raise InputError(
                f"{self.path}: row 1 is blank; row 1 must be the header row "
                "(name, categoryId, status)"
            )
        self.petsync_written = self.kind == "csv" and PETSYNC_MARKER_COLUMN in header
        self.header = tuple(unescape_row(header)) if self.petsync_written else header
        self._records = records


def open_spreadsheet(path: Path, options: ReadOptions | None = None) -> Spreadsheet:
    """Open a CSV or .xlsx file, read its header and detect how to read the rest."""
    options = options or ReadOptions()
    suffix = path.suffix.lower()
    if suffix == ".xls":
        raise InputError(
            f"{path}: the old .xls format cannot be read; save it as .xlsx or CSV in Excel"
        )
    if suffix in XLSX_SUFFIXES:
        if options.encoding or options.delimiter:
            raise InputError(
                f"{path}: --encoding and --delimiter apply to CSV files only, not to .xlsx"
            )
        return _open_xlsx(path, options.sheet)
    if options.sheet:
        raise InputError(f"{path}: --sheet applies to .xlsx files only, not to CSV")
    return _open_csv(path, options)


# -- CSV -------------------------------------------------------------------------------------


def _open_csv(path: Path, options: ReadOptions) -> Spreadsheet:
    sha256, encoding, label, notice = _fingerprint_and_detect(path, options.encoding)
    header_text = _read_header_text(path, encoding)
    if options.delimiter is not None:
        delimiter = parse_delimiter(options.delimiter)
    else:
        delimiter = detect_delimiter(header_text, path)
    sheet = Spreadsheet(
        path,
        "csv",
        sha256,
        encoding=encoding,
        encoding_label=label,
        encoding_notice=notice,
        delimiter=delimiter,
    )
    handle = _open_text(path, encoding)
    sheet._closers.append(handle.close)
    try:
        sheet._start(_csv_records(handle, delimiter, path))
    except BaseException:
        sheet.close()
        raise
    return sheet


def parse_delimiter(value: str) -> str:
    """Turn a ``--delimiter`` value (``,``, ``;``, ``tab``, ``semicolon``...) into a character."""
    found = DELIMITER_NAMES.get(value) or DELIMITER_NAMES.get(value.strip().lower())
    if found is None:
        raise InputError(
            f"--delimiter {value!r} is not supported; use comma, semicolon or tab "
            "(or the characters , ; \\t)"
        )
    return found


def detect_delimiter(header_line: str, path: Path) -> str:
    """The delimiter used in a header line, counting only characters outside quotes."""
    present: list[str] = []
    in_quotes = False
    for char in header_line:
        if char == '"':
            in_quotes = not in_quotes
        elif not in_quotes and char in DELIMITERS and char not in present:
            present.append(char)
    if not present:
        return ","  # a single column: any delimiter reads it the same way
    if len(present) == 1:
        return present[0]
    names = " and ".join(DELIMITERS[c] for c in sorted(present, key=list(DELIMITERS).index))
    raise InputError(
        f"{path}: cannot tell the delimiter: the header row holds both {names}. "
        "Pass --delimiter comma, --delimiter semicolon or --delimiter tab"
    )


def _fingerprint_and_detect(path: Path, forced: str | None) -> tuple[str, str, str, str | None]:
    """The sha256 of the bytes and the encoding (codec, label, notice), checked whole.

    The whole file is decoded here, strictly, so a bad byte stops the import before any
    row is read, with its line and byte offset.
    """
    if forced is not None:
        try:
            codec = codecs.lookup(forced).name
        except LookupError as exc:
            raise InputError(
                f"--encoding {forced!r} is not an encoding Python knows; "
                "try utf-8, cp1252, latin-1 or utf-16"
            ) from exc
        # A UTF-8 BOM is dropped even when the person names UTF-8.
        encoding = "utf-8-sig" if codec == "utf-8" else codec
        sha256, first, error = _decode_all(path, encoding)
        if error is not None:
            raise _decode_error(path, codec, error)
        return sha256, encoding, codec, None
    sha256, first, error = _decode_all(path, "utf-8")
    head = _head(path)
    if first.startswith(b"PK\x03\x04"):
        raise InputError(
            f"{path}: this is a zip file (an .xlsx workbook?), not CSV; "
            "give it the .xlsx suffix to read it as a workbook"
        )
    if first.startswith(_UTF16_BOMS):
        _, _, error = _decode_all(path, "utf-16")
        if error is not None:
            raise _decode_error(path, "utf-16", error)
        return sha256, "utf-16", "utf-16 (BOM)", None
    if b"\x00" in head:
        raise InputError(
            f"{path}: the file holds NUL bytes, as UTF-16 text without a byte-order mark "
            "does; pass --encoding utf-16-le (or utf-16-be), or save it as CSV UTF-8"
        )
    if first.startswith(_UTF8_BOM):
        if error is not None:
            raise _decode_error(path, "utf-8", error)
        return sha256, "utf-8-sig", "utf-8 (BOM)", None
    if error is None:
        return sha256, "utf-8", "utf-8", None
    _, _, cp_error = _decode_all(path, "cp1252")
    if cp_error is not None:
        raise _decode_error(path, "utf-8 nor cp1252", cp_error)
    notice = (
        f"{path.name} is not valid UTF-8 (line {error[0]}, byte offset {error[1]}); read it "
        "as cp1252 (Windows Western European). If names look wrong, pass --encoding"
    )
    return sha256, "cp1252", "cp1252", notice


def _head(path: Path) -> bytes:
    try:
        with path.open("rb") as handle:
            return handle.read(4096)
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc


def _decode_all(path: Path, encoding: str) -> tuple[str, bytes, tuple[int, int, str] | None]:
    """(sha256, first bytes, first error as (line, byte offset, bytes shown) or None)."""
    digest = hashlib.sha256()
    decoder = codecs.getincrementaldecoder(encoding)("strict")
    error: tuple[int, int, str] | None = None
    offset = 0
    lines = 1
    first = b""
    try:
        with path.open("rb") as handle:
            while True:
                chunk = handle.read(_CHUNK)
                if not offset:
                    first = chunk[:4]
                digest.update(chunk)
                if error is None:
                    try:
                        lines += decoder.decode(chunk, final=not chunk).count("\n")
                    except UnicodeDecodeError as exc:
                        # Count the lines of the good part of this chunk for the message.
                        good = codecs.getincrementaldecoder(encoding)("replace")
                        lines += good.decode(chunk[: exc.start]).count("\n")
                        bad = exc.object[exc.start : exc.end]
                        error = (lines, offset + exc.start, repr(bytes(bad)))
                if not chunk:
                    break
                offset += len(chunk)
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc
    return digest.hexdigest(), first, error


def _decode_error(path: Path, encoding: str, error: tuple[int, int, str]) -> InputError:
    line, offset, shown = error
    return InputError(
        f"{path}, line {line} (byte offset {offset}): the bytes {shown} are not valid "
        f"{encoding}; pass --encoding with the file's real encoding (for example cp1252, "
        "latin-1 or utf-16)"
    )


def _open_text(path: Path, encoding: str) -> IO[str]:
    try:
        return path.open("r", encoding=encoding, errors="strict", newline="")
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc


def _read_header_text(path: Path, encoding: str) -> str:
    """The first logical line (a quoted header cell may span lines), at most 1 MiB."""
    text = ""
    with _open_text(path, encoding) as handle:
        try:
            for line in handle:
                text += line
                if text.count('"') % 2 == 0 or len(text) > _CHUNK:
                    break
        except UnicodeDecodeError as exc:  # proven decodable already; defensive
            raise InputError(f"{path}: cannot decode the header ({exc.reason})") from exc
    return text.rstrip("\r\n")


def _csv_records(
    handle: IO[str], delimiter: str, path: Path
) -> Iterator[tuple[int, tuple[str, ...]]]:
    # strict=True: an unclosed quote is an error at its row, not a cell that silently
    # swallows the rest of the file.
    reader = csv.reader(handle, delimiter=delimiter, strict=True)
    number = 0
    while True:
        try:
            record = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise InputError(
                f"{path}, row {number + 1} (line {reader.line_num}): the CSV is malformed "
                f"({exc}); check the quotes in that row: a cell with a quote or a "
                f"{DELIMITERS.get(delimiter, delimiter)} inside must be quoted, with quotes "
                'doubled ("")'
            ) from exc
        except UnicodeDecodeError as exc:  # proven decodable already; defensive
            raise InputError(f"{path}, row {number + 1}: cannot decode ({exc.reason})") from exc
        number += 1
        yield number, tuple(record)


# -- xlsx ------------------------------------------------------------------------------------


def _open_xlsx(path: Path, sheet_name: str | None) -> Spreadsheet:
    sha256 = _sha256(path)
    # openpyxl raises many kinds of exceptions for damaged files (zip, XML, KeyError):
    # this is the one place they become an InputError.
    try:
        import openpyxl

        with warnings.catch_warnings():
            # e.g. "Workbook contains no default style": harmless for reading values.
            warnings.simplefilter("ignore", UserWarning)
            workbook = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except Exception as exc:
        raise InputError(
            f"{path}: cannot open the workbook ({type(exc).__name__}: {exc}); "
            "check it opens in Excel and is saved as .xlsx"
        ) from exc
    try:
        if sheet_name is None:
            if not workbook.worksheets:
                raise InputError(f"{path}: the workbook has no worksheet")
            worksheet = workbook.worksheets[0]
        elif sheet_name in workbook.sheetnames:
            worksheet = workbook[sheet_name]
        else:
            names = ", ".join(repr(n) for n in workbook.sheetnames)
            raise InputError(f"{path}: no sheet named {sheet_name!r}; sheets found: {names}")
        sheet = Spreadsheet(path, "xlsx", sha256, sheet=str(worksheet.title))
        sheet._closers.append(workbook.close)
        sheet._start(_xlsx_records(worksheet, path))
    except BaseException:
        workbook.close()
        raise
    return sheet


def _xlsx_records(worksheet: Any, path: Path) -> Iterator[tuple[int, tuple[str, ...]]]:
    number = 0
    try:
        # read-only worksheets yield empty rows for gaps, so counting gives row numbers.
        for values in worksheet.iter_rows(min_row=1, values_only=True):
            number += 1
            cells = [render_cell(value) for value in values]
            while cells and not cells[-1]:
                cells.pop()
            yield number, tuple(cells)
    except InputError:
        raise
    except Exception as exc:
        raise InputError(
            f"{path}, row {number + 1}: cannot read the workbook ({type(exc).__name__}: "
            f"{exc}); check it opens in Excel and is saved as .xlsx"
        ) from exc


def render_cell(value: object) -> str:
    """The text of a cached .xlsx cell value (the rule is in the module docstring).

    >>> [render_cell(v) for v in (12, 12.0, 12.5, None, True, "007")]
    ['12', '12', '12.5', '', 'TRUE', '007']
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


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            while chunk := handle.read(_CHUNK):
                digest.update(chunk)
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc
    return digest.hexdigest()
