"""Workbook cells pass through as the sheet shows them: exact integers, formulas named."""

from __future__ import annotations

import csv
import re
import zipfile
from pathlib import Path

import openpyxl

from petsync.importer.config import ImportConfig
from petsync.importer.run import run_import
from petsync.importer.sheets.opening import open_spreadsheet
from petsync.importer.sheets.xlsx_cells import read_exact_cells
from tests.importer.doubles import InstantClient

BIG = 9007199254740993  # 2**53 + 1: a double cannot hold it


def workbook(path: Path, *rows: list[object]) -> Path:
    """An .xlsx of ``rows``; an int cell is stored with every digit, as tools other than
    Excel write it (openpyxl itself would round it through a double)."""
    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    for row in rows:
        sheet.append([f"INT:{cell}" if isinstance(cell, int) else cell for cell in row])
    book.save(path)
    member = "xl/worksheets/sheet1.xml"
    with zipfile.ZipFile(path) as archive:
        parts = {name: archive.read(name) for name in archive.namelist()}
    parts[member] = re.sub(
        rb'<c r="([A-Z]+[0-9]+)" t="inlineStr"><is><t>INT:(-?[0-9]+)</t></is></c>',
        rb'<c r="\1" t="n"><v>\2</v></c>',
        parts[member],
    )
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in parts.items():
            archive.writestr(name, data)
    return path


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8-sig", newline="") as handle:
        return list(csv.DictReader(handle))


def test_integers_past_two_to_the_53_read_exactly(tmp_path: Path) -> None:
    path = workbook(
        tmp_path / "pets.xlsx",
        ["name", "categoryId", "id"],
        ["Rex", BIG, BIG],
        ["Tom", 12.0, -BIG],
    )
    with open_spreadsheet(path) as sheet:
        rows = [row.cells for row in sheet.rows()]
    assert rows == [("Rex", str(BIG), str(BIG)), ("Tom", "12", str(-BIG))]


def test_pass_through_integers_stay_integers_in_the_output_files(tmp_path: Path) -> None:
    path = workbook(
        tmp_path / "pets.xlsx",
        ["name", "categoryId", "id"],
        ["Rex", 1, BIG],
        ["", 2, BIG],
    )
    client = InstantClient()
    report = run_import(ImportConfig(path), client)
    assert (report.created, report.rejected_local) == (1, 1)
    assert [r["id"] for r in read_csv(tmp_path / "pets.accepted.csv")] == [str(BIG)]
    assert [r["id"] for r in read_csv(tmp_path / "pets.rejects.csv")] == [str(BIG)]
    assert client.calls == 1


def test_a_formula_without_a_saved_value_rejects_its_row_naming_the_cell(tmp_path: Path) -> None:
    path = workbook(
        tmp_path / "pets.xlsx",
        ["name", "categoryId"],
        ['=UPPER("rex")', 1],
        ["Tom", 2],
        [None, "=1+1"],  # a row of nothing but an uncomputed formula is not a blank row
    )
    report = run_import(ImportConfig(path), InstantClient())
    assert (report.created, report.rejected_local, report.skipped_blank) == (1, 2, 0)
    rejects = read_csv(tmp_path / "pets.rejects.csv")
    assert [(r["petsync_row"], r["petsync_error_code"]) for r in rejects] == [
        ("2", "formula_without_value"),  # no "name is blank" on top: the cell is no blank
        ("4", "formula_without_value;name_missing"),
    ]
    assert rejects[0]["petsync_error_message"].startswith(
        "cell A2 (name) holds a formula with no saved value"
    )
    assert rejects[1]["petsync_error_field"] == "categoryId;name"


def test_a_sheet_with_neither_reads_no_xml(tmp_path: Path) -> None:
    path = workbook(tmp_path / "pets.xlsx", ["name", "categoryId"], ["Rex", 1])
    found = read_exact_cells(path, "Sheet")
    assert (found.integers, found.formulas) == ({}, set())


def test_only_formulas_with_no_value_where_one_belongs_are_flagged() -> None:
    import io

    from petsync.importer.sheets.xlsx_cells import _parse

    xml = (
        b'<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
        b'<sheetData><row r="2">'
        b'<c r="A2" t="str"><f>IF(B2,"x","")</f><v></v></c>'  # an empty text result: a value
        b'<c r="B2"><f t="shared" si="0"/><v>3</v></c>'  # a shared formula, computed
        b'<c r="C2"><f>1+1</f></c>'  # never computed
        b'<c r="D2"><f>1+1</f><v/></c>'  # written empty by a program
        b'<c r="E2" t="n"><v>-12345678901234567</v></c>'
        b'<c t="n"><v>9007199254740993</v></c>'  # no reference: the next column
        b"</row></sheetData></worksheet>"
    )
    found = _parse(io.BytesIO(xml))
    assert found.formulas == {(2, 2), (2, 3)}
    assert found.integers == {(2, 4): "-12345678901234567", (2, 5): "9007199254740993"}
