"""The shared strings of an .xlsx, .xlsm or .xlsb, measured before calamine copies them
into cells.

A cell of type ``s`` holds the index of a string in ``xl/sharedStrings.xml``; calamine
gives every such cell its own copy. So a 7.5 KB workbook whose 2,000 cells point at one
1 MB string asks for 2 GB (and calamine reserves room for as many strings as the file's
``uniqueCount`` announces, whatever it says). Measured here, in bounded memory, a megabyte
of inflated XML at a time (:mod:`.inflating`):

* :func:`measure_shared_strings`, before calamine opens the workbook: the strings' count,
  and the announced one, held to :data:`~petsync.core.interface.SHARED_STRING_LIMIT`; and
  each string's size, the length of its ``<si>`` element (at least the bytes of its text);
* :func:`check_shared_string_uses`, once the sheet is chosen: the bytes the sheet's cells
  would hold, each string's size once per cell that uses it, held to
  :data:`~petsync.core.interface.WORKBOOK_TEXT_LIMIT`. Usually one count settles it (the
  cells of type ``s`` times the longest string); only past that are the cells' indexes read.

An .xlsb holds the same table in binary records (:mod:`.xlsb_records`): measured the same
way, in the child process that reads it (:mod:`.isolated_read`), before calamine.
"""

from __future__ import annotations

import re
import zipfile
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from petsync.core.errors import InputError
from petsync.core.interface import SHARED_STRING_LIMIT, WORKBOOK_TEXT_LIMIT
from petsync.importer.sheets import xlsb_records
from petsync.importer.sheets.inflating import (
    CHUNK,
    DAMAGED_ZIP,
    InflationBudget,
    UnmeasuredWorkbook,
    member_chunks,
    whole_tags,
)
from petsync.importer.sheets.xlsx_cells import XLSX_SUFFIXES, sheet_part

_STRINGS = "xl/sharedStrings.xml"  # where calamine looks (xl_path + "sharedStrings.xml")
_XLSB_STRINGS = "xl/sharedStrings.bin"
# The bytes of the smallest cell pointing at a string: BrtCellIsst; <c t="s"><v>0</v></c>.
_XLSB_CELL = 14
_XLSX_CELL = 20
MEASURED_SUFFIXES = XLSX_SUFFIXES | {".xlsb"}
_SI = re.compile(rb"<(?:[A-Za-z_][\w.-]*:)?si(?=[\s/>])")
_SST_END = re.compile(rb"</(?:[A-Za-z_][\w.-]*:)?sst\s*>")
_SST = re.compile(rb"<(?:[A-Za-z_][\w.-]*:)?sst(?=[\s/>])([^>]*)>")
_UNIQUE = re.compile(rb"""\buniqueCount\s*=\s*["']\s*([0-9]+)""")
_SHARED = re.compile(rb"""\st\s*=\s*["']s["']""")
_VALUE_CELL = re.compile(
    rb"<(?:[A-Za-z_][\w.-]*:)?c\s([^>]*)>\s*<(?:[A-Za-z_][\w.-]*:)?v>\s*([0-9]{1,12})\s*<"
)


@dataclass(frozen=True)
class SharedStrings:
    """How many shared strings a workbook lists, and the largest's size in bytes of XML
    (or of its record); each one's size, by index, is read only when needed."""

    count: int
    largest: int
    sizes: array[int] | None = None  # known at once for an .xlsb


def measure_shared_strings(path: Path, name: str | None = None) -> SharedStrings | None:
    """Refuse (:class:`InputError`) a workbook listing too many shared strings; their count
    and the largest's size.

    None for another format or a workbook without shared strings;
    :class:`UnmeasuredWorkbook` for one this cannot read through. ``name`` is what to open
    (a name leading to the checked descriptor, :mod:`.held`); the path by default.
    """
    suffix = path.suffix.lower()
    if suffix not in MEASURED_SUFFIXES:
        return None
    member = _XLSB_STRINGS if suffix == ".xlsb" else _STRINGS
    try:
        with zipfile.ZipFile(name or path) as archive:
            if member not in archive.NameToInfo:
                return None
            with member_chunks(archive, member, InflationBudget(path)) as chunks:
                if suffix != ".xlsb":
                    return _table(path, chunks)
                sizes = xlsb_records.string_sizes(chunks)
    except (OSError, *DAMAGED_ZIP) as exc:
        raise UnmeasuredWorkbook(str(exc)) from exc
    _check_count(path, len(sizes), "lists")
    return SharedStrings(len(sizes), max(sizes, default=0), sizes)


def _table(path: Path, chunks: Iterator[bytes]) -> SharedStrings:
    """The count and the largest size, split in C at each ``<si`` (no object per string)."""
    count = largest = 0
    current = -1  # bytes so far of the string the last buffer ended in (-1: none yet)
    for _, buffer in whole_tags(chunks):
        if current < 0 and (sst := _SST.search(buffer)) is not None:
            announced = _UNIQUE.search(sst.group(1))
            if announced is not None:
                _check_count(path, int(announced.group(1)), "announces")
        parts = _SI.split(buffer)
        if len(parts) == 1:
            current += len(buffer) if current >= 0 else 0
            continue
        if current >= 0:
            largest = max(largest, current + len(parts[0]))
        if len(parts) > 2:
            largest = max(largest, max(map(len, parts[1:-1])))
        count += len(parts) - 1
        _check_count(path, count, "lists")
        current = len(parts[-1])
    return SharedStrings(count, max(largest, current))


def _sizes(chunks: Iterator[bytes]) -> array[int]:
    """Each string's size: from its ``<si`` to the next one's (or to ``</sst>``)."""
    sizes: array[int] = array("q")
    last = -1  # where the string being measured starts
    end = -1
    for offset, buffer in whole_tags(chunks):
        starts = [offset + match.start() for match in _SI.finditer(buffer)]
        if starts:
            if last >= 0:
                sizes.append(starts[0] - last)
            sizes.extend(b - a for a, b in zip(starts, starts[1:], strict=False))
            last = starts[-1]
        closing = _SST_END.search(buffer)
        if closing is not None:
            end = offset + closing.start()
    if last >= 0:
        sizes.append(max(end - last, 0) if end > last else 0)
    return sizes


def _check_count(path: Path, count: int, how: str) -> None:
    if count > SHARED_STRING_LIMIT:
        raise InputError(
            f"{path}: the workbook {how} {count} shared strings, more than petsync reads "
            f"({SHARED_STRING_LIMIT}); a damaged file? Open it in Excel or LibreOffice and "
            "save it again, or save the sheet as CSV UTF-8"
        )


def check_shared_string_uses(
    path: Path, sheet: str, strings: SharedStrings | None, name: str | None = None
) -> None:
    """Refuse (:class:`InputError`) a sheet whose cells would hold too many bytes of
    shared strings, naming the bound and the fix (``name``: as for
    :func:`measure_shared_strings`)."""
    if strings is None or not strings.count:
        return
    binary = path.suffix.lower() == ".xlsb"
    find_part = xlsb_records.sheet_part if binary else sheet_part
    try:
        with zipfile.ZipFile(name or path) as archive:
            part = find_part(archive, sheet, InflationBudget(path))
            if part is None:
                return
            # The sheet's size bounds its cells (zipfile never inflates a member past the
            # size its directory states): the usual sheet is settled without reading it.
            least = _XLSB_CELL if binary else _XLSX_CELL
            if (
                archive.getinfo(part).file_size // least + 1
            ) * strings.largest <= WORKBOOK_TEXT_LIMIT:
                return
            shared = 0
            with member_chunks(archive, part, InflationBudget(path)) as chunks:
                for chunk in chunks:
                    # At most: an .xlsb cell pointing at a string takes 14 bytes at least;
                    # an .xlsx one has an attribute whose value is "s" (t="s"). One more a
                    # chunk: a cell cut in two.
                    shared += 1 + (
                        len(chunk) // _XLSB_CELL
                        if binary
                        else chunk.count(b'"s"') + chunk.count(b"'s'")
                    )
            if shared * strings.largest <= WORKBOOK_TEXT_LIMIT:
                return
            sizes = strings.sizes
            if sizes is None:
                with member_chunks(archive, _STRINGS, InflationBudget(path)) as chunks:
                    sizes = _sizes(chunks)
            with member_chunks(archive, part, InflationBudget(path)) as chunks:
                if binary:
                    held = xlsb_records.string_uses(chunks, sizes, WORKBOOK_TEXT_LIMIT)
                else:
                    held = _bytes_held(chunks, sizes)
    except (OSError, *DAMAGED_ZIP) as exc:
        raise UnmeasuredWorkbook(str(exc)) from exc
    if held > WORKBOOK_TEXT_LIMIT:
        raise InputError(
            f"{path}: the cells of sheet {sheet!r} would hold more than {WORKBOOK_TEXT_LIMIT} "
            f"bytes of shared strings (at least {held}: the workbook's reader copies a shared "
            "string into every cell that uses it); petsync reads workbooks up to that. Save "
            "the sheet as CSV UTF-8, which petsync reads a row at a time, or split it"
        )


def _bytes_held(chunks: Iterator[bytes], sizes: array[int]) -> int:
    """The sizes of the strings the sheet's ``s`` cells point at, once per cell."""
    count = len(sizes)
    held = 0
    for buffer in _whole_cells(chunks):
        for attrs, index in _VALUE_CELL.findall(buffer):
            if _SHARED.search(b" " + attrs):
                number = int(index)
                held += sizes[number] if number < count else 0
        if held > WORKBOOK_TEXT_LIMIT:
            break
    return held


def _whole_cells(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """The chunks, each ending before the last cell tag it starts (so a cell's tag and its
    value arrive together), unless that cell is longer than a chunk (no index then)."""
    carry = b""
    for chunk in chunks:
        buffer = carry + chunk
        last = max(buffer.rfind(b"<c "), buffer.rfind(b":c "))
        start = buffer.rfind(b"<", 0, last + 1) if last >= 0 else -1
        if start < 0 or len(buffer) - start > CHUNK:
            yield buffer
            carry = b""
        else:
            yield buffer[:start]
            carry = buffer[start:]
    yield carry
