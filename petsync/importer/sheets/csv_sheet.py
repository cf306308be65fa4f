"""CSV files: the delimiter, and a reader whose memory stays bounded.

The encoding is found first (:mod:`.csv_encoding`), from the whole file.

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

import csv
import io
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, BinaryIO

from petsync.core.errors import InputError
from petsync.core.interface import CELL_LIMIT, ROW_CELL_LIMIT, ROW_CHAR_LIMIT
from petsync.core.settings_table import DELIMITER
from petsync.core.wording import Placeholder
from petsync.importer.sheets.csv_encoding import detect_encoding
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
)

# A physical line is read at most this many characters at a time.
LINE_CAP = CELL_LIMIT + 1
_LINE_END = re.compile(r"\r\n|\n|\r")


def open_csv(source: BinaryIO, path: Path, options: ReadOptions) -> Spreadsheet:
    """Read the CSV file ``path``, open and checked as ``source`` (which the spreadsheet
    closes): fingerprint and decode it whole, detect the delimiter, read the header.

    Every pass reads that one descriptor from its start: the rows are the bytes hashed.
    """
    sha256, encoding, label, notice = detect_encoding(source, path, options.encoding)
    header_text = _read_header_text(source, path, encoding)
    if options.delimiter is not None:
        delimiter = parse_delimiter(options.delimiter)
    else:
        delimiter = detect_delimiter(header_text, path)
    source.seek(0)
    handle = io.TextIOWrapper(source, encoding=encoding, errors="strict", newline="")
    records = _csv_records(handle, delimiter, path)  # read as the rows are asked for
    sheet = Spreadsheet(
        path,
        "csv",
        sha256,
        encoding=encoding,
        encoding_label=label,
        encoding_notice=notice,
        delimiter=delimiter,
    )
    sheet.add_closer(handle.close)
    try:
        sheet.start(records)
    except BaseException:
        sheet.close()
        raise
    return sheet


def parse_delimiter(value: str) -> str:
    """Turn a ``--delimiter`` value (``,``, ``;``, ``tab``, ``semicolon``...) into a character."""
    found = DELIMITER_NAMES.get(value) or DELIMITER_NAMES.get(value.strip().lower())
    if found is None:
        raise InputError(
            DELIMITER.given(Placeholder(repr(value)))
            + " is not supported; use comma, semicolon or tab (or the characters , ; \\t)"
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
        "Pass "
        + DELIMITER.given("comma")
        + ", "
        + DELIMITER.given("semicolon")
        + " or "
        + DELIMITER.given("tab")
    )


def _read_header_text(source: BinaryIO, path: Path, encoding: str) -> str:
    """The first logical line (a quoted header cell may span lines), at most about 1 MiB."""
    text = ""
    source.seek(0)
    handle = io.TextIOWrapper(source, encoding=encoding, errors="strict", newline="")
    try:
        while line := handle.readline(LINE_CAP):
            text += line
            if text.count('"') % 2 == 0 and line.endswith(("\n", "\r")):
                break
            if len(text) > CHUNK:
                break
    except UnicodeDecodeError as exc:  # proven decodable already; defensive
        raise InputError(f"{path}: cannot decode the header ({exc.reason})") from exc
    finally:
        handle.detach()  # the source stays open for the rows
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
