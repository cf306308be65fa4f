"""Merged cells: a value merged over several rows or columns is the value of each cell.

What a person sees in a workbook where a category is merged over two rows is that
category on both rows; the file holds it in the top-left cell only (LibreOffice and Excel
both), so the second row would read blank and be rejected. With ``fill`` (the default)
every cell a merged range covers below the header takes the value of its top-left cell;
with ``blank`` (``--merged-cells blank``, for a team that prefers a reject) they stay
blank. Either way the summary says which ranges, so the reject is never a mystery.

Only ranges that start below the header are filled: a title merged across the columns
above it, or a header merged over two rows, is no value of a row. CSV files have no
merged cells; :mod:`petsync.importer.sheets.merged_ranges` says which formats give them.
"""

from __future__ import annotations

from dataclasses import dataclass

from petsync.core.settings_table import MERGED_CELLS
from petsync.core.wording import Said
from petsync.importer.config import MergedCells
from petsync.importer.sheets.sheet import MergedRange, Record, Spreadsheet, cut_cells

SHOWN_RANGES = 10  # ranges named in the summary, at most


@dataclass(frozen=True)
class MergedFill:
    """What the merged cells below the header did: ``cells`` filled (0 with ``blank``) and
    the ranges that cover data rows, as a spreadsheet names them (``B2:B3``)."""

    mode: MergedCells
    cells: int
    ranges: tuple[str, ...]

    def notice(self) -> Said:
        """The summary's word on them."""
        shown = ", ".join(self.ranges[:SHOWN_RANGES])
        if len(self.ranges) > SHOWN_RANGES:
            shown += f" and {len(self.ranges) - SHOWN_RANGES} more"
        if self.mode == "blank":
            return (
                f"merged cells {shown} were left blank below their first cell "
                "(" + MERGED_CELLS.given("blank") + "): those cells read blank"
            )
        plural = "s" if self.cells != 1 else ""
        return (
            f"{self.cells} cell{plural} came from merged cells {shown} (each takes the value "
            "it shows; " + MERGED_CELLS.given("blank") + " leaves them blank)"
        )


def fill_merged_cells(sheet: Spreadsheet, mode: MergedCells) -> MergedFill | None:
    """Fill the cells of ``sheet`` (a workbook read whole, its header chosen) that merged
    ranges below the header cover; None when it has no such range."""
    records = sheet.cached_records
    if records is None or not records:
        return None
    assert sheet.sheet is not None
    header = sheet.header_row
    ranges = [r for r in sheet.merged_ranges if r.first_row > header]
    if not ranges:
        return None
    named = tuple(str(r) for r in ranges)
    if mode == "blank":
        return MergedFill(mode, 0, named)
    filled = _fill(records, ranges)
    sheet.start(iter(records))  # read again from the filled rows
    sheet.use_header_row(header)
    return MergedFill(mode, filled, named)


def _fill(records: list[Record], ranges: list[MergedRange]) -> int:
    """Put each range's top-left value into the blank cells it covers; count them."""
    index = {record[0]: i for i, record in enumerate(records)}
    width = max(len(record[1]) for record in records)
    last_row = max(index)
    changes: dict[int, dict[int, str]] = {}
    for merged in ranges:
        top = index.get(merged.first_row)
        cells = records[top][1] if top is not None else ()
        value = cells[merged.first_column] if merged.first_column < len(cells) else ""
        if not value.strip():
            continue
        for row in range(merged.first_row, min(merged.last_row, last_row) + 1):
            if row not in index:
                continue
            for column in range(merged.first_column, min(merged.last_column, width - 1) + 1):
                if (row, column) != (merged.first_row, merged.first_column):
                    changes.setdefault(row, {})[column] = value
    filled = 0
    for row, columns in changes.items():
        number, cells, cut = records[index[row]]
        grown = list(cells) + [""] * (max(columns) + 1 - len(cells))
        for column, value in columns.items():
            if not grown[column].strip():
                grown[column] = value
                filled += 1
        kept, more = cut_cells(grown)
        records[index[row]] = (number, kept, cut + more)
    return filled
