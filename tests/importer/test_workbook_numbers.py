"""Workbook numbers in every format (issue: staff spreadsheets as they come, item 7):
integers exact where the file holds them exactly; a number held only as a double past 2**53,
or written with fewer digits than it has, rejects its row saying so; a formula without a
saved value rejects its row naming the cell. Files written by hand, by openpyxl and, where
``soffice`` is installed, converted by LibreOffice."""

from __future__ import annotations

import csv
import shutil
import subprocess
from pathlib import Path

import openpyxl
import pytest

from petsync.importer.config import ImportConfig
from petsync.importer.run import run_import
from petsync.importer.sheets.opening import open_spreadsheet
from tests.importer.doubles import InstantClient
from tests.importer.workbook_bombs import HEADER_ROW, ods_cell, ods_row, write_ods
from tests.importer.xlsb_builder import write_xlsb

BIG = 9007199254740993  # 2**53 + 1: a double cannot hold it
NOT_EXACT = "a number the workbook stores only as a floating-point value, exact only below 2^53"


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8-sig", newline="") as handle:
        return list(csv.DictReader(handle))


def rejects(path: Path) -> list[tuple[str, str, str]]:
    """Import ``path`` (no API): its rejects as (row, code, message)."""
    run_import(ImportConfig(path), InstantClient())
    found = read_csv(path.with_name(f"{path.stem}.rejects.csv"))
    return [(r["petsync_row"], r["petsync_error_code"], r["petsync_error_message"]) for r in found]


def test_an_ods_integer_past_2_53_reads_as_the_file_writes_it(tmp_path: Path) -> None:
    rows = (
        HEADER_ROW
        + ods_row(ods_cell("Rex") + ods_cell(BIG))
        + ods_row(ods_cell("Tom") + ods_cell(-BIG), repeats=2)
        + ods_row(ods_cell("Ann") + ods_cell(123456789012345))
    )
    path = write_ods(tmp_path / "pets.ods", ("Pets", rows))
    with open_spreadsheet(path) as sheet:
        cells = [row.cells for row in sheet.rows()]
    assert cells == [
        ("Rex", str(BIG)),
        ("Tom", str(-BIG)),
        ("Tom", str(-BIG)),
        ("Ann", "123456789012345"),
    ]


def test_an_ods_formula_without_a_value_rejects_its_row_naming_the_cell(tmp_path: Path) -> None:
    rows = (
        HEADER_ROW
        + ods_row(ods_cell("Rex") + ods_cell(None, formula="of:=1+1"))
        + ods_row(ods_cell("Tom") + ods_cell(2))
    )
    path = write_ods(tmp_path / "pets.ods", ("Pets", rows))
    assert rejects(path) == [
        (
            "2",
            "formula_without_value",
            "cell B2 (categoryId) holds a formula with no saved value (the program that wrote "
            "the workbook did not compute it); open the workbook in Excel or LibreOffice and "
            "save it, or type the value",
        )
    ]


def _xlsx_float(path: Path, value: float) -> Path:
    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.append(["name", "categoryId"])
    sheet.append(["Rex", value])
    sheet.append(["Tom", 2])
    book.save(path)
    return path


def _ods_float(path: Path, value: float) -> Path:
    cell = f'<table:table-cell office:value-type="float" office:value="{value!r}"/>'
    rows = HEADER_ROW + ods_row(ods_cell("Rex") + cell) + ods_row(ods_cell("Tom") + ods_cell(2))
    return write_ods(path, ("Pets", rows))


def _xlsb_float(path: Path, value: float) -> Path:
    cells = [(0, 0, "name"), (0, 1, "categoryId"), (1, 0, "Rex"), (1, 1, value)]
    return write_xlsb(path, [*cells, (2, 0, "Tom"), (2, 1, 2.0)])


WRITERS = {".xlsx": _xlsx_float, ".ods": _ods_float, ".xlsb": _xlsb_float}


@pytest.mark.parametrize("suffix", sorted(WRITERS), ids=sorted(WRITERS))
def test_a_number_held_only_as_a_double_past_2_53_rejects_its_row_saying_so(
    tmp_path: Path, suffix: str
) -> None:
    path = WRITERS[suffix](tmp_path / f"pets{suffix}", 1.2345678901234567e19)
    [(row, code, message)] = rejects(path)
    assert (row, code) == ("2", "number_not_exact")
    assert message.startswith("cell B2 (categoryId) holds 1.23456789012345")
    assert NOT_EXACT in message
    assert "Type it as text (a leading apostrophe" in message


@pytest.mark.parametrize("suffix", sorted(WRITERS), ids=sorted(WRITERS))
def test_a_double_below_2_53_is_an_exact_integer(tmp_path: Path, suffix: str) -> None:
    path = WRITERS[suffix](tmp_path / f"pets{suffix}", 1234567890123456.0)
    with open_spreadsheet(path) as sheet:
        assert [row.cells for row in sheet.rows()] == [("Rex", "1234567890123456"), ("Tom", "2")]


def test_a_16_digit_ods_number_written_with_15_digits_rejects_its_row(tmp_path: Path) -> None:
    # What LibreOffice writes for 9007199254740993; a shorter mantissa is exact (1.5E+015).
    cells = (
        '<table:table-cell office:value-type="float" office:value="9.00719925474099E+015"/>',
        '<table:table-cell office:value-type="float" office:value="1.5E+015"/>',
    )
    rows = HEADER_ROW + "".join(
        ods_row(ods_cell(name) + cell) for name, cell in zip(("Rex", "Tom"), cells, strict=True)
    )
    path = write_ods(tmp_path / "pets.ods", ("Pets", rows))
    [(row, code, message)] = rejects(path)
    assert (row, code) == ("2", "number_not_exact")
    assert message.startswith(
        "cell B2 (categoryId) holds 9.00719925474099E+015, a whole number of 16 digits that "
        "the workbook stores with fewer significant digits (LibreOffice keeps 15)"
    )
    assert [r["categoryId"] for r in read_csv(tmp_path / "pets.accepted.csv")] == [
        "1500000000000000"
    ]


# Files LibreOffice writes: converted from an openpyxl workbook by soffice itself.
SOFFICE = shutil.which("soffice")
needs_soffice = pytest.mark.skipif(
    SOFFICE is None,
    reason="soffice not installed (apt-get install libreoffice-calc-nogui)",
)


def _convert(source: Path, suffix: str, tmp_path: Path) -> Path:
    """``source`` converted by LibreOffice, with a private profile, within two minutes."""
    out = tmp_path / suffix
    assert SOFFICE is not None
    subprocess.run(
        [
            SOFFICE,
            f"-env:UserInstallation={(tmp_path / 'profile').as_uri()}",
            "--headless",
            "--convert-to",
            suffix,
            "--outdir",
            str(out),
            str(source),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return out / f"{source.stem}.{suffix}"


@pytest.fixture(scope="module")
def libreoffice_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One openpyxl workbook (a 15-digit id, one past 2**63 held as a double, a formula
    without a saved value) and its .ods and .xls as LibreOffice saves them."""
    folder = tmp_path_factory.mktemp("lo")
    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.title = "Pets"
    sheet.append(["name", "categoryId", "total"])
    sheet.append(["Rex", 123456789012345, "=1+1"])
    sheet.append(["Tom", 1.2345678901234567e19, 5])
    source = folder / "pets.xlsx"
    book.save(source)
    return {suffix: _convert(source, suffix, folder) for suffix in ("ods", "xls")}


@needs_soffice
@pytest.mark.parametrize("suffix", ["ods", "xls"])
def test_libreoffice_workbooks_read_integers_exactly_and_reject_what_is_not(
    libreoffice_files: dict[str, Path], tmp_path: Path, suffix: str
) -> None:
    path = shutil.copy(libreoffice_files[suffix], tmp_path / f"pets.{suffix}")
    with open_spreadsheet(Path(path)) as sheet:
        cells = [row.cells for row in sheet.rows()]
    assert cells[0] == ("Rex", "123456789012345", "2")  # LibreOffice computed the formula
    [(row, code, message)] = rejects(Path(path))
    assert (row, code) == ("3", "number_not_exact")
    assert "cell B3 (categoryId) holds 1.2345678901234" in message
    assert NOT_EXACT in message
