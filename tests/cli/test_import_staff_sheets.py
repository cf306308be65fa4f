"""Spreadsheets as staff keep them: a title above the header, merged cells, category names.

Each is imported end to end against the reference server, from files written by openpyxl
and (where LibreOffice is installed) by LibreOffice itself.
"""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path
from typing import Any

import openpyxl
from click.testing import CliRunner, Result

from petsync.cli import cli
from tests.importer.office import convert, needs_soffice


def run(srv: Any, *args: str) -> Result:
    env = {"PETSYNC_API_KEY": srv.api_key.reveal(), "PETSYNC_BASE_URL": srv.base_url}
    return CliRunner().invoke(cli, ["import", *args], env=env, catch_exceptions=False)


def read_rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8-sig", newline="") as handle:
        return list(csv.DictReader(handle))


def pets(srv: Any) -> Counter[tuple[str, int]]:
    return Counter((pet.name, pet.categoryId) for pet in srv.store.all())


def title_workbook(path: Path) -> None:
    """'April arrivals' merged across the columns, a blank row, then the header (row 3)."""
    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.append(["April arrivals"])
    sheet.merge_cells("A1:C1")
    sheet.append([])
    sheet.append(["Name", "Category", "Status"])
    sheet.append(["Rex", 1, "available"])
    sheet.append(["Nemo", "x", "available"])  # row 5: rejected
    sheet.append(["Tom", 2, "sold"])
    book.save(path)


def test_a_title_row_workbook_finds_its_header_and_keeps_the_sheets_row_numbers(
    petstore_server: Any, isolated: Path
) -> None:
    srv = petstore_server()
    title_workbook(Path("april.xlsx"))
    result = run(srv, "april.xlsx")
    assert result.exit_code == 4, result.output
    assert result.output.splitlines()[0] == (
        "read april.xlsx: 3 rows, 0 blank skipped, sheet 'Sheet', header on row 3"
    )
    assert pets(srv) == Counter({("Rex", 1): 1, ("Tom", 2): 1})
    (rejected,) = read_rows(Path("april.rejects.csv"))
    assert (rejected["Name"], rejected["petsync_row"]) == ("Nemo", "5")
    rows = {row["Name"]: row["petsync_row"] for row in read_rows(Path("april.accepted.csv"))}
    assert rows == {"Rex": "4", "Tom": "6"}

    # The fix loop keeps those numbers: the fixed row is created once.
    fixed = [{**rejected, "Category": "7"}]
    with Path("april.rejects.csv").open("w", encoding="utf-8-sig", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rejected))
        writer.writeheader()
        writer.writerows(fixed)
    assert run(srv, "april.rejects.csv").exit_code == 0
    assert run(srv, "april.xlsx").exit_code == 0
    assert pets(srv) == Counter({("Rex", 1): 1, ("Tom", 2): 1, ("Nemo", 7): 1})


def test_a_csv_with_notes_above_the_header_and_the_report_says_where(
    petstore_server: Any, isolated: Path
) -> None:
    srv = petstore_server()
    Path("pets.csv").write_text(
        "Shelter export,,\nprinted 2026-04-01,,\n,,\nname,categoryId,status\nRex,1,\n"
    )
    result = run(srv, "pets.csv", "--report", "report.json")
    assert result.exit_code == 0, result.output
    assert "header on row 4" in result.output.splitlines()[0]
    assert '"header_row": 4' in Path("report.json").read_text()
    assert pets(srv) == Counter({("Rex", 1): 1})


def test_two_header_rows_are_ambiguous_until_header_row_says_which(
    petstore_server: Any, isolated: Path
) -> None:
    srv = petstore_server()
    Path("pets.csv").write_text(
        "April,,\nname,categoryId,status\nRex,1,\n,,\nMay,,\nname,categoryId,status\nTom,2,\n"
    )
    # Row 1 is a title, so the header is looked for: rows 2 and 6 both qualify.
    ambiguous = run(srv, "pets.csv")
    assert ambiguous.exit_code == 2
    assert ambiguous.output.strip() == (
        "Error: pets.csv: cannot tell the header row: rows 2 and 6 each name the fields (name, "
        "categoryId); pass --header-row N with the one that heads the rows to import (job key "
        "header_row)"
    )
    assert srv.store.count() == 0
    stated = run(srv, "pets.csv", "--header-row", "6")
    assert stated.exit_code == 0, stated.output
    assert "header on row 6" in stated.output
    assert pets(srv) == Counter({("Tom", 2): 1})
    past = run(srv, "pets.csv", "--header-row", "40")
    assert past.exit_code == 2
    assert "--header-row 40: the sheet ends at row 7" in past.output


def test_a_header_past_row_20_is_named_with_the_option(
    petstore_server: Any, isolated: Path
) -> None:
    srv = petstore_server()
    Path("pets.csv").write_text("title\n" + "note\n" * 24 + "name,categoryId\nRex,1\n")
    result = run(srv, "pets.csv")
    assert result.exit_code == 2
    assert "no row of the first 20 names the fields" in result.output
    stated = run(srv, "pets.csv", "--header-row", "26")
    assert stated.exit_code == 0, stated.output
    assert pets(srv) == Counter({("Rex", 1): 1})


@needs_soffice
def test_libreoffice_title_row_sheets_import(petstore_server: Any, isolated: Path) -> None:
    srv = petstore_server()
    title_workbook(Path("made.xlsx"))
    Path("lo").mkdir()
    for kind in ("ods", "xlsx"):
        saved = convert(Path("made.xlsx"), kind, Path("lo"))
        result = run(srv, str(saved), "--dry-run")
        assert result.exit_code == 4, result.output
        assert "header on row 3" in result.output.splitlines()[0]
        assert "dry run: 2 rows would be sent" in result.output
