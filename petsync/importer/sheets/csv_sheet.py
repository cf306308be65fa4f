"""CSV files: encoding and delimiter detection, and a reader whose memory stays bounded.

Encoding, first rule that applies:

1. ``encoding=`` given (``--encoding``): decode strictly with it (a UTF-8 BOM is still
   dropped when the encoding is UTF-8).
2. A UTF-8 byte-order mark: UTF-8, BOM removed. A UTF-16 BOM: UTF-16. NUL bytes without a
   BOM: UTF-16 that lost its mark, little- or big-endian by the side its NULs are on, if
   the whole file decodes so; else the read stops with the ``--encoding`` to pass.
3. The whole file decodes as strict UTF-8: UTF-8.
4. Otherwise cp1252 (what Excel on Windows writes), with a notice for the summary; a byte
   cp1252 does not define stops the read. Replacement characters are never produced.

The delimiter is comma, semicolon or tab, detected from the header line (outside quotes):
exactly one of them present wins, none means a one-column file (comma), several is
ambiguous and stops with a hint to pass ``--delimiter``.

Records are read by the csv module a line at a time, at most :data:`CELL_LIMIT` characters
of a record; a longer record is parsed here chunk by chunk, keeping only the start of each
cell over the limit (:class:`~petsync.importer.sheets.sheet.CutCell`), at most
``ROW_CELL_LIMIT`` cells, and only the start of the cells past ``ROW_CHAR_LIMIT``
characters (:mod:`petsync.core.interface`). So a 300 MB line, or a line of a million empty
cells, costs about a megabyte, and its row is rejected (``cell_too_long``,
``row_too_wide``, ``row_too_long``), not the whole file.
"""

from __future__ import annotations

import codecs
import csv
import hashlib
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

from petsync.core.errors import InputError
from petsync.core.interface import CELL_LIMIT, ROW_CELL_LIMIT, ROW_CHAR_LIMIT
from petsync.importer.sheets.csv_encoding import decode_error, utf16_order
from petsync.importer.sheets.sheet import (
    CHUNK,
    CUT_KEEP,
    CUT_NOTE,
    DELIMITER_NAMES,
    DELIMITERS,
    CutCell,
    ReadOptions,
    Record,
    Spreadsheet,
    StopRequest,
    open_input,
    open_text_input,
)

_UTF8_BOM = codecs.BOM_UTF8
_UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
# A physical line is read at most this many characters at a time.
LINE_CAP = CELL_LIMIT + 1
_LINE_END = re.compile(r"\r\n|\n|\r")


def open_csv(path: Path, options: ReadOptions) -> Spreadsheet:
    """Open a CSV file: fingerprint and decode it whole, detect the delimiter, read the header."""
    sha256, encoding, label, notice = _fingerprint_and_detect(path, options)
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
    handle = open_text_input(path, encoding, options.stop)
    sheet.add_closer(handle.close)
    try:
        sheet.start(_csv_records(handle, delimiter, path))
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


def _fingerprint_and_detect(path: Path, options: ReadOptions) -> tuple[str, str, str, str | None]:
    """The sha256 of the bytes and the encoding (codec, label, notice), checked whole.

    The whole file is decoded here, strictly, so a bad byte stops the import before any
    row is read, with its line and byte offset.
    """
    forced, stop = options.encoding, options.stop  # a signal ends the reads
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
        sha256, first, error = _decode_all(path, encoding, stop)
        if error is not None:
            raise decode_error(path, codec, error)
        return sha256, encoding, codec, None
    sha256, first, error = _decode_all(path, "utf-8", stop)
    head = _head(path)
    if first.startswith(b"PK\x03\x04"):
        raise InputError(
            f"{path}: this is a zip file (an .xlsx workbook?), not CSV; "
            "give it the .xlsx suffix to read it as a workbook"
        )
    if first.startswith(_UTF16_BOMS):
        _, _, error = _decode_all(path, "utf-16", stop)
        if error is not None:
            raise decode_error(path, "utf-16", error)
        return sha256, "utf-16", "utf-16 (BOM)", None
    if b"\x00" in head:
        # UTF-16 that lost its mark: text in Latin letters has its NULs on one side.
        order = utf16_order(head)
        if order is not None and _decode_all(path, order, stop)[2] is None:
            return sha256, order, f"{order} (no BOM)", None
        raise InputError(
            f"{path}: the file holds NUL bytes, as UTF-16 text without a byte-order mark "
            "does; pass --encoding utf-16-le (or utf-16-be), or save it as CSV UTF-8"
        )
    if first.startswith(_UTF8_BOM):
        if error is not None:
            raise decode_error(path, "utf-8", error)
        return sha256, "utf-8-sig", "utf-8 (BOM)", None
    if error is None:
        return sha256, "utf-8", "utf-8", None
    _, _, cp_error = _decode_all(path, "cp1252", stop)
    if cp_error is not None:
        raise decode_error(path, "utf-8 nor cp1252", cp_error)
    notice = (
        f"{path.name} is not valid UTF-8 (line {error[0]}, byte offset {error[1]}); read it "
        "as cp1252 (Windows Western European). If names look wrong, pass --encoding"
    )
    return sha256, "cp1252", "cp1252", notice


def _head(path: Path) -> bytes:
    try:
        with open_input(path) as handle:
            return handle.read(4096)
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc


def _decode_all(
    path: Path, encoding: str, stop: StopRequest | None = None
) -> tuple[str, bytes, tuple[int, int, str] | None]:
    """(sha256, first bytes, first error as (line, byte offset, bytes shown) or None)."""
    digest = hashlib.sha256()
    decoder = codecs.getincrementaldecoder(encoding)("strict")
    error: tuple[int, int, str] | None = None
    offset = 0
    lines = 1
    first = b""
    try:
        with open_input(path, stop) as handle:  # a regular file, each read after a stop check
            while True:
                chunk = handle.read(CHUNK)
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


def _read_header_text(path: Path, encoding: str) -> str:
    """The first logical line (a quoted header cell may span lines), at most about 1 MiB."""
    text = ""
    with open_text_input(path, encoding) as handle:
        try:
            while line := handle.readline(LINE_CAP):
                text += line
                if text.count('"') % 2 == 0 and line.endswith(("\n", "\r")):
                    break
                if len(text) > CHUNK:
                    break
        except UnicodeDecodeError as exc:  # proven decodable already; defensive
            raise InputError(f"{path}: cannot decode the header ({exc.reason})") from exc
    return text.rstrip("\r\n")


class _Oversized(Exception):
    """A record grew past the cell limit while the csv module was reading it."""


class _Lines:
    """Physical lines of a text stream, never more than LINE_CAP characters at a time.

    ``unread`` puts text back (what the slow path read past its record); ``lines`` counts
    the line ends handed out, for messages.
    """

    def __init__(self, handle: IO[str]) -> None:
        self._handle = handle
        self._carry = ""
        self.lines = 0

    def readline(self) -> str:
        if self._carry:
            match = _LINE_END.search(self._carry)
            if match is not None and (match.group() != "\r" or match.end() < len(self._carry)):
                line, self._carry = self._carry[: match.end()], self._carry[match.end() :]
            elif match is not None:  # a CR last: a CRLF split across reads, or a bare CR
                after = self._handle.read(1)
                line = self._carry + ("\n" if after == "\n" else "")
                self._carry = "" if after == "\n" else after
            else:
                line, self._carry = self._carry + self._handle.readline(LINE_CAP), ""
        else:
            line = self._handle.readline(LINE_CAP)
        if len(line) > LINE_CAP:
            line, self._carry = line[:LINE_CAP], line[LINE_CAP:] + self._carry
        if line.endswith(("\n", "\r")):
            self.lines += 1
        return line

    def read(self) -> str:
        if self._carry:
            text, self._carry = self._carry, ""
            return text
        return self._handle.read(CHUNK)

    def unread(self, text: str) -> None:
        self._carry = text + self._carry


class _Feed:
    """The csv module's input: lines of one record at a time, at most CELL_LIMIT characters.

    Past that it raises :class:`_Oversized`, keeping the record's lines in ``taken`` for the
    slow path; so the csv module never holds a field over the limit, nor a long line.
    """

    def __init__(self, lines: _Lines) -> None:
        self.lines = lines
        self.taken: list[str] = []
        self.size = 0

    def begin(self) -> None:
        self.taken, self.size = [], 0

    def __iter__(self) -> _Feed:
        return self

    def __next__(self) -> str:
        line = self.lines.readline()
        if not line:
            raise StopIteration
        self.taken.append(line)
        self.size += len(line)
        if self.size > CELL_LIMIT:
            raise _Oversized
        return line


def _csv_records(handle: IO[str], delimiter: str, path: Path) -> Iterator[Record]:
    # strict=True: an unclosed quote is an error at its row, not a cell that silently
    # swallows the rest of the file. Records over the cell limit are parsed by
    # _long_record, which keeps the start of each long cell only: memory stays bounded
    # whatever the length of a line or a cell.
    lines = _Lines(handle)
    feed = _Feed(lines)
    reader = csv.reader(feed, delimiter=delimiter, strict=True)
    number = 0
    while True:
        feed.begin()
        cut: tuple[CutCell, ...] = ()
        try:
            record = next(reader)
        except StopIteration:
            return
        except _Oversized:
            record, cut = _long_record("".join(feed.taken), lines, delimiter, path, number + 1)
        except csv.Error as exc:
            raise InputError(
                f"{path}, row {number + 1} (line {lines.lines}): the CSV is malformed "
                f"({exc}); check the quotes in that row: a cell with a quote or a "
                f"{DELIMITERS.get(delimiter, delimiter)} inside must be quoted, with quotes "
                'doubled ("")'
            ) from exc
        except UnicodeDecodeError as exc:  # proven decodable already; defensive
            raise InputError(f"{path}, row {number + 1}: cannot decode ({exc.reason})") from exc
        number += 1
        if len(record) > ROW_CELL_LIMIT:  # a short line of many empty cells
            cut = (CutCell(ROW_CELL_LIMIT, len(record), "row_cells"),)
            record = record[:ROW_CELL_LIMIT]
        yield number, tuple(record), cut


class _Cell:
    """One cell of a long record as it is read: its start (at most ``cap``) and its length."""

    def __init__(self, cap: int = CELL_LIMIT + 1) -> None:
        self.parts: list[str] = []
        self.kept = 0
        self.length = 0
        self.cap = cap

    def add(self, text: str) -> None:
        self.length += len(text)
        room = self.cap - self.kept
        if room > 0 and text:
            self.parts.append(text[:room])
            self.kept += min(room, len(text))


def _long_record(
    start: str, lines: _Lines, delimiter: str, path: Path, row: int
) -> tuple[list[str], tuple[CutCell, ...]]:
    """Parse one record longer than the cell limit, as the csv module would (strict).

    ``start`` is the record's text read so far; more comes from ``lines`` a chunk at a time
    and what follows the record is put back. Cells over the limit keep their first
    CUT_KEEP characters and CUT_NOTE; at most ROW_CELL_LIMIT cells are kept, and once the
    row is past ROW_CHAR_LIMIT characters each further cell keeps only its start. Each of
    those cuts is noted once.
    """
    cells: list[str] = []
    cut: list[CutCell] = []
    cell = _Cell()
    width = 0  # cells in the record, kept or not
    chars = 0  # characters in the record's cells
    over_at = -1  # the cell that took the row past ROW_CHAR_LIMIT
    buffer, i = start, 0
    counted = True  # the lines of ``start`` were counted as they were read
    state = "start"  # start | plain | quoted | quote (a quote inside a quoted cell)
    stops = re.compile(f"[{re.escape(delimiter)}\r\n]")
    skip = re.compile('["\r\n]')

    def end_cell() -> None:
        nonlocal cell, width, chars, over_at
        text = "".join(cell.parts)
        chars += cell.length
        if width < ROW_CELL_LIMIT:
            if cell.length > CELL_LIMIT:
                cut.append(CutCell(width, cell.length))
                text = text[:CUT_KEEP] + CUT_NOTE
            elif cell.length > len(text):  # cut by the row's budget
                text = text[:CUT_KEEP] + CUT_NOTE
            cells.append(text)
        width += 1
        if chars > ROW_CHAR_LIMIT and over_at < 0:
            over_at = width - 1
        cell = _Cell(CUT_KEEP + 1 if over_at >= 0 else CELL_LIMIT + 1)

    def done() -> tuple[list[str], tuple[CutCell, ...]]:
        if over_at >= 0:
            cut.append(CutCell(over_at, chars, "row_chars"))
        if width > ROW_CELL_LIMIT:
            cut.append(CutCell(ROW_CELL_LIMIT, width, "row_cells"))
        return cells, tuple(cut)

    while True:
        if i >= len(buffer):
            if not counted:
                lines.lines += buffer.count("\n")
            buffer, i, counted = lines.read(), 0, False
            if not buffer:  # end of file
                if state == "quoted":
                    raise InputError(
                        f"{path}, row {row} (line {lines.lines}): the CSV is malformed (a "
                        "quoted cell is never closed); check the quotes in that row"
                    )
                end_cell()
                return done()
        char = buffer[i]
        if state == "start" and width >= ROW_CELL_LIMIT:
            # Cells past the limit are counted, never kept: whole unquoted cells up to the
            # next quote or line end are counted in C (a million empty cells in one step).
            found = skip.search(buffer, i)
            span = buffer[i : found.start() if found else len(buffer)]
            last = span.rfind(delimiter)
            if last >= 0:
                ended = span.count(delimiter, 0, last + 1)
                width += ended
                chars += last + 1 - ended
                if chars > ROW_CHAR_LIMIT and over_at < 0:
                    over_at = width - 1
                i += last + 1
                continue
        if state == "start" and char == '"':
            state, i = "quoted", i + 1
        elif state in ("start", "plain"):
            found = stops.search(buffer, i)
            end = found.start() if found else len(buffer)
            cell.add(buffer[i:end])
            i, state = end, "plain"
            if found is not None:
                i = end + 1
                if found.group() == delimiter:
                    end_cell()
                    state = "start"
                else:
                    return _end(done, end_cell, lines, buffer, i, found.group(), counted)
        elif state == "quoted":
            end = buffer.find('"', i)
            cell.add(buffer[i : end if end >= 0 else len(buffer)])
            if end >= 0:
                state, i = "quote", end + 1
            else:
                i = len(buffer)
        else:  # after a quote inside a quoted cell
            if char == '"':
                cell.add('"')
                state, i = "quoted", i + 1
            elif char == delimiter:
                end_cell()
                state, i = "start", i + 1
            elif char in "\r\n":
                return _end(done, end_cell, lines, buffer, i + 1, char, counted)
            else:
                raise InputError(
                    f"{path}, row {row} (line {lines.lines}): the CSV is malformed ('"
                    f"{DELIMITERS.get(delimiter, delimiter)}' expected after '\"'); check the "
                    'quotes in that row: quotes inside a quoted cell must be doubled ("")'
                )


def _end(
    done: Callable[[], tuple[list[str], tuple[CutCell, ...]]],
    end_cell: Callable[[], None],
    lines: _Lines,
    buffer: str,
    i: int,
    line_end: str,
    counted: bool,
) -> tuple[list[str], tuple[CutCell, ...]]:
    """Close the last cell at a line end; put back what follows (a CRLF's LF included)."""
    end_cell()
    rest = buffer[i:]
    if line_end == "\r":
        if not rest:
            rest = lines.read()
        if rest.startswith("\n"):
            rest = rest[1:]
    if not counted:
        lines.lines += buffer[:i].count("\n") + (line_end == "\r")
    lines.unread(rest)
    return done()
