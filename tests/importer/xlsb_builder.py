"""A minimal .xlsb workbook built by hand (no tool here writes the binary format).

An .xlsb is a zip whose parts are streams of records: a type and a size (each a
little-endian varint of 7-bit groups) and the payload ([MS-XLSB] 2.1.4). The workbook part
names its sheets (BrtBundleSh); a sheet part holds BrtWsDim, then rows (BrtRowHdr) of
cells (BrtCellSt: text, BrtCellReal: a double, BrtCellIsst: a shared string's index)
between BrtBeginSheetData and BrtEndSheetData; the shared strings part holds BrtBeginSst,
one BrtSSTItem per string, BrtEndSst. Just enough for calamine to read it.
"""

from __future__ import annotations

import struct
import zipfile
from collections.abc import Sequence
from pathlib import Path

Cell = tuple[int, int, "str | float | Shared"]  # 0-based row, 0-based column, value


class Shared(int):
    """A cell value that is the index of a shared string (a BrtCellIsst cell)."""


def _varint(number: int, limit: int) -> bytes:
    out = bytearray()
    for _ in range(limit):
        group, number = number & 0x7F, number >> 7
        out.append(group | (0x80 if number else 0))
        if not number:
            break
    return bytes(out)


def _record(kind: int, payload: bytes = b"") -> bytes:
    return _varint(kind, 2) + _varint(len(payload), 4) + payload


def _wide(text: str) -> bytes:
    return struct.pack("<I", len(text)) + text.encode("utf-16-le")


def _cell(column: int, value: str | float | Shared) -> bytes:
    head = struct.pack("<II", column, 0)  # column, style 0
    if isinstance(value, Shared):
        return _record(0x0007, head + struct.pack("<I", value))  # BrtCellIsst
    if isinstance(value, str):
        return _record(0x0006, head + _wide(value))  # BrtCellSt
    return _record(0x0005, head + struct.pack("<d", value))  # BrtCellReal


def _sheet(cells: Sequence[Cell]) -> bytes:
    last_row = max(row for row, _, _ in cells)
    last_column = max(column for _, column, _ in cells)
    parts = [
        _record(0x0081),  # BrtBeginSheet
        _record(0x0094, struct.pack("<IIII", 0, last_row, 0, last_column)),  # BrtWsDim
        _record(0x0091),  # BrtBeginSheetData
    ]
    row = -1
    for number, column, value in sorted(cells, key=lambda c: (c[0], c[1])):
        if number != row:
            parts.append(_record(0x0000, struct.pack("<I", number) + bytes(13)))  # BrtRowHdr
            row = number
        parts.append(_cell(column, value))
    parts += [_record(0x0092), _record(0x0082)]  # BrtEndSheetData, BrtEndSheet
    return b"".join(parts)


def _workbook(sheet: str) -> bytes:
    bundle = struct.pack("<II", 0, 1) + _wide("rId1") + _wide(sheet)
    return b"".join(
        [
            _record(0x0083),  # BrtBeginBook
            _record(0x008F),  # BrtBeginBundleShs
            _record(0x009C, bundle),  # BrtBundleSh
            _record(0x0090),  # BrtEndBundleShs
            _record(0x0084),  # BrtEndBook
        ]
    )


_RELS = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
    'relationships/worksheet" Target="worksheets/sheet1.bin"/></Relationships>'
)


def _strings(strings: Sequence[str]) -> bytes:
    begin = _record(0x009F, struct.pack("<II", len(strings), len(strings)))  # BrtBeginSst
    items = [_record(0x0013, b"\x00" + _wide(text)) for text in strings]  # BrtSSTItem
    return begin + b"".join(items) + _record(0x00A0)  # BrtEndSst


def write_xlsb(
    path: Path, cells: Sequence[Cell], sheet: str = "Pets", strings: Sequence[str] = ()
) -> Path:
    """Write an .xlsb with one sheet holding ``cells`` (and ``strings`` shared, which
    :class:`Shared` cells point at); return ``path``."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("xl/workbook.bin", _workbook(sheet))
        archive.writestr("xl/_rels/workbook.bin.rels", _RELS)
        archive.writestr("xl/worksheets/sheet1.bin", _sheet(cells))
        if strings:
            archive.writestr("xl/sharedStrings.bin", _strings(strings))
    return path
