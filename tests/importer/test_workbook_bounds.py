"""The used range of an .xlsx sheet, measured before calamine reads it (sheet_range)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from petsync.core.errors import InputError
from petsync.importer.sheets import sheet_range
from petsync.importer.sheets.sheet import column_letters
from petsync.importer.sheets.sheet_range import UsedRange, check_sheet_range
from tests.cli.test_import_bounds import _far_cell_workbook


def _with_sheet(path: Path, cells: str) -> Path:
    """The far-cell workbook of the CLI test with its sheetData replaced by ``cells``."""
    _far_cell_workbook(path)
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    sheet = members["xl/worksheets/sheet1.xml"].decode()
    start, end = sheet.index("<sheetData>"), sheet.index("</sheetData>")
    members["xl/worksheets/sheet1.xml"] = (sheet[:start] + cells + sheet[end:]).encode()
    path.unlink()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


CASES = [
    ('<sheetData><row r="1"><c r="A1"><v>1</v></c><c r="C1"><v>2</v></c></row>', (1, 3)),
    # Formatting only (closed at once): not a value, as calamine skips it.
    ('<sheetData><row r="1"><c r="A1"><v>1</v></c></row><row r="9"><c r="Z9" s="1"/>', (1, 1)),
    # Tags without r: each the one after the previous.
    ("<sheetData><row><c><v>1</v></c><c><v>2</v></c></row><row><c/><c><v>3</v></c>", (2, 2)),
    # A namespace prefix.
    ('<sheetData><x:row r="4"><x:c r="D4"><x:v>1</x:v></x:c></x:row><row>', (4, 4)),
]


@pytest.mark.parametrize(("cells", "expected"), CASES, ids=["refs", "styled", "no-r", "prefix"])
def test_the_used_range_counts_the_cells_holding_a_value(
    tmp_path: Path, cells: str, expected: tuple[int, int]
) -> None:
    closing = "" if cells.endswith("</row>") else "</row>"
    path = _with_sheet(tmp_path / "w.xlsx", cells + closing + "</sheetData>")
    assert check_sheet_range(path, "Pets") == UsedRange(*expected)


def test_a_workbook_inflating_past_the_limit_is_refused_naming_the_member(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sheet_range, "WORKBOOK_XML_LIMIT", 100_000)
    path = _with_sheet(tmp_path / "bomb.xlsx", "<sheetData>" + " " * 200_000 + "</sheetData>")
    assert path.stat().st_size < 5_000
    with pytest.raises(InputError, match=r"inflates to more than 100000 bytes \(at 'xl/"):
        check_sheet_range(path, "Pets")


def test_a_file_that_is_no_zip_is_left_to_the_reader(tmp_path: Path) -> None:
    path = tmp_path / "no.xlsx"
    path.write_bytes(b"not a zip")
    assert check_sheet_range(path, "Pets") is None


def test_column_letters_round_trip() -> None:
    assert [column_letters(n - 1) for n in (1, 26, 27, 702, 703, 16384)] == [
        "A",
        "Z",
        "AA",
        "ZZ",
        "AAA",
        "XFD",
    ]
