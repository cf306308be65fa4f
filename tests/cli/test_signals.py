"""SIGTERM and Ctrl-C as schedulers and people send them, to `petsync` run as cron runs it.

Each test starts `python -m petsync` as a subprocess against the reference server on
loopback, waits for what the process writes (its journal, a log line on stderr), never for
a fixed time, and bounds every wait.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from petsync.cli import cli
from petsync.cli.signals import stop_on_signals
from petsync.importer.journal_home import journal_home
from petsync.server.faults import Faults

TIMEOUT = 60.0  # seconds: any wait in these tests, generously above what it needs


class Petsync:
    """A `python -m petsync ...` process whose stdout and stderr are read as they come."""

    def __init__(self, args: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "petsync", *args],
            cwd=cwd,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(cwd), **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.stdout: list[str] = []
        self.stderr: list[str] = []
        self._cond = threading.Condition()
        self._readers = [
            threading.Thread(target=self._read, args=(stream, lines), daemon=True)
            for stream, lines in ((self.proc.stdout, self.stdout), (self.proc.stderr, self.stderr))
        ]
        for reader in self._readers:
            reader.start()

    def _read(self, stream: Any, lines: list[str]) -> None:
        for line in stream:
            with self._cond:
                lines.append(line.rstrip("\n"))
                self._cond.notify_all()

    def wait_for(self, ready: Callable[[], bool], what: str, timeout: float = TIMEOUT) -> None:
        """Wait (bounded) until ``ready()``; fail naming ``what`` if the process ended first."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not ready():
                if self.proc.poll() is not None and not ready():
                    raise AssertionError(f"petsync ended ({self.proc.returncode}) before {what}")
                left = deadline - time.monotonic()
                assert left > 0, f"timed out waiting for {what}"
                self._cond.wait(timeout=min(left, 0.05))

    def stderr_has(self, text: str) -> bool:
        with self._cond:
            return any(text in line for line in self.stderr)

    def finish(self, timeout: float = TIMEOUT) -> int:
        code = self.proc.wait(timeout=timeout)
        self._close()
        return code

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=TIMEOUT)
        self._close()

    def _close(self) -> None:
        for reader in self._readers:
            reader.join(timeout=TIMEOUT)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


def journal_of(source: Path, srv: Any) -> Path:
    """Where an import keeps the journal of ``source`` (by the sha256 of its bytes): the
    API's journal home under HOME, which is the working folder here."""
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    return journal_home(srv.base_url, None, {}, source.parent) / f"{digest}.jsonl"


def journal_count(journal: Path, state: str) -> int:
    try:
        return journal.read_text().count(f'"state": "{state}"')
    except FileNotFoundError:
        return 0


def write_pets(path: Path, count: int) -> list[str]:
    names = [f"Pet{i:05}" for i in range(count)]
    path.write_text("name,categoryId\n" + "".join(f"{n},{i % 7}\n" for i, n in enumerate(names)))
    return names


def env_of(srv: Any) -> dict[str, str]:
    return {"PETSYNC_API_KEY": srv.api_key.reveal(), "PETSYNC_BASE_URL": srv.base_url}


def test_sigterm_mid_import_finishes_in_flight_rows_and_a_rerun_creates_the_rest(
    petstore_server: Any, tmp_path: Path
) -> None:
    srv = petstore_server(faults=Faults(latency_ms=20))
    source = tmp_path / "pets.csv"
    names = write_pets(source, 2000)
    journal = journal_of(source, srv)
    proc = Petsync(["import", "pets.csv", "--report", "report.json"], tmp_path, env_of(srv))
    try:
        proc.wait_for(lambda: journal_count(journal, "created") >= 40, "40 rows created")
        proc.proc.send_signal(signal.SIGTERM)
        assert proc.finish() == 143
    finally:
        proc.kill()
    first = srv.store.count()
    assert 40 <= first < 2000
    summary = proc.stdout[1]
    assert summary.startswith(f"created {first}, already done 0 (earlier runs), rejected 0")
    assert summary.endswith(f"uncertain 0, pending {2000 - first}")
    assert "stopped: stopped by SIGTERM; requests already sent were given up to 10 s" in (
        "\n".join(proc.stdout)
    )
    assert proc.stderr[0].startswith("petsync: SIGTERM received: stopping after requests")
    assert proc.stderr[-1].startswith("Error: the import of pets.csv was stopped by SIGTERM")
    assert not (tmp_path / "pets.uncertain.csv").exists()  # nothing uncertain: no file

    srv.faults.latency_ms = 0  # the re-run need not wait
    again = CliRunner().invoke(
        cli,
        ["import", str(source)],
        # The first run's environment: the journal home under HOME, not the test's own.
        env={**env_of(srv), "HOME": str(tmp_path), "XDG_STATE_HOME": None},
        catch_exceptions=False,
    )
    assert again.exit_code == 0, again.output
    assert again.output.splitlines()[1].startswith(
        f"created {2000 - first}, already done {first} (earlier runs)"
    )
    assert Counter(p.name for p in srv.store.all()) == Counter(names)  # each row once


def test_ctrl_c_prints_the_summary_and_exits_130(petstore_server: Any, tmp_path: Path) -> None:
    srv = petstore_server(faults=Faults(latency_ms=20))
    source = tmp_path / "pets.csv"
    write_pets(source, 400)
    journal = journal_of(source, srv)
    proc = Petsync(["import", "pets.csv"], tmp_path, env_of(srv))
    try:
        proc.wait_for(lambda: journal_count(journal, "created") >= 10, "10 rows created")
        proc.proc.send_signal(signal.SIGINT)
        assert proc.finish() == 130
    finally:
        proc.kill()
    created = srv.store.count()
    assert proc.stdout[1].startswith(f"created {created}, ")
    assert proc.stdout[1].endswith(f"uncertain 0, pending {400 - created}")
    assert "Aborted!" not in proc.stderr
    assert proc.stderr[-1].startswith("Error: the import of pets.csv was stopped by SIGINT")


def test_a_second_signal_stops_at_once_leaving_rows_in_flight_uncertain(
    petstore_server: Any, tmp_path: Path
) -> None:
    srv = petstore_server(faults=Faults(latency_ms=2_000))  # answers come well after
    source = tmp_path / "pets.csv"
    write_pets(source, 50)
    journal = journal_of(source, srv)
    proc = Petsync(["import", "pets.csv", "--concurrency", "2"], tmp_path, env_of(srv))
    try:
        proc.wait_for(lambda: journal_count(journal, "sending") >= 1, "a row in flight")
        proc.proc.send_signal(signal.SIGTERM)
        proc.wait_for(lambda: proc.stderr_has("SIGTERM received: stopping"), "the first line")
        proc.proc.send_signal(signal.SIGTERM)
        code = proc.finish()
    finally:
        proc.kill()
    assert code == 143, "\n".join(proc.stderr[-12:])
    assert proc.stderr[-1] == "petsync: SIGTERM received again: stopping now"
    # It did not wait for the answers: no summary, and the rows in flight are still
    # `sending` in the journal, which the next run counts as uncertain.
    assert proc.stdout == []
    last: dict[int, str] = {}
    for line in journal.read_text().splitlines()[1:]:
        record = json.loads(line)
        if "row" in record:
            last[record["row"]] = record["state"]
    assert "sending" in last.values() and "created" not in last.values()


def test_sigterm_mid_export_publishes_nothing_and_writes_metrics(
    petstore_server: Any, tmp_path: Path
) -> None:
    srv = petstore_server(seed_pets=3000, faults=Faults(latency_ms=40))
    args = ["--log-level", "debug", "export", "--out", "out", "--metrics-file", "export.prom"]
    # A one-byte memory budget: every record of ids seen and every key spills to the scratch
    # area, which must be gone after the stop as after a finished run.
    args += ["--scratch-dir", "scratch", "--memory-budget", "1"]
    scratch = tmp_path / "scratch"
    proc = Petsync(args, tmp_path, env_of(srv))
    try:
        proc.wait_for(lambda: proc.stderr_has(" page "), "a page fetched")
        assert [p.name[:16] for p in scratch.iterdir()] == ["petsync-scratch-"]
        proc.proc.send_signal(signal.SIGTERM)
        assert proc.finish() == 143
    finally:
        proc.kill()
    assert list(scratch.iterdir()) == []
    assert list((tmp_path / "out" / ".petsync-tmp").iterdir()) == []
    assert not list((tmp_path / "out").glob("pets/snapshot_date=*"))
    metrics = (tmp_path / "export.prom").read_text()
    assert 'petsync_exit_code{petsync_job="export"} 143' in metrics
    assert proc.stderr[-1] == (
        "Error: the export was stopped by SIGTERM before publishing; nothing was published, "
        "the previous snapshot stays the latest"
    )
    listings = [line for line in proc.stdout + proc.stderr if line.startswith("export listing=")]
    assert listings and all("INCOMPLETE (stopped by SIGTERM)" in line for line in listings)


def test_handlers_are_restored_and_a_first_signal_only_requests_a_stop() -> None:
    before = signal.getsignal(signal.SIGTERM)
    exits: list[int] = []
    lines: list[str] = []

    class Sink:
        def write(self, text: str) -> None:
            lines.append(text)

        def flush(self) -> None:
            pass

    with stop_on_signals(3, stream=Sink(), exit_now=exits.append) as stop:  # type: ignore[arg-type]
        os.kill(os.getpid(), signal.SIGTERM)
        assert stop.requested and stop.exit_code == 143 and exits == []
        os.kill(os.getpid(), signal.SIGINT)
        assert exits == [130]
    assert signal.getsignal(signal.SIGTERM) is before
    assert lines == [
        "petsync: SIGTERM received: stopping after requests in flight (up to 3 s); again: "
        "stop now\n",
        "petsync: SIGINT received again: stopping now\n",
    ]


def test_with_json_logs_the_signal_lines_are_json_events() -> None:
    exits: list[int] = []
    lines: list[str] = []

    class Sink:
        def write(self, text: str) -> None:
            lines.append(text)

        def flush(self) -> None:
            pass

    sink: Any = Sink()
    with stop_on_signals(3, stream=sink, exit_now=exits.append, json_logs=True):
        os.kill(os.getpid(), signal.SIGTERM)
        os.kill(os.getpid(), signal.SIGTERM)

    events = [json.loads(line) for line in lines]  # each line one JSON object
    assert [(e["level"], e["event"], e["fields"]["signal"]) for e in events] == [
        ("warning", "signal", "SIGTERM"),
        ("warning", "signal", "SIGTERM"),
    ]
    assert events[1]["fields"]["message"] == "petsync: SIGTERM received again: stopping now"
    assert exits == [143]
