"""The records of an .xlsb part, and what the shared-string measure needs from them.

An .xlsb is a zip of binary parts, each a stream of records: a type and a size, each a
little-endian varint of 7-bit groups (at most 2 and 4 bytes), then the payload
([MS-XLSB] 2.1.4). Read here a chunk at a time through :mod:`.inflating`, keeping only the
first bytes of each payload, so a record of any size costs no more than its header.

Three things are read: the sheets' names and relationship ids (``BrtBundleSh`` in
``xl/workbook.bin``), each shared string's size (``BrtSSTItem``), and the string index of
each cell that points at one (``BrtCellIsst``).
"""

from __future__ import annotations

import struct
import zipfile
from array import array
from collections.abc import Generator, Iterator

from petsync.importer.sheets.inflating import InflationBudget, member_chunks
from petsync.importer.sheets.xlsx_cells import related_part

BUNDLE_SHEET = 0x009C  # BrtBundleSh: a sheet's state, id, relationship id and name
SST_ITEM = 0x0013  # BrtSSTItem: one shared string
CELL_ISST = 0x0007  # BrtCellIsst: a cell holding a shared string's index
_KEPT = 1 << 16  # the payload bytes kept of a record (a sheet's name fits)


def records(chunks: Iterator[bytes]) -> Iterator[tuple[int, int, bytes]]:
    """Each record as (type, size, the first bytes of its payload); ValueError for a
    part that ends inside a record."""
    buffer = b""
    skip = 0  # payload bytes of the last record still to pass over
    for chunk in chunks:
        if skip:
            passed = min(skip, len(chunk))
            skip -= passed
            if skip:
                continue  # the whole chunk was payload to pass over
            chunk = chunk[passed:]
        buffer += chunk
        position, skip = yield from _whole_records(buffer)
        buffer = buffer[position:]
    if buffer or skip:
        raise ValueError("a record cut short")


def _whole_records(buffer: bytes) -> Generator[tuple[int, int, bytes], None, tuple[int, int]]:
    """The records that start in ``buffer``; returns where the first unread one starts
    and how much of the last one's payload lies beyond the buffer (to skip)."""
    end = len(buffer)
    position = 0
    while position < end:
        header = _header(buffer, position, end)
        if header is None:
            break  # the header continues in the next chunk
        kind, size, start = header
        if start + size <= end:
            yield kind, size, buffer[start : start + min(size, _KEPT)]
            position = start + size
        elif size > _KEPT and start + _KEPT <= end:
            yield kind, size, buffer[start : start + _KEPT]
            return end, start + size - end
        else:
            break  # a short record continues in the next chunk
    return position, 0


def _header(buffer: bytes, position: int, end: int) -> tuple[int, int, int] | None:
    """A record's type, size and where its payload starts; None if cut by the buffer."""
    kind = _varint(buffer, position, end, 2)
    if kind is None:
        return None
    size = _varint(buffer, kind[1], end, 4)
    if size is None:
        return None
    return kind[0], size[0], size[1]


def _varint(buffer: bytes, position: int, end: int, limit: int) -> tuple[int, int] | None:
    """A varint of at most ``limit`` 7-bit groups and where it ends; None if cut."""
    value = 0
    for index in range(limit):
        if position >= end:
            return None
        byte = buffer[position]
        position += 1
        value |= (byte & 0x7F) << (7 * index)
        if not byte & 0x80:
            break
    return value, position


def bundle_sheet(head: bytes) -> tuple[str, str] | None:
    """A ``BrtBundleSh`` payload's relationship id and sheet name; None if malformed."""
    try:
        position = 8  # hsState, iTabID
        (count,) = struct.unpack_from("<I", head, position)
        position += 4
        rel_id = ""
        if count != 0xFFFFFFFF:  # a null relationship id (a macro sheet)
            rel_id = head[position : position + 2 * count].decode("utf-16-le")
            position += 2 * count
        (count,) = struct.unpack_from("<I", head, position)
        name = head[position + 4 : position + 4 + 2 * count].decode("utf-16-le")
    except (struct.error, UnicodeDecodeError):
        return None
    return rel_id, name


def string_index(head: bytes) -> int | None:
    """A ``BrtCellIsst`` payload's shared-string index (after column and style)."""
    if len(head) < 12:
        return None
    return int(struct.unpack_from("<I", head, 8)[0])


def string_sizes(chunks: Iterator[bytes]) -> array[int]:
    """Each shared string's size: its ``BrtSSTItem`` record's (at least its text's bytes)."""
    sizes: array[int] = array("q")
    for kind, size, _ in records(chunks):
        if kind == SST_ITEM:
            sizes.append(size)
    return sizes


def sheet_part(archive: zipfile.ZipFile, sheet: str, budget: InflationBudget) -> str | None:
    """The zip member of the sheet named ``sheet``, from ``xl/workbook.bin`` and its
    relationships; None when either is missing or names no such sheet."""
    if "xl/workbook.bin" not in archive.NameToInfo:
        return None
    rel_id = None
    with member_chunks(archive, "xl/workbook.bin", budget) as chunks:
        for kind, _, head in records(chunks):
            named = bundle_sheet(head) if kind == BUNDLE_SHEET else None
            if named is not None and named[1] == sheet:
                rel_id = named[0]
                break
    rels = "xl/_rels/workbook.bin.rels"
    if rel_id is None or rels not in archive.NameToInfo:
        return None
    return related_part(archive, rels, rel_id, budget)


def string_uses(chunks: Iterator[bytes], sizes: array[int], limit: int) -> int:
    """The sizes of the strings the sheet's cells point at, once per cell (stopping past
    ``limit``)."""
    count = len(sizes)
    held = 0
    for kind, _, head in records(chunks):
        if kind == CELL_ISST:
            index = string_index(head)
            if index is not None and index < count:
                held += sizes[index]
                if held > limit:
                    break
    return held
