"""The import job end to end against the reference server."""

from __future__ import annotations

import csv
import json
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import openpyxl
import pytest

from petsync.client.client import PetstoreClient
from petsync.client.config import ClientConfig, RetryPolicy
from petsync.core.apikey import ApiKey
from petsync.core.errors import AuthenticationError, InputError
from petsync.importer.config import ImportConfig
from petsync.importer.journal import Journal
from petsync.importer.outcome import ImportReport
from petsync.importer.run import run_import
from petsync.importer.sender import _should_send as should_send
from petsync.importer.sheets.opening import open_spreadsheet
from petsync.server.runner import RunningServer
from tests.conftest import FakeClock
from tests.importer.doubles import InstantClient, journal_of

StartServer = Callable[..., RunningServer]

# A messy sheet: semicolons, a multi-line quoted name, `12.0`, blank rows, mixed-case and
# padded statuses, extra columns and a duplicated unused header ("notes" twice).
MESSY = (
    "Name;Category ID;STATUS;notes;Colour;notes\r\n"
    "Rex;12.0;Available;good boy;brown;x\r\n"  # 2 ok (12.0, case)
    ";;;;;\r\n"  # 3 blank
    '"Tom\r\nthe cat";7; sold ;;;\r\n'  # 4 ok (multi-line, padded status)
    "Café;12.5;;;;\r\n"  # 5 categoryId not integer
    "  ;3;pending;;;\r\n"  # 6 blank name
    "Mia;abc;;;;\r\n"  # 7 not integer
    "   ;   ;  ;;;\r\n"  # 8 blank (spaces only)
    "Zoë;9223372036854775807;PENDING;;;\r\n"  # 9 ok (int64 max, exact)
    "Bo;1;lost;;;\r\n"  # 10 bad status
    "NA;99999999999999999999;;;;\r\n"  # 11 out of range
    "None; 5 ;;;;\r\n"  # 12 ok ("None" is a name)
    "Ann;12,0;;;;\r\n"  # 13 not integer (comma)
    "Ed;1.2E+5;;;;\r\n"  # 14 not integer (exponent)
)
VALID = {
    ("Rex", 12, "available"),
    ("Tom\r\nthe cat", 7, "sold"),
    ("Zoë", 9223372036854775807, "pending"),
    ("None", 5, None),
}
LOCAL_REJECTS = [
    ("5", "category_not_integer", "categoryId"),
    ("6", "name_missing", "name"),
    ("7", "category_not_integer", "categoryId"),
    ("10", "status_invalid", "status"),
    ("11", "category_out_of_range", "categoryId"),
    ("13", "category_not_integer", "categoryId"),
    ("14", "category_not_integer", "categoryId"),
]


def client_for(srv: RunningServer, **kwargs: Any) -> PetstoreClient:
    return PetstoreClient(ClientConfig(base_url=srv.base_url, api_key=srv.api_key), **kwargs)


def stored(srv: RunningServer) -> set[tuple[str, int, str | None]]:
    return {(p.name, p.categoryId, p.status) for p in srv.store.all()}


def read_csv(path: Path) -> list[dict[str, str]]:
    """The rows of an output file, in whatever delimiter it follows (the input's)."""
    with path.open(encoding="utf-8-sig", newline="") as handle:
        delimiter = max((",", ";", "\t"), key=handle.readline().count)
        handle.seek(0)
        return list(csv.DictReader(handle, delimiter=delimiter))


def run(config: ImportConfig, srv: RunningServer, **kwargs: Any) -> ImportReport:
    with client_for(srv, **kwargs) as client:
        return run_import(config, client)


@pytest.mark.parametrize("encoding", ["utf-8-sig", "cp1252"], ids=["utf8-bom", "cp1252"])
def test_messy_csv_imports_the_valid_rows_and_rejects_the_others(
    tmp_path: Path, petstore_server: StartServer, encoding: str
) -> None:
    srv = petstore_server()
    path = tmp_path / "pets.csv"
    path.write_bytes(MESSY.encode(encoding))
    report = run(ImportConfig(path), srv)

    assert stored(srv) == VALID
    assert srv.store.count() == 4
    assert (report.rows_read, report.skipped_blank) == (11, 2)
    assert (report.created, report.rejected_local, report.rejected_api) == (4, 7, 0)
    assert (report.uncertain, report.pending, report.already_created) == (0, 0, 0)
    assert report.delimiter == "semicolon"
    assert report.encoding == ("utf-8 (BOM)" if encoding == "utf-8-sig" else "cp1252")
    assert (report.encoding_notice is not None) == (encoding == "cp1252")
    assert report.normalisations == {
        "integral_decimal": 1,
        "status_case_folded": 2,
        "trimmed": 2,
    }
    assert report.exit_code == 4

    rejects = read_csv(tmp_path / "pets.rejects.csv")
    assert [
        (r["petsync_row"], r["petsync_error_code"], r["petsync_error_field"]) for r in rejects
    ] == LOCAL_REJECTS
    assert {r["petsync_error_source"] for r in rejects} == {"local"}
    first = rejects[0]
    assert first["Name"] == "Café" and first["Category ID"] == "12.5"
    assert first["petsync_error_message"].startswith("categoryId '12.5' is not a whole number")
    with (tmp_path / "pets.rejects.csv").open(encoding="utf-8-sig", newline="") as handle:
        header = next(csv.reader(handle, delimiter=";"))  # the input's delimiter
    assert header == [
        "Name", "Category ID", "STATUS", "notes", "Colour", "notes",
        "petsync_row", "petsync_error_source", "petsync_error_code", "petsync_error_field",
        "petsync_error_message", "petsync_http_status", "petsync_origin",
    ]  # fmt: skip

    accepted = read_csv(tmp_path / "pets.accepted.csv")
    ids = {p.name: p.id for p in srv.store.all()}
    assert [(r["petsync_row"], r["Name"], r["petsync_id"]) for r in accepted] == [
        ("2", "Rex", str(ids["Rex"])),
        ("4", "Tom\r\nthe cat", str(ids["Tom\r\nthe cat"])),
        ("9", "Zoë", str(ids["Zoë"])),
        ("12", "None", str(ids["None"])),
    ]
    assert accepted[0]["Colour"] == "brown"
    assert accepted[3]["Category ID"] == " 5 "  # raw cells, unchanged
    assert not (tmp_path / "pets.uncertain.csv").exists()  # nothing uncertain, no file


def test_a_dry_run_counts_what_a_real_run_counts(tmp_path: Path) -> None:
    # The write pass takes the rows the check pass found valid as valid (it does not check
    # them again): the rejects and normalisations stay those of every row checked.
    path = tmp_path / "pets.csv"
    path.write_bytes(MESSY.encode("utf-8-sig"))
    report = run_import(ImportConfig(path, dry_run=True), None)
    assert (report.rows_read, report.rejected_local) == (11, 7)
    assert report.normalisations == {
        "integral_decimal": 1,
        "status_case_folded": 2,
        "trimmed": 2,
    }
    rejects = read_csv(tmp_path / "pets.rejects.csv")
    assert [
        (r["petsync_row"], r["petsync_error_code"], r["petsync_error_field"]) for r in rejects
    ] == LOCAL_REJECTS


def test_a_dry_run_leaves_out_the_normalisations_of_rows_created_elsewhere(
    tmp_path: Path,
) -> None:
    # A row another file's journal knows as created is not checked, so not counted: the
    # check pass's count of it is taken back (row 2, "Rex;12.0;Available").
    from petsync.importer.outputs import OutputPaths, write_outputs
    from petsync.importer.precheck import CheckRules, check_input
    from petsync.importer.provenance import Ledger
    from petsync.importer.row_states import RowRecord, RowState
    from petsync.importer.sheets.opening import open_spreadsheet

    path = tmp_path / "pets.csv"
    path.write_bytes(MESSY.encode("utf-8"))
    with open_spreadsheet(path) as sheet:
        checked = check_input(sheet, CheckRules())
    try:
        assert checked.normalisations == {
            "integral_decimal": 1,
            "status_case_folded": 2,
            "trimmed": 2,
        }
        paths = OutputPaths.for_input(path, None, sha256=checked.sha256)
        ledger = Ledger({2: RowRecord(2, RowState.CREATED, id=5, via="fix.csv")})
        written = write_outputs(checked, paths, None, ledger)
    finally:
        checked.close()
    assert written.normalisations == {"status_case_folded": 1, "trimmed": 2}


def test_fixed_reject_file_reimports_cleanly(tmp_path: Path, petstore_server: StartServer) -> None:
    srv = petstore_server()
    path = tmp_path / "pets.csv"
    path.write_bytes(MESSY.encode("utf-8-sig"))
    run(ImportConfig(path), srv)

    rejects_path = tmp_path / "pets.rejects.csv"
    fixes = {"5": "12", "7": "7", "11": "11", "13": "12", "14": "120000"}
    with rejects_path.open(encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.reader(handle, delimiter=";"))
    for row in rows[1:]:
        number = row[6]
        if number in fixes:
            row[1] = fixes[number]
        if number == "6":
            row[0] = "Nameless"
        if number == "10":
            row[2] = "sold"
    broken = [cell if cell != "7" else cell for cell in rows[3]]
    broken[1] = "abc"  # row 7 stays wrong in the first round
    with rejects_path.open("w", encoding="utf-8-sig", newline="") as handle:
        csv.writer(handle, delimiter=";").writerows([*rows[:3], broken])
    first = run(ImportConfig(rejects_path), srv)
    assert (first.created, first.rejected_local) == (2, 1)
    # The reject file now holds row 7 alone, numbered as in the first sheet.
    assert [r["petsync_row"] for r in read_csv(rejects_path)] == ["7"]
    with rejects_path.open("w", encoding="utf-8-sig", newline="") as handle:
        csv.writer(handle, delimiter=";").writerows([rows[0], *rows[3:]])

    report = run(ImportConfig(rejects_path), srv)
    assert (report.created, report.rejected_local, report.exit_code) == (5, 0, 0)
    assert srv.store.count() == 11
    assert {("Café", 12, None), ("Nameless", 3, "pending"), ("Bo", 1, "sold")} <= stored(srv)
    assert not rejects_path.exists()  # every reject fixed: the loop is closed
    accepted = tmp_path / "pets.accepted.csv"  # never pets.rejects.accepted.csv
    assert sorted(int(r["petsync_row"]) for r in read_csv(accepted)) == [
        2, 4, 5, 6, 7, 9, 10, 11, 12, 13, 14,
    ]  # fmt: skip
    with accepted.open(encoding="utf-8-sig", newline="") as handle:
        header = next(csv.reader(handle, delimiter=";"))
    # The input's own petsync_* columns are dropped, the new ones added once.
    assert header == ["Name", "Category ID", "STATUS", "notes", "Colour", "notes", "petsync_row",
                      "petsync_id", "petsync_origin", "petsync_fixed_in"]  # fmt: skip


def test_xlsx_import(tmp_path: Path, petstore_server: StartServer) -> None:
    srv = petstore_server()
    path = tmp_path / "pets.xlsx"
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.title = "April"
    sheet.append(["Pet", "category_id", "Status", "Born"])
    sheet.append(["Rex", 12, "available", None])
    sheet.append(["Tom", 12.0, None, None])
    sheet.append([None, None, None, None])
    sheet.append(["Half", 2.5, None, None])
    sheet.append(["Big", "9223372036854775807", "Sold", None])
    workbook.save(path)

    report = run(ImportConfig(path, mappings=("Pet=name",)), srv)
    assert stored(srv) == {
        ("Rex", 12, "available"),
        ("Tom", 12, None),
        ("Big", 9223372036854775807, "sold"),
    }
    assert (report.rows_read, report.skipped_blank, report.rejected_local) == (4, 1, 1)
    assert report.sheet == "April"
    rejects = read_csv(tmp_path / "pets.rejects.csv")
    # The mapped column is written under its field's name: the reject file needs no --map.
    assert [(r["name"], r["category_id"], r["petsync_row"]) for r in rejects] == [
        ("Half", "2.5", "5")
    ]


def test_dry_run_sends_nothing_and_writes_the_reject_file(tmp_path: Path) -> None:
    path = tmp_path / "pets.csv"
    path.write_bytes(MESSY.encode("utf-8-sig"))
    report = run_import(ImportConfig(path, dry_run=True))  # no client at all: nothing to send
    assert (report.would_send, report.rejected_local, report.created) == (4, 7, 0)
    assert len(read_csv(tmp_path / "pets.rejects.csv")) == 7
    assert not (tmp_path / "pets.journal.jsonl").exists()
    assert not (tmp_path / "pets.accepted.csv").exists()


def test_rerun_of_a_finished_import_creates_nothing(
    tmp_path: Path, petstore_server: StartServer
) -> None:
    srv = petstore_server()
    path = tmp_path / "pets.csv"
    path.write_bytes(MESSY.encode("utf-8-sig"))
    run(ImportConfig(path), srv)
    accepted_before = (tmp_path / "pets.accepted.csv").read_bytes()
    with client_for(srv) as client:
        report = run_import(ImportConfig(path), client)
        assert client.requests == 0
    assert (report.created, report.already_created, report.rejected_local) == (0, 4, 7)
    assert srv.store.count() == 4
    assert (tmp_path / "pets.accepted.csv").read_bytes() == accepted_before


def test_a_new_file_under_an_old_name_is_a_new_import(
    tmp_path: Path, petstore_server: StartServer
) -> None:
    srv = petstore_server()
    path = tmp_path / "pets.csv"
    path.write_text("name,categoryId\nRex,1\n")
    run(ImportConfig(path), srv)
    path.write_text("name,categoryId\nTom,2\nMia,3\n")  # the next day's file
    report = run(ImportConfig(path), srv)
    assert (report.created, report.already_created, report.exit_code) == (2, 0, 0)
    assert sorted(p.name for p in srv.store.all()) == ["Mia", "Rex", "Tom"]


def test_the_same_bytes_again_create_nothing_whatever_the_name(
    tmp_path: Path, petstore_server: StartServer
) -> None:
    srv = petstore_server()
    path = tmp_path / "pets.csv"
    path.write_text("name,categoryId\nRex,1\nTom,2\n")
    run(ImportConfig(path), srv)
    path.write_text("name,categoryId\nMia,3\n")
    run(ImportConfig(path), srv)
    again = tmp_path / "pets-again.csv"
    again.write_text("name,categoryId\nRex,1\nTom,2\n")  # the first day's bytes, renamed
    report = run(ImportConfig(again), srv)
    assert (report.created, report.already_created, report.already_imported) == (0, 2, True)
    assert srv.store.count() == 3


def test_a_journal_named_with_journal_still_refuses_other_content(
    tmp_path: Path, petstore_server: StartServer
) -> None:
    srv = petstore_server()
    path, journal = tmp_path / "pets.csv", tmp_path / "j.jsonl"
    path.write_text("name,categoryId\nRex,1\n")
    run(ImportConfig(path, journal_path=journal), srv)
    path.write_text("name,categoryId\nRex,1\nTom,2\n")
    with pytest.raises(InputError, match="pets.csv changed since its import began"):
        run(ImportConfig(path, journal_path=journal), srv)
    assert srv.store.count() == 1


def test_outcome_unknown_rows_are_uncertain_and_never_duplicated(
    tmp_path: Path, petstore_server: StartServer
) -> None:
    srv = petstore_server()
    srv.faults.fail_after_store_rate = 0.3
    path = tmp_path / "pets.csv"
    path.write_text("name,categoryId\n" + "".join(f"Pet{i:03},{i}\n" for i in range(60)))
    report = run(ImportConfig(path, concurrency=4), srv)

    names = [p.name for p in srv.store.all()]
    assert len(names) == len(set(names)) == 60  # every POST stored, none twice
    assert report.uncertain > 0
    assert report.created + report.uncertain == 60
    assert report.exit_code == 4
    uncertain = read_csv(tmp_path / "pets.uncertain.csv")
    assert len(uncertain) == report.uncertain
    assert all("500" in r["petsync_uncertain_reason"] for r in uncertain)
    assert all("may or may not" in r["petsync_uncertain_reason"] for r in uncertain)
    assert all(r["petsync_http_status"] == "500" for r in uncertain)

    srv.faults.fail_after_store_rate = 0.0
    again = run(ImportConfig(path), srv)  # a plain re-run leaves them alone
    assert (again.created, again.uncertain) == (0, report.uncertain)
    assert srv.store.count() == 60


def test_resend_uncertain_sends_them_again(tmp_path: Path, petstore_server: StartServer) -> None:
    srv = petstore_server()
    path = tmp_path / "pets.csv"
    path.write_text("name,categoryId\nRex,1\nTom,2\n")
    run(ImportConfig(path, dry_run=False), srv)
    # Simulate a crash between "sending" and the outcome for row 3 (the pet never arrived).
    journal_path = journal_of(path)
    lines = journal_path.read_text().splitlines()
    kept = [line for line in lines if '"row": 3' not in line] + ['{"row": 3, "state": "sending"}']
    journal_path.write_text("\n".join(kept) + "\n")
    srv.store.all()  # Tom exists once already; the person deletes nothing here
    report = run(ImportConfig(path), srv)
    assert (report.uncertain, report.created) == (1, 0)
    report = run(ImportConfig(path, resend_uncertain=True), srv)
    assert (report.uncertain, report.created, report.exit_code) == (0, 1, 0)
    assert sorted(p.name for p in srv.store.all()) == ["Rex", "Tom", "Tom"]


class RejectingTransport(httpx.BaseTransport):
    """Forwards to the real server, but answers 400 for pets whose name starts with 'API'."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.method == "POST" and json.loads(request.content)["name"].startswith("API"):
            body = {"code": "duplicate_name", "message": "name already taken", "status": 400}
            return httpx.Response(400, json=body)
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()


def test_api_rejections_go_to_the_reject_file(tmp_path: Path, petstore_server: StartServer) -> None:
    srv = petstore_server()
    path = tmp_path / "pets.csv"
    path.write_text("name,categoryId\nRex,1\nAPI one,2\nbad,x\nAPI two,3\n")
    report = run(ImportConfig(path), srv, transport=RejectingTransport())
    assert (report.created, report.rejected_local, report.rejected_api) == (1, 1, 2)
    rejects = read_csv(tmp_path / "pets.rejects.csv")
    assert [
        (r["petsync_row"], r["petsync_error_source"], r["petsync_error_code"],
         r["petsync_error_message"], r["petsync_http_status"])
        for r in rejects
    ] == [
        ("3", "api", "duplicate_name", "name already taken", "400"),
        ("4", "local", "category_not_integer", rejects[1]["petsync_error_message"], ""),
        ("5", "api", "duplicate_name", "name already taken", "400"),
    ]  # fmt: skip
    # The summary's first rejected rows: the API's reasons beside the local one.
    assert [(r["row"], r["source"], r["message"]) for r in report.first_rejects] == [
        ("3", "api", "name already taken"),
        ("4", "local", rejects[1]["petsync_error_message"]),
        ("5", "api", "name already taken"),
    ]
    # An API rejection is final: a re-run does not send it again.
    with client_for(srv, transport=RejectingTransport()) as client:
        again = run_import(ImportConfig(path), client)
        assert client.requests == 0
    assert again.rejected_api == 2


def test_a_row_the_api_refused_is_sent_again_from_a_fix_and_created_once(
    tmp_path: Path, petstore_server: StartServer
) -> None:
    srv = petstore_server()
    path = tmp_path / "pets.csv"
    path.write_text("name,categoryId\nRex,1\nAPI one,2\n")
    first = run(ImportConfig(path), srv, transport=RejectingTransport())
    assert (first.created, first.rejected_api) == (1, 1)
    rejects = tmp_path / "pets.rejects.csv"
    text = rejects.read_text(encoding="utf-8-sig").replace("API one", "One")
    rejects.write_text(text, encoding="utf-8-sig")  # the fix: a name the API takes
    fixed = run(ImportConfig(rejects), srv, transport=RejectingTransport())
    assert (fixed.created, fixed.exit_code) == (1, 0)
    again = run(ImportConfig(path), srv, transport=RejectingTransport())  # the first command
    assert (again.created, again.already_created, again.rejected_api) == (0, 2, 0)
    assert sorted(p.name for p in srv.store.all()) == ["One", "Rex"]


def test_max_errors_stops_and_leaves_rows_pending(
    tmp_path: Path, petstore_server: StartServer
) -> None:
    srv = petstore_server()
    path = tmp_path / "pets.csv"
    path.write_text("name,categoryId\nA,x\nB,y\nC,3\nD,4\n")
    report = run(ImportConfig(path, max_errors=2, concurrency=1), srv)
    assert srv.store.count() == 0
    assert (report.rejected_local, report.pending, report.exit_code) == (2, 2, 4)
    assert str(report.stopped_reason) == "max_errors=2 reached; the remaining rows are pending"


@pytest.mark.parametrize("concurrency", [1, 8], ids=["one-sender", "eight-senders"])
def test_401_stops_at_once_with_every_row_pending_and_resumable(
    tmp_path: Path, petstore_server: StartServer, concurrency: int
) -> None:
    srv = petstore_server()
    path = tmp_path / "pets.csv"
    path.write_text("name,categoryId\n" + "".join(f"P{i},{i}\n" for i in range(40)))
    config = ClientConfig(base_url=srv.base_url, api_key=ApiKey("wrong-key"))
    with PetstoreClient(config) as client:
        report = run_import(ImportConfig(path, concurrency=concurrency), client)
        assert 1 <= client.requests <= concurrency  # each sender stops at its first 401
    assert isinstance(report.stop, AuthenticationError)
    assert report.exit_code == 3
    assert (report.rejected_local, report.rejected_api, report.created) == (0, 0, 0)
    assert (report.uncertain, report.pending) == (0, 40)
    assert srv.store.count() == 0
    assert not (tmp_path / "pets.rejects.csv").exists()
    # The first POSTs met the 401: the rows journaled for sending are journaled unsent (a
    # refused key created nothing), none is uncertain
    last: dict[int, str] = {}
    for line in journal_of(path).read_text().splitlines()[1:]:
        record = json.loads(line)
        if "row" in record:
            last[record["row"]] = record["state"]
    assert last and set(last.values()) == {"unsent"}
    # ... so a re-run with the right key sends everything.
    report = run(ImportConfig(path), srv)
    assert (report.created, report.exit_code) == (40, 0)


def test_429_is_survived(
    tmp_path: Path, petstore_server: StartServer, fake_clock: FakeClock
) -> None:
    srv = petstore_server(clock=fake_clock)
    srv.faults.rate_limit = 5.0
    path = tmp_path / "pets.csv"
    path.write_text("name,categoryId\n" + "".join(f"P{i},{i}\n" for i in range(30)))
    config = ClientConfig(
        base_url=srv.base_url,
        api_key=srv.api_key,
        retry=RetryPolicy(max_attempts=50, budget_seconds=10_000),
    )
    with PetstoreClient(config, sleep=fake_clock.sleep, clock=fake_clock) as client:
        report = run_import(ImportConfig(path, concurrency=1), client)
        assert client.retries > 0
    assert (report.created, report.exit_code) == (30, 0)
    assert fake_clock.sleeps and min(fake_clock.sleeps) > 0
    names = [p.name for p in srv.store.all()]
    assert sorted(names) == sorted(f"P{i}" for i in range(30))


def test_excel_safe_cells_round_trip(tmp_path: Path, petstore_server: StartServer) -> None:
    srv = petstore_server()
    path = tmp_path / "pets.csv"
    rows = [['=HYPERLINK("x")', "-5", ""], ["'Tis", "1", ""], ["@bad", "oops", "+1"]]
    with path.open("w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows([["name", "categoryId", "note"], *rows])
    run(ImportConfig(path), srv)
    assert stored(srv) == {('=HYPERLINK("x")', -5, None), ("'Tis", 1, None)}

    raw_accepted = (tmp_path / "pets.accepted.csv").read_text(encoding="utf-8-sig")
    assert "'=HYPERLINK" in raw_accepted and "'-5" in raw_accepted and "''Tis" in raw_accepted
    with (tmp_path / "pets.accepted.csv").open(encoding="utf-8-sig", newline="") as handle:
        for row in csv.reader(handle):
            assert all(not cell or cell[0] not in "=+-@\t\r" for cell in row)
    with open_spreadsheet(tmp_path / "pets.accepted.csv") as sheet:
        assert [r.cells[:2] for r in sheet.rows()] == [(r[0], r[1]) for r in rows[:2]]

    # The rejected row round-trips too: fix its categoryId and the name arrives exactly.
    rejects = tmp_path / "pets.rejects.csv"
    text = rejects.read_text(encoding="utf-8-sig")
    assert "'@bad,oops,'+1" in text
    rejects.write_text(text.replace("'@bad,oops", "'@bad,3"), encoding="utf-8-sig")
    report = run(ImportConfig(rejects), srv)
    assert report.created == 1
    assert ("@bad", 3, None) in stored(srv)


def test_journal_records_every_row_before_and_after(
    tmp_path: Path, petstore_server: StartServer
) -> None:
    srv = petstore_server()
    path = tmp_path / "pets.csv"
    path.write_text("name,categoryId\nRex,1\nTom,2\n")
    report = run(ImportConfig(path, out_dir=tmp_path / "out"), srv)
    journal_path = journal_of(path, tmp_path / "out")
    states = [json.loads(line) for line in journal_path.read_text().splitlines()[1:]]
    assert "baseline" not in states[0]  # no listing before the first POST unless asked
    assert states[-1] == {"summary": {"pending": 0, "uncertain": 0}}  # how the run left it
    states = states[:-1]
    assert Counter(s["state"] for s in states) == {"sending": 2, "created": 2}
    assert report.files["journal"] == str(journal_path)
    assert (tmp_path / "out" / "pets.accepted.csv").exists()
    assert report.journal_fsyncs >= 1
    with open_spreadsheet(path) as sheet:
        sha256 = sheet.sha256
    with Journal.open(
        journal_path,
        source=path,
        sha256=sha256,
        settings={
            "columns": report.columns,
            "encoding": "utf-8",
            "delimiter": "comma",
            "sheet": None,
        },
    ) as journal:
        assert {r: s.id for r, s in journal.states.items()} == {
            2: next(p.id for p in srv.store.all() if p.name == "Rex"),
            3: next(p.id for p in srv.store.all() if p.name == "Tom"),
        }


def test_ctrl_c_leaves_complete_files_and_a_resumable_journal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "pets.csv"
    path.write_text("name,categoryId\n" + "".join(f"P{i},{i}\n" for i in range(50)))
    client = InstantClient()
    pressed = threading.Event()

    def press_ctrl_c_on_the_send_pass(*args: Any) -> Any:
        # Workers take rows as they need them: once some pets exist, the next row taken
        # meets the Ctrl-C (once), mid-way through the file.
        if client.calls >= 5 and not pressed.is_set():
            pressed.set()
            raise KeyboardInterrupt
        return should_send(*args)

    monkeypatch.setattr("petsync.importer.sender._should_send", press_ctrl_c_on_the_send_pass)
    with pytest.raises(KeyboardInterrupt):
        run_import(ImportConfig(path, concurrency=4), client)
    monkeypatch.undo()
    accepted = read_csv(tmp_path / "pets.accepted.csv")
    assert 0 < len(accepted) == client.calls < 50
    assert not (tmp_path / "pets.uncertain.csv").exists()  # in-flight rows finished
    again = InstantClient()
    report = run_import(ImportConfig(path), again)
    assert (report.already_created, report.created) == (client.calls, 50 - client.calls)
    assert report.exit_code == 0


def test_unreachable_api_stops_with_rows_pending_not_uncertain(
    tmp_path: Path, petstore_server: StartServer, fake_clock: FakeClock
) -> None:
    srv = petstore_server()
    base_url, key = srv.base_url, srv.api_key
    srv.stop()  # a network outage: connections are refused
    path = tmp_path / "pets.csv"
    path.write_text("name,categoryId\n" + "".join(f"P{i},{i}\n" for i in range(10)))
    config = ClientConfig(base_url=base_url, api_key=key)
    with PetstoreClient(config, sleep=fake_clock.sleep, clock=fake_clock) as client:
        report = run_import(ImportConfig(path, concurrency=2), client)
    assert report.stop is not None and report.exit_code == 1
    assert (report.created, report.uncertain, report.pending) == (0, 0, 10)
    assert report.stopped_reason is not None
    assert str(report.stopped_reason).endswith("re-run the same command to resume")


def test_an_import_larger_than_the_row_index_batch_resumes_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from petsync.importer import row_states

    rows = 2 * row_states._FLUSH_AT + 100  # the row index writes to disk several times
    path = tmp_path / "pets.csv"
    path.write_text("name,categoryId\n" + "".join(f"P{i},{i}\n" for i in range(rows)))
    client = InstantClient()
    pressed = threading.Event()

    def press_ctrl_c_past_the_first_batch(*args: Any) -> Any:
        if client.calls >= row_states._FLUSH_AT + 500 and not pressed.is_set():
            pressed.set()
            raise KeyboardInterrupt
        return should_send(*args)

    monkeypatch.setattr("petsync.importer.sender._should_send", press_ctrl_c_past_the_first_batch)
    with pytest.raises(KeyboardInterrupt):
        run_import(ImportConfig(path, concurrency=4), client)
    monkeypatch.undo()
    first = client.calls
    again = InstantClient()
    report = run_import(ImportConfig(path), again)

    assert (report.already_created, report.created) == (first, rows - first)
    accepted = read_csv(tmp_path / "pets.accepted.csv")
    assert sorted(int(r["petsync_row"]) for r in accepted) == list(range(2, rows + 2))
    assert all(r["petsync_id"] for r in accepted)
    journals = journal_of(path).parent
    assert [p.name for p in journals.iterdir()] == [journal_of(path).name]  # indexes removed
