"""The used range of an .xlsx or .xlsm sheet, measured from its XML before calamine reads it.

calamine holds a sheet as one grid from A1 to the last cell that holds a value, so a
1.6 KB workbook with one value at XFD1048576 asks for hundreds of GiB and aborts the
process (a Rust panic no ``except`` can catch). :func:`check_sheet_range` reads the
workbook's zip first, in bounded memory: every member is inflated a chunk at a time,
refused past :data:`~petsync.core.interface.WORKBOOK_XML_LIMIT` bytes in all (a zip bomb),
and the chosen sheet's cell tags are scanned for the last row and column holding a value.
A range over :data:`~petsync.core.interface.SHEET_COLUMN_LIMIT` columns or
:data:`~petsync.core.interface.SHEET_CELL_LIMIT` cells is refused naming the range and the
limit; the ``<dimension>`` tag is not trusted (calamine does not use it either).

Empty cells (``<c r="Z9" s="1"/>``: formatting only) do not count, as calamine skips them.
The older formats (``.xls``, ``.xlsb``) and ``.ods`` are not measured here (calamine refuses
an ``.ods`` sheet past 100,000,000 cells with an error of its own).
"""

from __future__ import annotations

import posixpath
import re
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree

from petsync.core.errors import InputError
from petsync.core.interface import SHEET_CELL_LIMIT, SHEET_COLUMN_LIMIT, WORKBOOK_XML_LIMIT
from petsync.importer.sheets.sheet import column_letters

# What a damaged zip or XML raises while it is measured.
_DAMAGED = (zipfile.BadZipFile, zlib.error, EOFError, ValueError, KeyError, NotImplementedError)
MEASURED_SUFFIXES = frozenset({".xlsx", ".xlsm"})
_CHUNK = 1 << 20
_TAG_LIMIT = 1 << 20  # an unterminated tag longer than this is not a sheet
_SMALL_PART_LIMIT = 64 << 20  # workbook.xml and its relationships: names and ids only
_TAG = re.compile(rb"<(?:[A-Za-z_][\w.-]*:)?(row|c)(?=[\s/>])([^>]*)>")
_R_ATTR = re.compile(rb"""\br\s*=\s*["']([^"']*)["']""")
_CELL_REF = re.compile(rb"([A-Za-z]{1,8})([0-9]{1,12})")
# The usual sheet (what Excel, LibreOffice and openpyxl write): every cell tag is
# ``<c r="B2" ...>`` with ``r`` first and no namespace prefix. Its cells holding a value (the
# tag not closed at once) are found in C, a chunk at a time; any other cell tag sends the
# sheet to the slower scan of every tag in order.
_VALUE_CELL = re.compile(rb'<c r="([A-Z]{1,8})([0-9]{1,12})"[^>]*(?<!/)>')
_PLAIN_CELL = b'<c r="'
_OTHER_CELLS = (b"<c ", b"<c>", b"<c/")
_PREFIXED_CELLS = (b":c ", b":c>", b":c/")
_NS_MAIN = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
_NS_REL = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
_NS_PKG = "{http://schemas.openxmlformats.org/package/2006/relationships}"


@dataclass(frozen=True)
class UsedRange:
    """The last row and column (1-based) of a sheet that hold a value; 0 when it has none."""

    rows: int
    columns: int

    @property
    def text(self) -> str:
        """``A1:XFD1048576``, as a spreadsheet names the range."""
        return f"A1:{column_letters(max(self.columns, 1) - 1)}{max(self.rows, 1)}"


def check_sheet_range(path: Path, sheet: str, name: str | None = None) -> UsedRange | None:
    """Refuse (:class:`InputError`) a workbook too big to read; return the sheet's range.

    None when ``path`` is not a zip this function can measure (calamine's own error then
    says what is wrong with it). Every member is inflated once, so the whole check costs
    about one pass over the workbook's XML. ``name`` is what to open (a name leading to
    the checked descriptor, :mod:`.held`); the path by default.
    """
    if path.suffix.lower() not in MEASURED_SUFFIXES:
        return None
    try:
        archive = zipfile.ZipFile(name or path)
    except (OSError, zipfile.BadZipFile, ValueError):
        return None
    with archive:
        try:
            return _measure(path, archive, sheet)
        except _DAMAGED:
            return None  # damaged: calamine reads it, or says what is wrong


def _measure(path: Path, archive: zipfile.ZipFile, sheet: str) -> UsedRange | None:
    budget = _Budget(path)
    target = _sheet_member(archive, sheet, budget)
    used: UsedRange | None = None
    for info in archive.infolist():
        if info.filename == target:
            used = _scan_refs(_chunks(archive, info, budget))
            if used is None:
                used = _scan(_chunks(archive, info, _Budget(path)))
            check_used_range(path, sheet, used)
        else:
            for _ in _chunks(archive, info, budget):
                pass
    return used


class _Budget:
    """The bytes the workbook's members inflate to, in all; refused past the limit."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.used = 0

    def take(self, size: int, member: str) -> None:
        self.used += size
        if self.used > WORKBOOK_XML_LIMIT:
            raise InputError(
                f"{self.path}: the workbook inflates to more than {WORKBOOK_XML_LIMIT} bytes "
                f"(at {member!r}); petsync reads workbooks up to that size. Save the sheet as "
                "CSV UTF-8, which petsync reads a row at a time, or split it"
            )


def _chunks(archive: zipfile.ZipFile, info: zipfile.ZipInfo, budget: _Budget) -> Iterator[bytes]:
    with archive.open(info) as member:
        while chunk := member.read(_CHUNK):
            budget.take(len(chunk), info.filename)
            yield chunk


def _small(archive: zipfile.ZipFile, name: str, budget: _Budget) -> ElementTree.Element:
    data = bytearray()
    for chunk in _chunks(archive, archive.getinfo(name), budget):
        data += chunk
        if len(data) > _SMALL_PART_LIMIT:
            raise ValueError(f"{name} is too large")
    return ElementTree.fromstring(bytes(data))


def _sheet_member(archive: zipfile.ZipFile, sheet: str, budget: _Budget) -> str | None:
    """The zip member holding the sheet named ``sheet``, from the workbook's relationships."""
    names = set(archive.namelist())
    if "xl/workbook.xml" not in names or "xl/_rels/workbook.xml.rels" not in names:
        return None
    workbook = _small(archive, "xl/workbook.xml", budget)
    rel_id = None
    for element in workbook.iter(f"{_NS_MAIN}sheet"):
        if element.get("name") == sheet:
            rel_id = element.get(f"{_NS_REL}id")
            break
    if rel_id is None:
        return None
    rels = _small(archive, "xl/_rels/workbook.xml.rels", budget)
    for rel in rels.iter(f"{_NS_PKG}Relationship"):
        if rel.get("Id") == rel_id:
            target = rel.get("Target") or ""
            if target.startswith("/"):
                return target.lstrip("/")
            return posixpath.normpath(posixpath.join("xl", target))
    return None


def _scan_refs(chunks: Iterator[bytes]) -> UsedRange | None:
    """The range from the ``r`` of each cell holding a value; None for a sheet whose cell
    tags are not all of the usual form."""
    last_row = 0
    letters: set[bytes] = set()
    for buffer in _whole_tags(chunks):
        plain = buffer.count(_PLAIN_CELL)
        if sum(map(buffer.count, _OTHER_CELLS)) != plain or any(
            prefixed in buffer for prefixed in _PREFIXED_CELLS
        ):
            for _ in chunks:  # inflate the rest: the budget counts every byte
                pass
            return None
        refs = _VALUE_CELL.findall(buffer)
        if refs:
            letters.update(ref[0] for ref in refs)
            last_row = max(last_row, max(int(ref[1]) for ref in refs))
    return UsedRange(last_row, max(map(_column_number, letters), default=0))


def _whole_tags(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """The chunks, each ending before any tag the next one completes."""
    carry = b""
    for chunk in chunks:
        buffer = carry + chunk
        end = buffer.rfind(b"<")
        if end >= 0 and buffer.find(b">", end) < 0:
            buffer, carry = buffer[:end], buffer[end:]
            if len(carry) > _TAG_LIMIT:
                raise ValueError("a tag too long for a sheet")
        else:
            carry = b""
        yield buffer


def _scan(chunks: Iterator[bytes]) -> UsedRange:
    """The last row and column holding a value, from the sheet's ``<row>`` and ``<c>`` tags.

    A tag without ``r`` is the one after the previous (the format allows that); a cell
    tag that closes itself holds no value and does not count.
    """
    row = column = 0
    last_row = last_column = 0
    for buffer in _whole_tags(chunks):
        for match in _TAG.finditer(buffer):
            kind, attrs = match.group(1), match.group(2)
            ref = _R_ATTR.search(attrs)
            if kind == b"row":
                row = int(ref.group(1)) if ref and ref.group(1).isdigit() else row + 1
                column = 0
                continue
            cell = _CELL_REF.fullmatch(ref.group(1)) if ref else None
            if cell is not None:
                column = _column_number(cell.group(1))
                row = int(cell.group(2))
            else:
                column += 1
            if not attrs.rstrip().endswith(b"/"):
                last_row = max(last_row, row)
                last_column = max(last_column, column)
    return UsedRange(last_row, last_column)


def _column_number(letters: bytes) -> int:
    number = 0
    for char in letters.upper():
        number = number * 26 + char - ord("A") + 1
    return number


def check_used_range(path: Path, sheet: str, used: UsedRange) -> None:
    """Refuse (:class:`InputError`) a used range past the limits, naming it and the fix."""
    cells = used.rows * used.columns
    if used.columns <= SHEET_COLUMN_LIMIT and cells <= SHEET_CELL_LIMIT:
        return
    raise InputError(
        f"{path}: sheet {sheet!r} uses the range {used.text} ({used.columns} columns, "
        f"{used.rows} rows), more than petsync reads ({SHEET_COLUMN_LIMIT} columns, "
        f"{SHEET_CELL_LIMIT} cells in all): a value far from the others? Delete the rows and "
        "columns after your data (select them, Delete), save, and import again"
    )
