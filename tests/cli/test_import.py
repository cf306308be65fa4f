"""`petsync import`: exit codes, summary, files, and a SIGKILLed run resumed without duplicates."""

from __future__ import annotations

import csv
import fcntl
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from petsync.cli import cli
from petsync.client.config import ClientConfig
from petsync.importer.journal_home import journal_home
from petsync.server.faults import Faults
from tests.importer.doubles import journal_of


def run(srv: Any, *args: str) -> Result:
    env = {"PETSYNC_API_KEY": srv.api_key.reveal(), "PETSYNC_BASE_URL": srv.base_url}
    return CliRunner().invoke(cli, ["import", *args], env=env, catch_exceptions=False)


def read_csv(path: Path) -> list[dict[str, str]]:
    """The rows of an output file, in whatever delimiter it follows (the input's)."""
    with path.open(encoding="utf-8-sig", newline="") as handle:
        delimiter = max((",", ";", "\t"), key=handle.readline().count)
        handle.seek(0)
        return list(csv.DictReader(handle, delimiter=delimiter))


def test_clean_import_exits_0_with_the_summary(petstore_server: Any, isolated: Path) -> None:
    srv = petstore_server()
    Path("pets.csv").write_text("name,categoryId,status\nRex,1,available\nTom,2,\n")
    result = run(srv, "pets.csv")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "read pets.csv: 2 rows, 0 blank skipped, encoding utf-8, delimiter comma"
    assert lines[1] == (
        "created 2, already done 0 (earlier runs), rejected 0 (local 0, api 0), "
        "uncertain 0, pending 0"
    )
    assert lines[2].startswith("took ") and lines[2].endswith(" rows/s")
    assert lines[3] == "accepted:  pets.accepted.csv"
    assert len(lines) == 4
    assert sorted(p.name for p in srv.store.all()) == ["Rex", "Tom"]


def test_rejected_rows_exit_4_and_name_the_fix_command(
    petstore_server: Any, isolated: Path
) -> None:
    srv = petstore_server()
    Path("pets.csv").write_bytes(
        "Name;Category ID;Status\nRex;12.0;AVAILABLE\nBad;1.5;\n\nCafé;3;sold\n".encode("cp1252")
    )
    result = run(srv, "pets.csv", "--report", "report.json")
    assert result.exit_code == 4, result.output
    assert result.output.splitlines() == [
        "read pets.csv: 3 rows, 1 blank skipped, encoding cp1252, delimiter semicolon",
        "  note: pets.csv is not valid UTF-8 (line 5, byte offset 56); read it as cp1252 "
        "(Windows Western European). If names look wrong, pass --encoding",
        "created 2, already done 0 (earlier runs), rejected 1 (local 1, api 0), uncertain 0, "
        "pending 0",
        "normalised: integral_decimal 1, status_case_folded 1",
        result.output.splitlines()[4],  # timing
        "rejects:   pets.rejects.csv  (fix them, then: petsync import pets.rejects.csv)",
        "  row 3, categoryId: categoryId '1.5' is not a whole number; write it as digits only, "
        "like 12 (no decimals, exponents or separators; in Excel, store long ids as text)",
        "accepted:  pets.accepted.csv",
    ]
    report = json.loads(Path("report.json").read_text())
    assert {k: report[k] for k in ("rows_read", "created", "rejected_local", "exit_code")} == {
        "rows_read": 3,
        "created": 2,
        "rejected_local": 1,
        "exit_code": 4,
    }
    assert [r["petsync_row"] for r in read_csv(Path("pets.rejects.csv"))] == ["3"]

    # Fix and re-run the rejects: one command, exit 0.
    text = Path("pets.rejects.csv").read_text(encoding="utf-8-sig")
    assert text.startswith("Name;Category ID;Status;petsync_row;")  # the input's dialect
    text = text.replace("Bad;1.5", "Bad;1")
    Path("pets.rejects.csv").write_text(text, encoding="utf-8-sig")
    again = run(srv, "pets.rejects.csv")
    assert again.exit_code == 0, again.output
    assert sorted(p.name for p in srv.store.all()) == ["Bad", "Café", "Rex"]


def test_dry_run_needs_no_key_and_sends_nothing(petstore_server: Any, isolated: Path) -> None:
    srv = petstore_server()
    Path("pets.csv").write_text("name,categoryId\nRex,1\nBad,x\n")
    result = CliRunner().invoke(cli, ["import", "pets.csv", "--dry-run"], env={})
    assert result.exit_code == 4, result.output
    assert "dry run: 1 row would be sent, nothing sent; rejected locally 1" in result.output
    assert srv.store.count() == 0
    assert [r["name"] for r in read_csv(Path("pets.rejects.csv"))] == ["Bad"]
    ok = CliRunner().invoke(cli, ["import", "pets.rejects.csv", "--dry-run"], env={})
    assert ok.exit_code == 4  # still invalid: nothing fixed yet


def test_missing_column_exits_2_naming_the_columns(petstore_server: Any, isolated: Path) -> None:
    srv = petstore_server()
    Path("pets.csv").write_text("Pet,Kind\nRex,1\n")
    result = run(srv, "pets.csv")
    assert result.exit_code == 2
    assert result.output.strip() == (
        "Error: pets.csv: no column for 'name' and 'categoryId'; columns found: 'Pet', 'Kind'. "
        'Name the header name and categoryId, or pass --map "COLUMN=name" (no row of the '
        "first 20 names the fields; to read another row as the header, pass --header-row N)"
    )
    mapped = run(srv, "pets.csv", "--map", "Pet=name", "--map", "Kind=categoryId")
    assert mapped.exit_code == 0, mapped.output


def test_ambiguous_delimiter_exits_2_with_a_hint(petstore_server: Any, isolated: Path) -> None:
    srv = petstore_server()
    Path("pets.csv").write_text("name;category,id\n")
    result = run(srv, "pets.csv")
    assert result.exit_code == 2
    assert "Pass --delimiter comma, --delimiter semicolon or --delimiter tab" in result.output


def test_401_exits_3(petstore_server: Any, isolated: Path) -> None:
    srv = petstore_server()
    Path("pets.csv").write_text("name,categoryId\nRex,1\nTom,2\n")
    env = {"PETSYNC_API_KEY": "not-the-key", "PETSYNC_BASE_URL": srv.base_url}
    result = CliRunner().invoke(cli, ["import", "pets.csv"], env=env)
    assert result.exit_code == 3, result.output
    assert "rejected 0 (local 0, api 0)" in result.output
    assert "Error: " in result.output and "not-the-key" not in result.output
    assert srv.store.count() == 0


def test_a_new_file_under_the_same_name_is_imported(petstore_server: Any, isolated: Path) -> None:
    srv = petstore_server()
    Path("pets.csv").write_text("name,categoryId\nRex,1\n")
    assert run(srv, "pets.csv").exit_code == 0
    Path("pets.csv").write_text("name,categoryId\nRex,1\nTom,2\n")  # the next day's file
    result = run(srv, "pets.csv")
    assert result.exit_code == 0, result.output
    assert "created 2, already done 0" in result.output
    assert sorted(p.name for p in srv.store.all()) == ["Rex", "Rex", "Tom"]


def test_out_dir_and_journal_options(petstore_server: Any, isolated: Path) -> None:
    srv = petstore_server()
    Path("pets.csv").write_text("name,categoryId\nRex,1\n")
    result = run(srv, "pets.csv", "--out-dir", "out", "--journal", "j.jsonl")
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in Path("out").iterdir()) == ["pets.accepted.csv"]
    assert Path("j.jsonl").exists()


def test_sigkilled_import_resumes_and_creates_each_row_once(
    petstore_server: Any, tmp_path: Path
) -> None:
    """Kill `petsync import` (as cron would run it) mid-way; the re-run finishes the job."""
    from petsync.client.client import PetstoreClient
    from petsync.importer.config import SENDING_WINDOW, ImportConfig
    from petsync.importer.run import run_import

    srv = petstore_server(faults=Faults(latency_ms=30))
    names = [f"Pet{i:03}" for i in range(80)]
    source = tmp_path / "pets.csv"
    source.write_text("name,categoryId\n" + "".join(f"{n},{i}\n" for i, n in enumerate(names)))
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "PETSYNC_API_KEY": srv.api_key.reveal(),
        "PETSYNC_BASE_URL": srv.base_url,
    }
    # The command keeps its journal in the API's home under HOME; the library re-runs
    # below are given that home, as the command would use it.
    home = journal_home(srv.base_url, None, {}, tmp_path)
    journal = home / f"{hashlib.sha256(source.read_bytes()).hexdigest()}.jsonl"
    proc = subprocess.Popen(
        # --baseline: settling below then finds the killed rows' pets created, too.
        [
            sys.executable,
            "-m",
            "petsync",
            "import",
            str(source),
            "--concurrency",
            "4",
            "--baseline",
        ],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            if journal.exists() and journal.read_text().count('"created"') >= 12:
                break
            time.sleep(0.01)
        assert proc.poll() is None, "the import finished before it could be killed"
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)

    killed_at = srv.store.count()
    assert 12 <= killed_at < 80
    srv.faults.latency_ms = 0
    client = PetstoreClient(ClientConfig(srv.base_url, srv.api_key))
    with client:
        report = run_import(ImportConfig(source, journal_home=home), client)
    stored = Counter(p.name for p in srv.store.all())
    assert max(stored.values()) == 1  # never a duplicate
    # At most the rows journaled `sending` and not yet answered at the kill: one batch
    # per worker, SENDING_WINDOW rows in all.
    assert report.uncertain <= SENDING_WINDOW
    uncertain = read_csv(tmp_path / "pets.uncertain.csv") if report.uncertain else []
    assert len(uncertain) == report.uncertain
    missing = set(names) - set(stored)
    assert missing <= {r["name"] for r in uncertain}  # only in-doubt rows may be missing

    # --settle asks the API which of them exist: those are accepted, the others sent once.
    with PetstoreClient(ClientConfig(srv.base_url, srv.api_key)) as client:
        settled = run_import(ImportConfig(source, settle=True, journal_home=home), client)
    assert (settled.uncertain, settled.pending, settled.exit_code) == (0, 0, 0)
    assert settled.settled_created + settled.settled_not_created == report.uncertain
    assert settled.created == settled.settled_not_created
    final = Counter(p.name for p in srv.store.all())
    assert final == Counter(names)  # each valid row created exactly once
    accepted = read_csv(tmp_path / "pets.accepted.csv")
    ids = {p.name: p.id for p in srv.store.all()}
    assert {r["name"]: int(r["petsync_id"]) for r in accepted} == ids


def test_journal_held_by_another_import_exits_75_and_the_metrics_say_so(
    petstore_server: Any, isolated: Path
) -> None:
    srv = petstore_server()
    Path("pets.csv").write_text("name,categoryId\nRex,1\n")
    journal = journal_of(Path("pets.csv"), api=srv.base_url)
    journal.parent.mkdir(parents=True)
    journal.touch()
    with journal.open("rb") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)  # another run holds it
        result = run(srv, "pets.csv", "--metrics-file", "import.prom")
    assert result.exit_code == 75
    assert result.stderr == (
        f"Error: another petsync import is using journal {journal}; wait for it to "
        "finish (two runs on one file could send a row twice)\n"
    )
    assert srv.store.count() == 0
    metrics = Path("import.prom").read_text()
    assert 'petsync_exit_code{petsync_job="import"} 75' in metrics
    assert "petsync_rows_created" not in metrics  # no report: no count to give


def test_a_dry_run_names_the_columns_not_sent_and_the_rows_repeated_before_sending(
    petstore_server: Any, isolated: Path
) -> None:
    srv = petstore_server()
    Path("pets.csv").write_text(
        "name,categoryId,photoUrls,tags,id,Pet status\n"
        "Rex,1,http://x,a,9007199254740993,sold\n"
        "Tom,2,,,,\n"
        "Rex,1,http://x,a,9007199254740993,sold\n"
        " Tom ,2,,,,\n"
    )
    result = run(srv, "pets.csv", "--dry-run")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[:4] == [
        "pets.csv: not sent: columns 'photoUrls', 'tags', 'id', 'Pet status' (no field of the "
        "API reads them; they are copied to the output files)",
        'pets.csv:   to send one as status: --map "Pet status=status"',
        "pets.csv: repeated: 2 rows repeat an earlier row (row 4 = row 2, row 5 = row 3): "
        "sent once; --allow-duplicates sends every copy",
        "read pets.csv: 4 rows, 0 blank skipped, encoding utf-8, delimiter comma",
    ]
    assert "dry run: 2 rows would be sent, nothing sent; rejected locally 0" in lines
    assert sum("not sent: columns" in line for line in lines) == 1  # said once

    sent = run(srv, "pets.csv")
    assert sent.exit_code == 0, sent.output
    assert sorted(p.name for p in srv.store.all()) == ["Rex", "Tom"]
    accepted = read_csv(Path("pets.accepted.csv"))
    assert [(r["name"], r["id"]) for r in accepted] == [
        ("Rex", "9007199254740993"),
        ("Tom", ""),
    ]


def test_allow_duplicates_sends_every_copy(petstore_server: Any, isolated: Path) -> None:
    srv = petstore_server()
    Path("pets.csv").write_text("name,categoryId\nRex,1\nRex,1\n")
    result = run(srv, "pets.csv", "--allow-duplicates", "--report", "-")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert (report["created"], report["duplicates"], report["duplicates_sent"]) == (2, 1, True)
    assert sorted(p.name for p in srv.store.all()) == ["Rex", "Rex"]
