"""Spreadsheets as staff keep them: a title above the header, merged cells, category names.

Each is imported end to end against the reference server, from files written by openpyxl
and (where LibreOffice is installed) by LibreOffice itself.
"""

from __future__ import annotations

import csv
import shlex
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
        "categoryId); pass --header-row N with the one that heads the rows to import"
    )
    assert srv.store.count() == 0
    stated = run(srv, "pets.csv", "--header-row", "6")
    assert stated.exit_code == 0, stated.output
    assert "header on row 6" in stated.output
    assert pets(srv) == Counter({("Tom", 2): 1})
    past = run(srv, "pets.csv", "--header-row", "40")
    assert past.exit_code == 2
    assert "--header-row 40: the sheet ends at row 7" in past.output
    # The job key says it too: from the April table on, where May's title and header
    # are rows like any other (rejected), and Tom, row 7, is already done.
    Path("job.toml").write_text('[import]\nfile = "pets.csv"\nheader_row = 2\n')
    env = {"PETSYNC_API_KEY": srv.api_key.reveal(), "PETSYNC_BASE_URL": srv.base_url}
    job = CliRunner().invoke(cli, ["run", "job.toml"], env=env, catch_exceptions=False)
    assert job.exit_code == 4, job.output
    assert "header on row 2" in job.output
    assert "created 1, already done 1 (earlier runs), rejected 2" in job.output
    assert pets(srv) == Counter({("Tom", 2): 1, ("Rex", 1): 1})


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


STAFF_SHEET = "Name,Category\nRex,Dog\nTom, cat \nPiggy,guineapig\nPolly,Bird\nMia,3\n"
MAP = "name,categoryId\nDog,1\nCat,2\nGuinea pig,7\n"


def test_category_names_are_read_through_the_map_and_an_unknown_one_names_it(
    petstore_server: Any, isolated: Path
) -> None:
    srv = petstore_server()
    Path("arrivals.csv").write_text(STAFF_SHEET)
    Path("categories.csv").write_text(MAP)
    result = run(srv, "arrivals.csv", "--category-map", "categories.csv")
    assert result.exit_code == 4, result.output
    assert "normalised: category_named 3, trimmed 1" in result.output.splitlines()
    assert pets(srv) == Counter({("Rex", 1): 1, ("Tom", 2): 1, ("Piggy", 7): 1, ("Mia", 3): 1})
    (polly,) = read_rows(Path("arrivals.rejects.csv"))
    assert (polly["Name"], polly["petsync_error_code"]) == ("Polly", "category_unknown")
    assert polly["petsync_error_message"] == (
        "category 'Bird' is not in the category map categories.csv; add it there with its id, "
        "or write the id as digits"
    )
    # The office adds the word once; the same command creates Polly, and only Polly.
    Path("categories.csv").write_text(MAP + "bird,4\n")
    again = run(srv, "arrivals.csv", "--category-map", "categories.csv")
    assert again.exit_code == 0, again.output
    assert pets(srv)[("Polly", 4)] == 1 and srv.store.count() == 5


def test_the_printed_fix_command_carries_the_map_and_state_dir_it_needs(
    petstore_server: Any, isolated: Path
) -> None:
    # Staff run the command the summary prints: without the first run's --category-map the
    # fixed words were rejected again, and without its --state-dir the fix's journal went
    # to another home (where a second fix could send the row again).
    srv = petstore_server()
    Path("arrivals.csv").write_text("Name,Category\nRex,Dog\nPolly,Parrot\n")
    Path("my map.csv").write_text("name,categoryId\nDog,1\nBird,4\n")
    first = run(srv, "arrivals.csv", "--category-map", "my map.csv", "--state-dir", "state")
    assert first.exit_code == 4, first.output
    printed = "petsync import arrivals.rejects.csv --state-dir state --category-map 'my map.csv'"
    assert f"rejects:   arrivals.rejects.csv  (fix them, then: {printed})" in first.output
    (polly,) = read_rows(Path("arrivals.rejects.csv"))
    with Path("arrivals.rejects.csv").open("w", encoding="utf-8-sig", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(polly))
        writer.writeheader()
        writer.writerow({**polly, "Category": "Bird"})
    fixed = run(srv, *shlex.split(printed)[2:])
    assert fixed.exit_code == 0, fixed.output
    assert "note:" not in fixed.output  # the first file's journal was found
    assert pets(srv) == Counter({("Rex", 1): 1, ("Polly", 4): 1})


def test_without_a_map_a_category_word_points_to_a_category_map(
    petstore_server: Any, isolated: Path
) -> None:
    srv = petstore_server()
    Path("arrivals.csv").write_text("name,categoryId\nPolly,Bird\nMia,12.5\n")
    result = run(srv, "arrivals.csv", "--dry-run")
    assert result.exit_code == 4
    polly, mia = read_rows(Path("arrivals.rejects.csv"))
    assert polly["petsync_error_message"] == (
        "categoryId 'Bird' is not a whole number; write the category's id as digits, like 12, "
        "or give the import a category map (a sheet of name and categoryId) to read category "
        "names"
    )
    assert "category map" not in mia["petsync_error_message"]  # a number, not a name


def test_a_map_with_repeated_names_or_bad_ids_stops_before_anything_is_sent(
    petstore_server: Any, isolated: Path
) -> None:
    srv = petstore_server()
    Path("arrivals.csv").write_text(STAFF_SHEET)
    Path("map.csv").write_text("name,categoryId\nDog,1\nCat,two\n CAT ,2\n,5\nDog,1\n")
    result = run(srv, "arrivals.csv", "--category-map", "map.csv")
    assert result.exit_code == 2
    assert result.output.strip() == (
        "Error: category map map.csv: row 3: 'Cat': categoryId 'two' is not a whole number; "
        "write it as digits only, like 12 (no decimals, exponents or separators; in Excel, "
        "store long ids as text); row 5: the name is blank; row 6: 'Dog' is named on row 2 "
        "too; name each category once. Fix the map; nothing was sent"
    )
    assert srv.store.count() == 0
    Path("nocols.csv").write_text("word,number\nDog,1\n")
    missing = run(srv, "arrivals.csv", "--category-map", "nocols.csv")
    assert missing.exit_code == 2
    assert "needs a name column (headed name or category)" in missing.output
    absent = run(srv, "arrivals.csv", "--category-map", "nope.csv")
    assert absent.exit_code == 2
    assert "Error: category map nope.csv: no such file; check --category-map" in absent.output


def test_the_map_from_a_workbook_a_job_file_and_the_environment(
    petstore_server: Any, isolated: Path
) -> None:
    srv = petstore_server()
    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    for row in (["Category", "ID"], ["Dog", 1], ["Cat", 2], ["Guinea pig", 7], ["Bird", 4]):
        sheet.append(row)
    book.save("categories.xlsx")
    Path("monday.csv").write_text(STAFF_SHEET)
    Path("job.toml").write_text(
        '[import]\nfile = ["monday.csv"]\ncategory_map = "categories.xlsx"\n'
    )
    env = {"PETSYNC_API_KEY": srv.api_key.reveal(), "PETSYNC_BASE_URL": srv.base_url}
    job = CliRunner().invoke(cli, ["run", "job.toml"], env=env, catch_exceptions=False)
    assert job.exit_code == 0, job.output
    assert srv.store.count() == 5

    # The environment's key in petsync.toml, relative to that file's folder.
    Path("conf").mkdir()
    Path("conf/categories.csv").write_text(MAP + "Bird,4\n")
    Path("conf/petsync.toml").write_text(
        f'[environments.production]\nbase_url = "{srv.base_url}"\ncategory_map = "categories.csv"\n'
    )
    Path("tuesday.csv").write_text("name,categoryId\nKit,cat\n")
    env = {"PETSYNC_API_KEY": srv.api_key.reveal(), "PETSYNC_CONFIG": "conf/petsync.toml"}
    tuesday = CliRunner().invoke(cli, ["import", "tuesday.csv"], env=env, catch_exceptions=False)
    assert tuesday.exit_code == 0, tuesday.output
    assert pets(srv)[("Kit", 2)] == 1


@needs_soffice
def test_a_map_saved_by_libreoffice_reads(petstore_server: Any, isolated: Path) -> None:
    srv = petstore_server()
    Path("arrivals.csv").write_text(STAFF_SHEET)
    Path("made").mkdir()
    Path("made/categories.csv").write_text(MAP + "Bird,4\n")
    saved = convert(Path("made/categories.csv"), "ods", Path("made"), infilter="CSV:44,34,76")
    result = run(srv, "arrivals.csv", "--category-map", str(saved))
    assert result.exit_code == 0, result.output
    assert srv.store.count() == 5


def test_a_dry_run_and_a_real_run_show_the_first_rejected_rows(
    petstore_server: Any, isolated: Path
) -> None:
    srv = petstore_server()
    rows = ["Rex,1,available", ",2,", "Tom,x,", "Mia,3,lost"] + [f"P{i},,sold" for i in range(10)]
    Path("pets.csv").write_text("name,categoryId,status\n" + "\n".join(rows) + "\n")
    for args in (["--dry-run"], []):
        result = run(srv, "pets.csv", *args)
        assert result.exit_code == 4, result.output
        lines = result.output.splitlines()
        at = next(i for i, line in enumerate(lines) if line.startswith("rejects:"))
        assert lines[at + 1 : at + 4] == [
            "  row 3, name: name is blank",
            "  row 4, categoryId: categoryId 'x' is not a whole number; write the category's id "
            "as digits, like 12, or give the import a category map (a sheet of name and "
            "categoryId) to read category names",
            "  row 5, status: status 'lost' is not one of available, pending, sold (or leave it "
            "blank)",
        ]
        assert lines[at + 4 : at + 11] == [
            f"  row {n}, categoryId: categoryId is blank" for n in range(6, 13)
        ]
        assert lines[at + 11] == "  and 3 more rejected rows"
    assert srv.store.count() == 1


def merged_workbook(path: Path) -> None:
    """A title merged over A1:C1, then a category merged over two rows (B3:B4), as
    LibreOffice and Excel keep it: the value in the top cell only."""
    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.append(["April arrivals"])
    sheet.merge_cells("A1:C1")
    sheet.append(["name", "categoryId", "status"])
    sheet.append(["Rex", 3, "available"])
    sheet.append(["Tom", None, "available"])
    sheet.merge_cells("B3:B4")
    sheet.append(["Mia", 5, "sold"])
    book.save(path)


def test_a_value_merged_over_rows_is_each_rows_value_and_the_summary_says_where(
    petstore_server: Any, isolated: Path
) -> None:
    srv = petstore_server()
    merged_workbook(Path("april.xlsx"))
    result = run(srv, "april.xlsx", "--report", "report.json")
    assert result.exit_code == 0, result.output
    assert (
        "  note: 1 cell came from merged cells B3:B4 (each takes the value it shows; "
        "--merged-cells blank leaves them blank)"
    ) in result.output.splitlines()
    assert pets(srv) == Counter({("Rex", 3): 1, ("Tom", 3): 1, ("Mia", 5): 1})
    assert '"ranges": [\n      "B3:B4"\n    ]' in Path("report.json").read_text()


def test_merged_cells_left_blank_reject_their_rows_and_say_why(
    petstore_server: Any, isolated: Path
) -> None:
    srv = petstore_server()
    merged_workbook(Path("april.xlsx"))
    Path("job.toml").write_text('[import]\nfile = "april.xlsx"\nmerged_cells = "blank"\n')
    env = {"PETSYNC_API_KEY": srv.api_key.reveal(), "PETSYNC_BASE_URL": srv.base_url}
    result = CliRunner().invoke(cli, ["run", "job.toml"], env=env, catch_exceptions=False)
    assert result.exit_code == 4, result.output
    assert (
        "  note: merged cells B3:B4 were left blank below their first cell (merged_cells = "
        '"blank" in job.toml): those cells read blank'
    ) in result.output.splitlines()
    (tom,) = read_rows(Path("april.rejects.csv"))
    assert (tom["name"], tom["petsync_row"], tom["petsync_error_code"]) == (
        "Tom",
        "4",
        "category_missing",
    )
    assert pets(srv) == Counter({("Rex", 3): 1, ("Mia", 5): 1})


@needs_soffice
def test_merged_cells_of_libreoffice_sheets_are_filled(
    petstore_server: Any, isolated: Path
) -> None:
    srv = petstore_server()
    merged_workbook(Path("made.xlsx"))
    Path("lo").mkdir()
    for kind in ("ods", "xlsx"):
        saved = convert(Path("made.xlsx"), kind, Path("lo"))
        result = run(srv, str(saved), "--dry-run")
        assert result.exit_code == 0, result.output
        assert "1 cell came from merged cells B3:B4" in result.output
        assert "dry run: 3 rows would be sent" in result.output
