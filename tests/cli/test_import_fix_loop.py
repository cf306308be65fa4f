"""The fix loop as staff run it over days: a row keeps its identity, so it is created once."""

from __future__ import annotations

import csv
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import openpyxl
from click.testing import CliRunner, Result

from petsync.cli import cli
from tests.importer.doubles import journal_of


def run(srv: Any, *args: str) -> Result:
    env = {"PETSYNC_API_KEY": srv.api_key.reveal(), "PETSYNC_BASE_URL": srv.base_url}
    return CliRunner().invoke(cli, ["import", *args], env=env, catch_exceptions=False)


def read_rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8-sig", newline="") as handle:
        return list(csv.DictReader(handle))


def write_rows(path: Path, rows: list[dict[str, str]]) -> None:
    with path.open("w", encoding="utf-8-sig", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def names(srv: Any) -> Counter[str]:
    return Counter(pet.name for pet in srv.store.all())


def workbook(path: Path, *rows: list[object]) -> None:
    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    for row in rows:
        sheet.append(row)
    book.save(path)


def test_a_fixed_row_is_created_once_however_often_and_in_whatever_bytes_it_is_fixed(
    petstore_server: Any, isolated: Path
) -> None:
    srv = petstore_server()
    workbook(
        Path("new-pets.xlsx"),
        ["name", "categoryId", "status", "notes"],
        ["Rex", 1, "available", "good boy"],
        ["Nemo", "fish", "available", "orange"],
        ["Tom", 2, None, ""],
    )
    first = run(srv, "new-pets.xlsx")
    assert first.exit_code == 4, first.output
    rejects = Path("new-pets.rejects.csv")
    (rejected,) = read_rows(rejects)
    assert (rejected["name"], rejected["petsync_row"]) == ("Nemo", "3")
    assert len(rejected["petsync_origin"]) == 64  # the workbook's sha256
    shutil.copy(rejects, "kept-copy.rejects.csv")  # a person keeps the first reject file

    # Day 2: fix the category and import the fixed file: exit 0.
    write_rows(rejects, [{**rejected, "categoryId": "7"}])
    fixed = run(srv, "new-pets.rejects.csv")
    assert fixed.exit_code == 0, fixed.output
    assert names(srv) == Counter({"Rex": 1, "Nemo": 1, "Tom": 1})
    (nemo,) = [pet for pet in srv.store.all() if pet.name == "Nemo"]

    # A dry run of the original knows it too: Nemo is no reject any more, and nothing
    # would be sent (Rex and Tom were created by the first run).
    dry = run(srv, "new-pets.xlsx", "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert (
        "dry run: 0 rows would be sent, nothing sent; rejected locally 0; already created 3"
    ) in dry.output.splitlines()
    assert not rejects.exists()

    # Day 3: the original command again (the docs call it safe): no re-reject, and the
    # accepted file keeps Nemo, with its id and the fix file that created it.
    again = run(srv, "new-pets.xlsx")
    assert again.exit_code == 0, again.output
    assert not rejects.exists()
    accepted = {row["name"]: row for row in read_rows(Path("new-pets.accepted.csv"))}
    assert sorted(accepted) == ["Nemo", "Rex", "Tom"]
    assert accepted["Nemo"]["petsync_id"] == str(nemo.id)
    assert accepted["Nemo"]["categoryId"] == "7"  # the pet as it was created
    assert accepted["Nemo"]["petsync_fixed_in"] == "new-pets.rejects.csv"
    assert accepted["Nemo"]["notes"] == "orange"
    assert names(srv) == Counter({"Rex": 1, "Nemo": 1, "Tom": 1})

    # Day 4: someone fixes the kept copy of the reject file differently and imports it.
    (old,) = read_rows(Path("kept-copy.rejects.csv"))
    write_rows(Path("kept-copy.rejects.csv"), [{**old, "categoryId": "8", "notes": "fixed again"}])
    second = run(srv, "kept-copy.rejects.csv")
    assert second.exit_code == 0, second.output
    assert "created 0, already done 1 (earlier runs)" in second.output
    assert names(srv)["Nemo"] == 1  # exactly one Nemo on the server


def test_an_uncertain_file_fed_back_never_sends_its_rows_again(
    petstore_server: Any, isolated: Path
) -> None:
    srv = petstore_server()
    Path("pets.csv").write_text("name,categoryId\nRex,1\nTom,2\n")
    assert run(srv, "pets.csv").exit_code == 0
    # A row of the first file left uncertain (sent, outcome unknown), as a kill leaves it.
    journal = journal_of(Path("pets.csv"))
    assert journal.parent.parent.name == "journals"  # the API's home, not the folder's
    with journal.open("a") as handle:
        handle.write('{"row": 3, "state": "sending"}\n')
    assert run(srv, "pets.csv").exit_code == 4
    uncertain = read_rows(Path("pets.uncertain.csv"))
    assert [row["name"] for row in uncertain] == ["Tom"]

    # Importing the uncertain file as if it were a fix must not send Tom a second time.
    result = run(srv, "pets.uncertain.csv")
    assert result.exit_code == 4, result.output
    assert names(srv) == Counter({"Rex": 1, "Tom": 1})
    (still,) = read_rows(Path("pets.uncertain.csv"))
    assert still["petsync_row"] == "3"


def test_rows_added_to_a_reject_file_or_repeated_in_it_are_rejected_with_the_reason(
    petstore_server: Any, isolated: Path
) -> None:
    srv = petstore_server()
    Path("pets.csv").write_text("name,categoryId\nRex,x\nTom,y\n")
    assert run(srv, "pets.csv").exit_code == 4
    rex, tom = read_rows(Path("pets.rejects.csv"))
    write_rows(
        Path("pets.rejects.csv"),
        [
            {**rex, "categoryId": "1"},
            {**rex, "categoryId": "2"},  # the same first-file row twice
            {**tom, "name": "Kit", "categoryId": "3", "petsync_row": "", "petsync_origin": ""},
        ],
    )
    result = run(srv, "pets.rejects.csv")
    assert result.exit_code == 4, result.output
    assert names(srv) == Counter({"Rex": 1})
    codes = {
        (row["name"], row["categoryId"]): row["petsync_error_code"]
        for row in read_rows(Path("pets.rejects.csv"))
    }
    assert codes == {
        ("Rex", "2"): "row_repeated",
        ("Kit", "3"): "row_origin_missing",
    }  # Tom's row, deleted from the file being fixed, is gone with it


def test_a_reject_file_saved_as_a_workbook_keeps_its_rows_identity(
    petstore_server: Any, isolated: Path
) -> None:
    srv = petstore_server()
    Path("pets.csv").write_text("name,categoryId\nRex,1\nNemo,fish\n")
    assert run(srv, "pets.csv").exit_code == 4
    (row,) = read_rows(Path("pets.rejects.csv"))
    for category in ("7", "8"):  # fixed in Excel and saved as .xlsx, twice, differently
        fixed = {**row, "categoryId": category}
        workbook(Path("pets.rejects.xlsx"), list(fixed), list(fixed.values()))
        result = run(srv, "pets.rejects.xlsx")
        assert result.exit_code == 0, result.output
    assert names(srv) == Counter({"Rex": 1, "Nemo": 1})
    accepted = {r["name"]: r for r in read_rows(Path("pets.accepted.csv"))}
    assert (accepted["Nemo"]["petsync_row"], accepted["Nemo"]["categoryId"]) == ("3", "7")
    assert accepted["Rex"]["petsync_fixed_in"] == ""


def test_a_fix_or_the_file_imported_from_another_folder_creates_nothing_twice(
    petstore_server: Any, isolated: Path
) -> None:
    srv = petstore_server()
    Path("pets.csv").write_text("name,categoryId\nRex,1\nNemo,fish\n")
    assert run(srv, "pets.csv", "--out-dir", "imports").exit_code == 4
    (row,) = read_rows(Path("imports/pets.rejects.csv"))
    Path("desktop").mkdir()
    write_rows(Path("desktop/pets.rejects.csv"), [{**row, "categoryId": "7"}])
    Path("laptop").mkdir()
    shutil.copy("desktop/pets.rejects.csv", "laptop/fixed.rejects.csv")
    result = run(srv, "desktop/pets.rejects.csv")
    assert result.exit_code == 0, result.output
    assert "note:" not in result.output
    # The same fix again from another folder, and the first file under another name
    # elsewhere: one journal home for the API knows every row, so nothing is created.
    assert run(srv, "laptop/fixed.rejects.csv").exit_code == 0
    shutil.copy("pets.csv", "laptop/april.csv")
    again = run(srv, "laptop/april.csv", "--out-dir", "elsewhere")
    assert again.exit_code == 0, again.output
    assert "created 0, already done 2 (earlier runs)" in again.output
    assert names(srv) == Counter({"Rex": 1, "Nemo": 1})


def test_journals_beside_the_outputs_of_an_older_petsync_are_still_honoured(
    petstore_server: Any, isolated: Path
) -> None:
    srv = petstore_server()
    Path("pets.csv").write_text("name,categoryId\nRex,1\nTom,2\n")
    assert run(srv, "pets.csv").exit_code == 0
    # As an older petsync left it: the journal in the output folder, none in the home.
    home_journal = journal_of(Path("pets.csv"))
    legacy = Path(".petsync/journals") / home_journal.name
    legacy.parent.mkdir(parents=True)
    home_journal.rename(legacy)
    result = run(srv, "pets.csv")
    assert result.exit_code == 0, result.output
    assert "already imported" in result.output
    assert names(srv) == Counter({"Rex": 1, "Tom": 1})
    assert not home_journal.exists()  # the run kept to the journal it found


def test_the_state_dir_option_and_the_environment_key_move_the_journal_home(
    petstore_server: Any, isolated: Path
) -> None:
    srv = petstore_server()
    Path("pets.csv").write_text("name,categoryId\nRex,1\n")
    assert run(srv, "pets.csv", "--state-dir", "state").exit_code == 0
    (journal,) = Path("state/journals").glob("*/*.jsonl")
    assert journal.parent.name.startswith("127.0.0.1-")
    Path("petsync.toml").write_text(
        f'[environments.production]\nbase_url = "{srv.base_url}"\nstate_dir = "state"\n'
    )
    env = {"PETSYNC_API_KEY": srv.api_key.reveal()}
    shutil.copy("pets.csv", "copy.csv")
    again = CliRunner().invoke(cli, ["import", "copy.csv"], env=env, catch_exceptions=False)
    assert again.exit_code == 0, again.output
    assert "created 0, already done 1 (earlier runs)" in again.output
    assert names(srv) == Counter({"Rex": 1})


def test_a_fix_imported_away_from_the_first_files_journals_says_so(
    petstore_server: Any, isolated: Path
) -> None:
    srv = petstore_server()
    Path("pets.csv").write_text("name,categoryId\nNemo,fish\n")
    assert run(srv, "pets.csv", "--state-dir", "shared").exit_code == 4
    (row,) = read_rows(Path("pets.rejects.csv"))
    write_rows(Path("pets.rejects.csv"), [{**row, "categoryId": "7"}])
    result = run(srv, "pets.rejects.csv")  # without the first run's --state-dir
    assert result.exit_code == 0, result.output
    (note,) = [line for line in result.output.splitlines() if "note:" in line]
    assert note.startswith("  note: the journal of the first file these rows came from is not in ")
    assert note.endswith(
        "(its import used another state directory, API or output folder, or it was moved): "
        "if so, import this file with that --state-dir or --out-dir, or rows created there "
        "could be created again"
    )


def test_a_dry_run_of_a_file_imported_before_says_nothing_would_be_sent(
    petstore_server: Any, isolated: Path
) -> None:
    # Staff check an inbox with `run --dry-run` before the real run: the same bytes
    # dropped again (another folder, another name) must not read as rows to be created.
    srv = petstore_server()
    Path("pets.csv").write_text("name,categoryId\nRex,1\nTom,2\nKit,3\n")
    assert run(srv, "pets.csv").exit_code == 0
    journal = journal_of(Path("pets.csv"))
    with journal.open("a") as handle:  # Kit's outcome unknown, as a kill leaves it
        handle.write('{"row": 4, "state": "sending"}\n')
    Path("inbox").mkdir()
    shutil.copy("pets.csv", "inbox/again.csv")
    dry = run(srv, "inbox/again.csv", "--dry-run")
    assert dry.exit_code == 4, dry.output
    assert (
        "dry run: 0 rows would be sent, nothing sent; rejected locally 0; already created 2; "
        "uncertain 1"
    ) in dry.output.splitlines()
    assert names(srv) == Counter({"Rex": 1, "Tom": 1, "Kit": 1})
