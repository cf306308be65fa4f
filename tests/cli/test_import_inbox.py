"""`petsync import` as staff run it daily: globs, several files, the archive, the reject loop,
long cells, unwritable outputs, progress on a terminal, and `petsync run` over job files."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from petsync.cli import cli
from petsync.cli.import_progress import shows_progress
from petsync.importer.sheets.sheet import CELL_LIMIT, CUT_KEEP, CUT_NOTE


def run(srv: Any, *args: str) -> Result:
    env = {"PETSYNC_API_KEY": srv.api_key.reveal(), "PETSYNC_BASE_URL": srv.base_url}
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


def read_csv(path: Path, delimiter: str = ",") -> list[dict[str, str]]:
    with path.open(encoding="utf-8-sig", newline="") as handle:
        return list(csv.DictReader(handle, delimiter=delimiter))


def test_a_glob_imports_each_file_with_one_summary_and_the_worst_exit(
    petstore_server: Any, isolated: Path
) -> None:
    srv = petstore_server()
    Path("inbox").mkdir()
    Path("inbox/a.csv").write_text("name,categoryId\nRex,1\n")
    Path("inbox/b.csv").write_text("name,categoryId\nTom,2\nBad,x\n")
    Path("inbox/c.csv").write_text("just,one,column\n")  # no name column: not imported
    Path("inbox/old.rejects.csv").write_text("name,categoryId\nIgnored,1\n")  # petsync's own
    result = run(srv, "import", "inbox/*.csv", "--report", "report.json")
    assert result.exit_code == 2, result.output  # the worst: an input error
    out = result.stdout.splitlines()
    assert out[0].startswith("read inbox/a.csv: 1 row,")
    assert "inbox/c.csv: not imported: inbox/c.csv: no column for 'name' and 'categoryId'" in (
        result.stdout
    )
    assert out[-1] == (
        "3 files (1 not imported): created 2, rejected 1, uncertain 0, pending 0; exit 2"
    )
    assert sorted(p.name for p in srv.store.all()) == ["Rex", "Tom"]
    report = json.loads(Path("report.json").read_text())
    assert [r["source"] for r in report["imports"]] == ["inbox/a.csv", "inbox/b.csv"]
    assert report["not_imported"][0]["source"] == "inbox/c.csv"
    assert report["exit_code"] == 2


def test_archive_moves_done_files_with_their_outputs_and_empties_the_inbox(
    petstore_server: Any, isolated: Path
) -> None:
    srv = petstore_server()
    Path("inbox").mkdir()
    Path("inbox/done.csv").write_text("name,categoryId\nRex,1\nBad,x\n")
    Path("inbox/also.csv").write_text("name,categoryId\nTom,2\n")
    result = run(srv, "import", "inbox/*.csv", "--archive", "archive")
    assert result.exit_code == 4, result.output  # a rejected row: final, but not whole
    (day,) = Path("archive").iterdir()
    # Every row created or rejected: each file moved with its outputs.
    assert sorted(p.name for p in day.iterdir()) == [
        "also.accepted.csv",
        "also.csv",
        "done.accepted.csv",
        "done.csv",
        "done.rejects.csv",
    ]
    lines = result.stdout.splitlines()
    # The reject file moved: the summary says where; the journals are in the API's home,
    # so the fix needs no --out-dir, and the inbox is empty.
    assert (
        f"archived:  archive/{day.name}/ (done.csv, done.rejects.csv, done.accepted.csv "
        "moved there)"
    ) in lines
    assert (
        f"rejects:   archive/{day.name}/done.rejects.csv  (fix them, then: petsync import "
        f"archive/{day.name}/done.rejects.csv)"
    ) in lines
    assert list(Path("inbox").iterdir()) == []
    # The same bytes dropped again are recognised: nothing created, archived again.
    Path("inbox/done.csv").write_text("name,categoryId\nRex,1\nBad,x\n")
    again = run(srv, "import", "inbox/*.csv", "--archive", "archive")
    assert "created 0, already done 1 (earlier runs)" in again.stdout
    assert srv.store.count() == 2
    assert len(list(Path("archive").iterdir())) == 2  # a second folder for the same day


def test_a_file_with_pending_rows_stays_in_the_inbox(petstore_server: Any, isolated: Path) -> None:
    srv = petstore_server()
    Path("inbox").mkdir()
    Path("inbox/pets.csv").write_text("name,categoryId\nBad,x\nWorse,y\nRex,1\n")
    result = run(srv, "import", "inbox/pets.csv", "--max-errors", "1", "--archive", "archive")
    assert result.exit_code == 4, result.output
    assert "pending 1" in result.stdout
    assert not Path("archive").exists()
    assert Path("inbox/pets.csv").exists()


def test_the_reject_hint_works_as_printed_with_no_map_and_keeps_row_numbers(
    petstore_server: Any, isolated: Path
) -> None:
    srv = petstore_server()
    Path("inbox").mkdir()
    Path("inbox/new-pets.csv").write_text(
        "Pet Name;Kind;notes\nRex;1;ok\nBad;x;fix me\nWorse;y;me too\n", encoding="utf-8"
    )
    first = run(srv, "import", "inbox/new-pets.csv", "--map", "Pet Name=name",
                "--map", "Kind=categoryId")  # fmt: skip
    assert first.exit_code == 4, first.output
    hint = "(fix them, then: petsync import inbox/new-pets.rejects.csv)"
    assert hint in first.stdout
    rejects = Path("inbox/new-pets.rejects.csv")
    text = rejects.read_bytes().decode("utf-8-sig")
    assert text.startswith("name;categoryId;notes;petsync_row;")  # mapped headers, ';' kept
    rejects.write_bytes(text.replace("Bad;x", "Bad;2").encode("utf-8-sig"))

    second = run(srv, "import", "inbox/new-pets.rejects.csv")  # exactly as printed
    assert second.exit_code == 4, second.output
    assert hint in second.stdout  # same name: no new-pets.rejects.rejects.csv
    assert [r["petsync_row"] for r in read_csv(rejects, ";")] == ["4"]  # Worse, still row 4
    accepted = read_csv(Path("inbox/new-pets.accepted.csv"), ";")
    assert [(r["name"], r["petsync_row"]) for r in accepted] == [("Rex", "2"), ("Bad", "3")]
    assert not Path("inbox/new-pets.rejects.rejects.csv").exists()


def test_an_oversized_cell_rejects_its_row_and_the_rest_imports(
    petstore_server: Any, isolated: Path
) -> None:
    srv = petstore_server()
    long = "n" * (CELL_LIMIT + 1)
    Path("pets.csv").write_text(f"name,categoryId\nRex,1\n{long},2\nTom,3\n")
    result = run(srv, "import", "pets.csv")
    assert result.exit_code == 4, result.output
    assert sorted(p.name for p in srv.store.all()) == ["Rex", "Tom"]
    (row,) = read_csv(Path("pets.rejects.csv"))
    assert row["petsync_error_code"] == "cell_too_long"
    assert row["petsync_error_message"].startswith(
        f"column 1 holds {CELL_LIMIT + 1} characters, more than the {CELL_LIMIT} a cell may hold"
    )
    assert row["name"] == "n" * CUT_KEEP + CUT_NOTE
    again = run(srv, "import", "pets.rejects.csv")  # not fixed: rejected again, nothing sent
    assert again.exit_code == 4
    assert read_csv(Path("pets.rejects.csv"))[0]["petsync_error_code"] == "cell_too_long"
    assert srv.store.count() == 2


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_an_unwritable_output_folder_exits_2_before_anything_is_sent(
    petstore_server: Any, isolated: Path
) -> None:
    srv = petstore_server()
    Path("pets.csv").write_text("name,categoryId\nRex,1\n")
    Path("out").mkdir(mode=0o500)
    result = run(srv, "import", "pets.csv", "--out-dir", "out")
    assert result.exit_code == 2
    assert result.stderr.startswith(
        "Error: folder of the output files out: cannot create files in out (Permission denied)"
    )
    assert srv.store.count() == 0


def test_an_output_folder_that_cannot_be_made_exits_2_before_anything_is_sent(
    petstore_server: Any, isolated: Path
) -> None:
    srv = petstore_server()
    Path("pets.csv").write_text("name,categoryId\nRex,1\n")
    Path("blocker").write_text("a file where a folder should be\n")
    result = run(srv, "import", "pets.csv", "--out-dir", "blocker/out")
    assert result.exit_code == 2
    assert result.stderr == (
        "Error: cannot write the output files in blocker/out: Not a directory; fix its "
        "permissions or choose another --out-dir (nothing was sent)\n"
    )
    assert srv.store.count() == 0


def test_journal_option_takes_one_file_only(petstore_server: Any, isolated: Path) -> None:
    srv = petstore_server()
    for name in ("a.csv", "b.csv"):
        Path(name).write_text("name,categoryId\nRex,1\n")
    result = run(srv, "import", "a.csv", "b.csv", "--journal", "j.jsonl")
    assert result.exit_code == 2
    assert "--journal names one journal: give one FILE" in result.stderr


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("tty", "term", "shown"),
    [(True, "xterm", True), (True, "dumb", False), (False, "xterm", False)],
    ids=["terminal", "term-dumb", "cron"],
)
def test_progress_only_on_a_terminal_that_can_redraw(tty: bool, term: str, shown: bool) -> None:
    stream = Tty() if tty else io.StringIO()
    assert shows_progress(stream, {"TERM": term}) is shown


def test_run_dry_run_checks_an_import_job_and_sends_nothing(
    petstore_server: Any, isolated: Path
) -> None:
    srv = petstore_server()
    Path("pets.csv").write_text("name,categoryId\nRex,1\nBad,x\n")
    Path("job.toml").write_text('[import]\nfile = "pets.csv"\n')
    Path("export.toml").write_text('[export]\nout = "snaps"\n')
    result = run(srv, "run", "--dry-run", "job.toml")
    assert result.exit_code == 4, result.output
    assert "dry run: 1 row would be sent, nothing sent; rejected locally 1" in result.stdout
    assert srv.store.count() == 0
    refused = run(srv, "run", "--dry-run", "export.toml")
    assert refused.exit_code == 2
    assert refused.stderr == (
        "Error: export.toml: --dry-run applies to import jobs; check an export job with --check\n"
    )


def test_run_takes_several_job_files_and_exits_with_the_worst(
    petstore_server: Any, isolated: Path
) -> None:
    srv = petstore_server()
    Path("good.csv").write_text("name,categoryId\nRex,1\n")
    Path("bad.csv").write_text("name,categoryId\nBad,x\n")
    Path("good.toml").write_text('[import]\nfile = "good.csv"\n')
    Path("bad.toml").write_text('[import]\nfile = "bad.csv"\n')
    Path("broken.toml").write_text("[import]\nfile = true\n")
    result = run(srv, "run", "good.toml", "bad.toml", "broken.toml")
    assert result.exit_code == 2, result.output
    assert srv.store.count() == 1
    reads = [line for line in result.stdout.splitlines() if line.startswith("read ")]
    assert len(reads) == 2  # both imports ran
    assert result.stderr.startswith("Error: job file broken.toml [import]: file must be")


def test_the_progress_line_follows_the_send_pass(tmp_path: Path) -> None:
    from petsync.cli.import_progress import ImportProgressLine
    from petsync.importer.config import ImportConfig
    from petsync.importer.run import run_import
    from tests.importer.doubles import InstantClient

    path = tmp_path / "pets.csv"
    path.write_text("name,categoryId\n" + "".join(f"P{i},{i}\n" for i in range(50)) + "Bad,x\n")
    ticks = iter(float(i) for i in range(10_000))
    stream = Tty()
    line = ImportProgressLine(stream, "pets.csv", clock=lambda: next(ticks))
    run_import(ImportConfig(path, concurrency=2), InstantClient(), progress=line)
    line.close()
    last = stream.getvalue().rsplit("\r", 1)[-1]
    assert last.startswith("pets.csv: read 51, sent 50, created 50, rejected 1, uncertain 0, ")
    assert last.endswith(" rows/s\n")


def test_a_signal_leaves_the_files_not_started_for_the_next_run(
    petstore_server: Any, isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import signal

    import petsync.importer.run as run_module

    srv = petstore_server()
    for name in ("a.csv", "b.csv"):
        Path(name).write_text("name,categoryId\nRex,1\n")
    real = run_module.check_input

    def check_then_sigterm(config: Any, *rest: Any) -> Any:
        checked = real(config, *rest)
        os.kill(os.getpid(), signal.SIGTERM)  # as systemd would, while a.csv is checked
        return checked

    monkeypatch.setattr(run_module, "check_input", check_then_sigterm)
    result = run(srv, "import", "a.csv", "b.csv")
    assert result.exit_code == 143, result.output
    assert result.stdout.splitlines() == [
        "a.csv: not imported: the import of a.csv was stopped by SIGTERM; nothing was sent",
        "b.csv: not imported: stopped by SIGTERM before this file",
        "2 files (2 not imported): created 0, rejected 0, uncertain 0, pending 0; exit 143",
    ]
    assert srv.store.count() == 0
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # handlers restored


def test_a_new_file_over_an_unfinished_one_says_what_the_old_one_left(
    petstore_server: Any, isolated: Path
) -> None:
    srv = petstore_server()
    Path("pets.csv").write_text("name,categoryId\nBad,x\nRex,1\nTom,2\n")
    first = run(srv, "import", "pets.csv", "--max-errors", "1")  # Rex and Tom left pending
    assert "pending 2" in first.stdout
    Path("pets.csv").write_text("name,categoryId\nMia,3\n")  # staff drop the next day's file
    second = run(srv, "import", "pets.csv")
    assert second.exit_code == 0, second.output
    (note,) = [line for line in second.stdout.splitlines() if line.startswith("  note: ")]
    home = isolated / ".local" / "state" / "petsync" / "journals"
    assert note.startswith(f"  note: an earlier pets.csv (journal {home}/127.0.0.1-")
    assert note.endswith(
        "still has 2 pending and 0 uncertain rows: put that file back and import it (with "
        "--settle) to finish it"
    )
    third = run(srv, "import", "pets.csv")  # said once, when the new file is first seen
    assert "  note: " not in third.stdout


def docs_inbox_command() -> list[str]:
    """The inbox command of docs/import.md, as a person would type it."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "import.md").read_text()
    section = page.split("## A daily inbox", 1)[1]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0].strip()
    import shlex

    words = shlex.split(block)
    assert words[0] == "petsync"
    return words[1:]


def test_the_docs_inbox_command_takes_csv_and_workbooks_and_says_where_rejects_went(
    petstore_server: Any, isolated: Path
) -> None:
    import openpyxl

    srv = petstore_server()
    Path("inbox").mkdir()
    Path("inbox/monday.csv").write_text("name,categoryId\nRex,1\nBad,x\n")
    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.append(["name", "categoryId", "status"])
    sheet.append(["Mia", 2, "sold"])
    book.save("inbox/tuesday.xlsx")
    Path("inbox/README.txt").write_text("drop the sheets here\n")
    Path("inbox/~$tuesday.xlsx").write_bytes(b"\x00lock")  # Excel's lock file of an open sheet

    result = run(srv, *docs_inbox_command())
    assert result.exit_code == 4, result.output  # Bad's category: rejected
    assert sorted(p.name for p in srv.store.all()) == ["Mia", "Rex"]
    (day,) = Path("archive").iterdir()
    lines = result.stdout.splitlines()
    assert (
        f"archived:  archive/{day.name}/ (monday.csv, monday.rejects.csv, "
        "monday.accepted.csv moved there)"
    ) in lines
    assert (
        f"rejects:   archive/{day.name}/monday.rejects.csv  (fix them, then: petsync import "
        f"archive/{day.name}/monday.rejects.csv)"
    ) in lines
    assert sorted(p.name for p in Path("inbox").iterdir()) == ["README.txt", "~$tuesday.xlsx"]
    assert (
        lines[-1]
        == "2 files (0 not imported): created 2, rejected 1, uncertain 0, pending 0; exit 4"
    )

    # The fix, imported with the command the summary printed: the loop closes, exit 0.
    rejects = day / "monday.rejects.csv"
    (row,) = read_csv(rejects)
    with rejects.open("w", encoding="utf-8-sig", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(row))
        writer.writeheader()
        writer.writerow({**row, "categoryId": "3"})
    Path("desk").mkdir()
    copy = shutil.copy(rejects, "desk")
    fixed = run(srv, "import", str(rejects))
    assert fixed.exit_code == 0, fixed.output
    assert sorted(p.name for p in srv.store.all()) == ["Bad", "Mia", "Rex"]
    # The fix again from a copy elsewhere: the API's journals know the row, nothing is sent.
    again = run(srv, "import", copy)
    assert again.exit_code == 0, again.output
    assert sorted(p.name for p in srv.store.all()) == ["Bad", "Mia", "Rex"]


def test_one_map_serves_an_inbox_of_sheets_with_other_headers(
    petstore_server: Any, isolated: Path
) -> None:
    srv = petstore_server()
    Path("inbox").mkdir()
    Path("inbox/a.csv").write_text("Animal,categoryId\nRex,1\n")
    Path("inbox/b.csv").write_text("name,categoryId\nTom,2\n")
    Path("inbox/c.csv").write_text("Pet,categoryId\nMia,3\n")
    result = run(srv, "import", "inbox/*", "--map", "Animal=name")
    assert result.exit_code == 2, result.output  # c.csv has neither Animal nor name
    assert sorted(p.name for p in srv.store.all()) == ["Rex", "Tom"]
    assert (
        "  note: --map 'Animal=name' names no column of b.csv; its columns are read by their "
        "headers"
    ) in result.stdout.splitlines()
    assert (
        "inbox/c.csv: not imported: inbox/c.csv: no column for 'name'; columns found: 'Pet', "
        "'categoryId' (--map 'Animal=name' names no column of this file). Name the header "
        'name, or pass --map "COLUMN=name" (no row of the first 20 names the fields; to read '
        "another row as the header, pass --header-row N)"
    ) in result.stdout.splitlines()


def test_the_bulk_import_job_takes_every_sheet_of_the_inbox(
    petstore_server: Any, isolated: Path
) -> None:
    import openpyxl

    srv = petstore_server()
    root = Path(__file__).resolve().parents[2]
    Path("jobs").mkdir()
    job = (root / "jobs" / "bulk-import.toml").read_text()
    # The job as an operator edits it: the map of one sender's sheets, duplicates allowed.
    job = job.replace('# map = ["Animal=name"', 'map = ["Animal=name"')
    job = job.replace("# allow_duplicates = false", "allow_duplicates = true")
    job = job.replace('# state_dir = "/srv/petsync/state"', 'state_dir = "state"')
    Path("jobs/bulk-import.toml").write_text(job)
    Path("petsync.toml").write_text(f'[environments.production]\nbase_url = "{srv.base_url}"\n')
    for folder in ("inbox", "imports", "metrics"):
        Path(folder).mkdir()
    Path("inbox/a.csv").write_text("name,categoryId\nTom,2\nTom,2\n")  # two Toms, on purpose
    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.append(["Animal", "Category", "photoUrls"])
    sheet.append(["Rex", 1, "http://x/rex.jpg"])
    book.save("inbox/b.xlsx")

    env = {"PETSYNC_PRODUCTION_API_KEY": srv.api_key.reveal()}
    result = CliRunner().invoke(cli, ["run", "jobs/bulk-import.toml"], env=env)
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in srv.store.all()) == ["Rex", "Tom", "Tom"]
    report = json.loads(Path("imports/bulk-import.report.json").read_text())
    a, b = report["imports"]
    assert (a["duplicates"], a["duplicates_sent"], a["duplicate_rows"]) == (1, True, [[3, 2]])
    assert a["notices"] == [
        f"map = {m!r} in jobs/bulk-import.toml names no column of a.csv; its columns are read "
        "by their headers"
        for m in ("Animal=name", "Category=categoryId")
    ]
    assert (b["columns_not_sent"], b["archived"]) == (
        ["photoUrls"],
        ["b.xlsx", "b.accepted.csv"],
    )
    assert len(list(Path("state/journals").glob("*/*.jsonl"))) == 2  # the job's state_dir
    assert list(Path("inbox").iterdir()) == []
