"""The merged cells of a workbook's sheet, read from its XML (calamine's values lack them).

calamine gives a merged cell's value in its top-left cell only and, for .ods, no ranges at
all; reading the sheet with calamine again to ask would parse it twice. So the ranges are
read here, streaming, memory bounded whatever the size:

- ``.xlsx``/``.xlsm``: the ``<mergeCell ref="B2:B3"/>`` elements of the sheet's XML,
  found by a byte scan of the part (no XML tree is built);
- ``.ods``: the ``table:number-rows-spanned`` / ``number-columns-spanned`` attributes of
  the sheet's cells in ``content.xml``, parsed incrementally (only when the file holds
  such an attribute at all).

``.xls`` and ``.xlsb`` give none (their covered cells read blank). A workbook whose XML
cannot be read here gives none either, with a warning in the log: the values stand.
"""

from __future__ import annotations

import logging
import re
import zipfile
from pathlib import Path
from xml.etree import ElementTree

from petsync.importer.sheets.inflating import InflationBudget
from petsync.importer.sheets.sheet import MergedRange
from petsync.importer.sheets.xlsx_cells import XLSX_SUFFIXES, sheet_part

logger = logging.getLogger(__name__)

MAX_RANGES = 100_000  # merged ranges read from one sheet, at most
_CHUNK = 1 << 20
_OVERLAP = 256
_MERGE = re.compile(
    rb'<(?:[A-Za-z0-9_]+:)?mergeCell\b[^>]*?\bref="([A-Z]{1,3})([0-9]{1,7})(?::([A-Z]{1,3})([0-9]{1,7}))?"'
)
_ODS_TABLE = "urn:oasis:names:tc:opendocument:xmlns:table:1.0"


def read_merged_ranges(path: Path, sheet_name: str, name: str) -> list[MergedRange]:
    """The merged ranges of the sheet ``sheet_name`` of the workbook ``path`` (see above),
    opened as ``name`` (a name leading to the descriptor its check opened, :mod:`.held`)."""
    suffix = path.suffix.lower()
    if suffix not in XLSX_SUFFIXES and suffix != ".ods":
        return []  # .xls is no zip at all: asking would warn on every import of one
    try:
        with zipfile.ZipFile(name) as archive:
            if suffix in XLSX_SUFFIXES:
                part = sheet_part(archive, sheet_name, InflationBudget(path))
                return [] if part is None else _xlsx_ranges(archive, part)
            if suffix == ".ods":
                return _ods_ranges(archive, sheet_name)
    except (OSError, KeyError, zipfile.BadZipFile, ElementTree.ParseError, ValueError) as exc:
        logger.warning(
            "workbook_merged_cells_not_read",
            extra={"fields": {"path": str(path), "sheet": sheet_name, "reason": str(exc)}},
        )
    return []


def _number(letters: bytes) -> int:
    value = 0
    for char in letters:
        value = value * 26 + char - ord("A") + 1
    return value - 1


def _xlsx_ranges(archive: zipfile.ZipFile, part: str) -> list[MergedRange]:
    found: dict[tuple[int, int, int, int], None] = {}
    with archive.open(part) as stream:
        tail = b""
        while chunk := stream.read(_CHUNK):
            data = tail + chunk
            # Most sheets merge nothing: a plain byte search skips their chunks (fast in C).
            start = data.find(b"mergeCell")
            for match in (
                _MERGE.finditer(data, max(0, data.rfind(b"<", 0, start))) if start >= 0 else ()
            ):
                first_col, first_row = _number(match.group(1)), int(match.group(2))
                last_col = _number(match.group(3)) if match.group(3) else first_col
                last_row = int(match.group(4)) if match.group(4) else first_row
                found[(first_row, first_col, last_row, last_col)] = None
            if len(found) > MAX_RANGES:
                raise ValueError(f"more than {MAX_RANGES} merged ranges")
            # A tag cut at the chunk's end is found again whole in the next round.
            cut = data.rfind(b"<", max(0, len(data) - _OVERLAP))
            tail = data[cut:] if cut >= 0 else b""
    return [MergedRange(*key) for key in sorted(found)]


def _ods_ranges(archive: zipfile.ZipFile, sheet_name: str) -> list[MergedRange]:
    with archive.open("content.xml") as stream:
        if not _holds(stream, b"-spanned="):
            return []
    table = f"{{{_ODS_TABLE}}}"
    found: list[MergedRange] = []
    inside = False
    row = 0
    column = 0
    with archive.open("content.xml") as stream:
        for event, element in ElementTree.iterparse(stream, events=("start", "end")):
            tag = element.tag
            if tag == f"{table}table":
                if event == "start":
                    inside = element.get(f"{table}name") == sheet_name
                    row = 0
                elif inside:
                    break
                element.clear()
                continue
            if not inside:
                if event == "end":
                    element.clear()
                continue
            if tag == f"{table}table-row":
                if event == "start":
                    column = 0
                else:
                    row += int(element.get(f"{table}number-rows-repeated") or 1)
                    element.clear()
            elif tag in (f"{table}table-cell", f"{table}covered-table-cell") and event == "start":
                rows = int(element.get(f"{table}number-rows-spanned") or 1)
                columns = int(element.get(f"{table}number-columns-spanned") or 1)
                if rows > 1 or columns > 1:
                    found.append(MergedRange(row + 1, column, row + rows, column + columns - 1))
                    if len(found) > MAX_RANGES:
                        raise ValueError(f"more than {MAX_RANGES} merged ranges")
                column += int(element.get(f"{table}number-columns-repeated") or 1)
    return found


def _holds(stream: object, needle: bytes) -> bool:
    """Whether the byte stream holds ``needle`` (read in chunks, never whole)."""
    tail = b""
    read = stream.read  # type: ignore[attr-defined]
    while chunk := read(_CHUNK):
        if needle in tail + chunk:
            return True
        tail = chunk[-len(needle) :]
    return False
