"""A CSV row is bounded in cells and characters, whichever reader path reads it."""

from __future__ import annotations

from pathlib import Path

import pytest

from petsync.core.interface import CELL_LIMIT, ROW_CELL_LIMIT, ROW_CHAR_LIMIT
from petsync.importer.sheets.opening import open_spreadsheet
from petsync.importer.sheets.sheet import CUT_KEEP, CUT_NOTE, CutCell

LONG = "y" * (CELL_LIMIT + 1)  # sends a record to the chunked reader

ROWS = [
    # (row text, cells in the file)
    ("," * 5_000, 5_001),  # short line, many cells: the csv module's path
    (LONG + "," * 1_000_000, 1_000_001),
    (LONG + "," * 3_000 + '"a,b",' + '"x""y"' + "," * 10, 3_012),
    (LONG + "," + '"q\nr",' * 2_000 + "z", 2_002),
]


@pytest.mark.parametrize(("text", "width"), ROWS, ids=["short", "long", "quotes", "newlines"])
def test_a_row_over_the_cell_limit_keeps_its_first_cells_and_counts_them_all(
    tmp_path: Path, text: str, width: int
) -> None:
    path = tmp_path / "wide.csv"
    path.write_text(f"name,categoryId\n{text}\nRex,1\n", newline="")
    with open_spreadsheet(path) as sheet:
        first, after = list(sheet.rows())
    assert len(first.cells) == ROW_CELL_LIMIT
    assert CutCell(ROW_CELL_LIMIT, width, "row_cells") in first.cut
    assert after.cells == ("Rex", "1")


def test_a_row_over_the_character_limit_keeps_the_start_of_the_later_cells(
    tmp_path: Path,
) -> None:
    cell = "n" * 100_000
    path = tmp_path / "long.csv"
    path.write_text("name,categoryId\n" + ",".join([cell] * 20) + "\nRex,1\n")
    with open_spreadsheet(path) as sheet:
        first, after = list(sheet.rows())
    assert first.cut == (CutCell(10, 2_000_000, "row_chars"),)
    assert first.cells[:10] == (cell,) * 10  # within the row's budget: whole
    assert first.cells[11] == "n" * CUT_KEEP + CUT_NOTE
    assert sum(map(len, first.cells)) < ROW_CHAR_LIMIT + CELL_LIMIT + 20 * (CUT_KEEP + 40)
    assert after.cells == ("Rex", "1")
