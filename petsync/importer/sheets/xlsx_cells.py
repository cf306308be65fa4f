"""What calamine cannot say of an .xlsx/.xlsm cell: its exact integer, or that it has no value.

calamine hands every number over as a double, so an integer cell past 2**53
(``9007199254740993``, stored exactly in the file as those digits) would come out rounded;
and a formula cell whose value was never saved (a workbook written by a program, not
by Excel) comes out as an empty cell, the same as a blank one. This module reads the
worksheet's XML for those two cases only, so that cells pass through as the sheet shows
them and a formula without a value rejects its row with a reason naming the cell.

The XML is read only when it can hold either case: a first pass over the decompressed
bytes (C speed) looks for a formula tag or a run of 16 or more digits, and only then is
the sheet parsed, element by element, with memory bounded by a row. Both passes read the
zip through :mod:`.inflating`, a megabyte at a time under the workbook's budget. A workbook this
module cannot make sense of leaves calamine's values as they are (and says so in the
log): it never stops an import that calamine can read.
"""

from __future__ import annotations

import logging
import posixpath
import re
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from xml.etree import ElementTree

from petsync.importer.sheets.inflating import (
    DAMAGED_ZIP,
    InflationBudget,
    member_chunks,
    read_small,
)

logger = logging.getLogger(__name__)

XLSX_SUFFIXES = frozenset({".xlsx", ".xlsm"})
_EXACT_FROM = 2**53  # doubles hold every integer below this exactly
_WORTH_PARSING = re.compile(rb"<(?:\w+:)?f[\s>/]|>-?[0-9]{16,}<")
_INTEGER = re.compile(r"-?[0-9]+")
_REF = re.compile(r"([A-Z]+)([0-9]+)")
_OVERLAP = 64  # bytes kept between chunks, so a match across their border is found
_TEXT_KINDS = frozenset({"str", "s", "inlineStr"})
_REL_NS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"


@dataclass
class ExactCells:
    """Per (row number, 0-based column): the exact text of a large integer cell, and the
    cells holding a formula with no saved value.

    ``runs`` holds large integers repeated over a block of cells (an .ods repeated cell):
    ``(first row, last row, first column, columns, text)``, so that a repeat is one entry.
    ``rounded``: whole numbers of 16 digits or more that the file writes with fewer
    significant digits (LibreOffice's ``9.00719925474099E+015``), as the file writes them.
    """

    integers: dict[tuple[int, int], str] = field(default_factory=dict)
    formulas: set[tuple[int, int]] = field(default_factory=set)
    runs: list[tuple[int, int, int, int, str]] = field(default_factory=list)
    rounded: dict[tuple[int, int], str] = field(default_factory=dict)


def exact_integer(text: str) -> str | None:
    """The digits of an integer a double cannot hold exactly (2**53 or more), else None.

    >>> exact_integer("9007199254740993"), exact_integer("12"), exact_integer("1e20")
    ('9007199254740993', None, None)
    """
    text = text.strip()
    if _INTEGER.fullmatch(text) and len(text) >= 16 and abs(int(text)) >= _EXACT_FROM:
        return text.lstrip("+")
    return None


def read_exact_cells(path: Path, sheet_name: str, name: str | None = None) -> ExactCells:
    """The cells of ``sheet_name`` in the workbook ``path`` that calamine cannot render.

    Empty for other formats than .xlsx/.xlsm, and for a workbook whose XML cannot be read
    here (calamine's values then stand). ``name`` is what to open (a name leading to the
    checked descriptor, :mod:`.held`); the path by default.
    """
    if path.suffix.lower() not in XLSX_SUFFIXES:
        return ExactCells()
    try:
        with zipfile.ZipFile(name or path) as archive:
            part = sheet_part(archive, sheet_name, InflationBudget(path))
            if part is None:
                return ExactCells()
            with member_chunks(archive, part, InflationBudget(path)) as chunks:
                if not _worth_parsing(chunks):
                    return ExactCells()
            with member_chunks(archive, part, InflationBudget(path)) as chunks:
                return _parse(chunks)
    except (OSError, ElementTree.ParseError, *DAMAGED_ZIP) as exc:
        logger.warning(
            "workbook_cells_not_checked",
            extra={"fields": {"path": str(path), "sheet": sheet_name, "reason": str(exc)}},
        )
        return ExactCells()


def _local(tag: str) -> str:
    return tag.rpartition("}")[2]


def sheet_part(archive: zipfile.ZipFile, sheet_name: str, budget: InflationBudget) -> str | None:
    """The zip member of the worksheet named ``sheet_name``."""
    workbook = ElementTree.fromstring(read_small(archive, "xl/workbook.xml", budget))
    rel_id = None
    for element in workbook.iter():
        if _local(element.tag) == "sheet" and element.get("name") == sheet_name:
            rel_id = element.get(f"{{{_REL_NS}}}id")
            break
    if rel_id is None:
        return None
    return related_part(archive, "xl/_rels/workbook.xml.rels", rel_id, budget)


def related_part(
    archive: zipfile.ZipFile, rels: str, rel_id: str, budget: InflationBudget
) -> str | None:
    """The zip member the relationship ``rel_id`` of the workbook's ``rels`` points at."""
    for element in ElementTree.fromstring(read_small(archive, rels, budget)).iter():
        if _local(element.tag) == "Relationship" and element.get("Id") == rel_id:
            target = element.get("Target") or ""
            if target.startswith("/"):
                return target.lstrip("/")
            return posixpath.normpath(posixpath.join("xl", target))
    return None


def _worth_parsing(chunks: Iterator[bytes]) -> bool:
    """Whether the sheet's XML holds a formula tag or a long run of digits at all."""
    tail = b""
    for chunk in chunks:
        if _WORTH_PARSING.search(tail + chunk):
            return True
        tail = chunk[-_OVERLAP:]
    return False


def _parse(chunks: Iterable[bytes]) -> ExactCells:
    found = ExactCells()
    row_number = 0
    column = -1
    parser: ElementTree.XMLPullParser[ElementTree.Element] = ElementTree.XMLPullParser(
        events=("start", "end")
    )
    for event, element in _events(parser, chunks):
        name = _local(element.tag)
        if event == "start":
            if name == "row":
                row_number = int(element.get("r") or row_number + 1)
                column = -1
            continue
        if name == "c":
            column = _column(element.get("r"), column)
            _cell(element, (row_number, column), found)
            element.clear()
        elif name == "row":
            element.clear()
    return found


def _events(
    parser: ElementTree.XMLPullParser[ElementTree.Element], chunks: Iterable[bytes]
) -> Iterator[tuple[str, ElementTree.Element]]:
    for chunk in chunks:
        parser.feed(chunk)
        yield from parser.read_events()  # type: ignore[misc]
    parser.close()
    yield from parser.read_events()  # type: ignore[misc]


def _column(ref: str | None, previous: int) -> int:
    """The 0-based column of a cell: from its reference, else the one after the previous."""
    match = _REF.fullmatch(ref or "")
    if match is None:
        return previous + 1
    index = 0
    for letter in match.group(1):
        index = index * 26 + ord(letter) - ord("A") + 1
    return index - 1


def _cell(element: ElementTree.Element, where: tuple[int, int], found: ExactCells) -> None:
    formula = value = None
    for child in element:
        name = _local(child.tag)
        if name == "f":
            formula = child
        elif name == "v":
            value = child
    kind = element.get("t", "n")
    text = "" if value is None else (value.text or "").strip()
    # A formula whose value was never saved: no <v>, or an empty one where the value would
    # be a number (an empty text result, t="str", is a value: the empty string).
    if formula is not None and (value is None or (not text and kind not in _TEXT_KINDS)):
        found.formulas.add(where)
        return
    if value is None or kind != "n":
        return
    exact = exact_integer(text)
    if exact is not None:
        found.integers[where] = exact
