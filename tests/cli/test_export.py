"""The export, demo and diff commands: exit codes, messages and files, through CliRunner."""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from petsync.cli import cli
from petsync.core.models import Pet
from petsync.formats.snapshots import list_snapshots, load_snapshot
from petsync.storage.layout import (
    CSV_NAME,
    MANIFEST_NAME,
    PARQUET_NAME,
    QUARANTINE_NAME,
    STAGING_DIR,
    partition_path,
)
from petsync.storage.lock import DirectoryLock

TODAY = dt.datetime.now(dt.UTC).date()


def run(srv: Any, *args: str) -> Result:
    env = {"PETSYNC_API_KEY": srv.api_key.reveal(), "PETSYNC_BASE_URL": srv.base_url}
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


def test_export_writes_a_snapshot_and_prints_the_summary(
    petstore_server: Any, isolated: Path
) -> None:
    srv = petstore_server(seed_pets=200)

    result = run(srv, "export", "--out", "out")

    assert result.exit_code == 0, result.output
    path = partition_path(Path("out"), TODAY)
    assert sorted(p.name for p in path.iterdir()) == sorted(
        [PARQUET_NAME, CSV_NAME, QUARANTINE_NAME, MANIFEST_NAME]
    )
    manifest = json.loads((path / MANIFEST_NAME).read_text())
    by_status = manifest["by_status"]
    lines = result.stdout.splitlines()
    assert lines[0] == (
        f"snapshot {TODAY}: 200 pets (available {by_status['available']}, pending "
        f"{by_status['pending']}, sold {by_status['sold']}, no status {manifest['no_status']}, "
        "unknown status 0), quarantined 0"
    )
    assert lines[1].startswith("took ") and lines[1].endswith(" pets/s, complete")
    assert lines[2] == f"written to {path}"
    listing_lines = [x for x in result.stderr.splitlines() if x.startswith("export listing=")]
    assert sorted(x.split()[1] for x in listing_lines) == [
        "listing=all",
        "listing=available",
        "listing=pending",
        "listing=sold",
    ]
    assert srv.api_key.reveal() not in result.output + (path / MANIFEST_NAME).read_text()


def test_export_format_parquet_and_status_narrowing(petstore_server: Any, isolated: Path) -> None:
    srv = petstore_server(seed_pets=120)

    result = run(
        srv, "export", "--out", "out", "--format", "parquet", "--status", "sold", "--no-sweep"
    )

    assert result.exit_code == 0, result.output
    path = partition_path(Path("out"), TODAY)
    assert not (path / CSV_NAME).exists()
    frame = load_snapshot("out")
    assert set(frame["status"].dropna()) == {"sold"}
    assert len(frame) == sum(1 for p in srv.store.all() if p.status == "sold")


def test_incomplete_export_warns_and_exits_4(petstore_server: Any, isolated: Path) -> None:
    srv = petstore_server(seed_pets=150, pagination="none")

    result = run(srv, "export", "--out", "out")

    assert result.exit_code == 4
    [warning] = [line for line in result.stderr.splitlines() if "proven complete" in line]
    assert warning == (
        "Warning: The export could not be proven complete: listing 'all' did not prove its end "
        "(why: its listing line, and incomplete_reasons in the manifest). The snapshot is "
        "published flagged and load_snapshot() keeps returning the latest trusted one. Check "
        "the server's paging (`petsync check`) and re-run."
    )
    assert result.stderr.count("petsync cannot prove") == 1  # the reason, in the listing line
    assert "INCOMPLETE" in result.stdout
    [info] = list_snapshots(Path("out"))
    assert info.complete is False


@pytest.mark.parametrize(
    "how",
    [
        ["export", "--out", "out", "--table-format", "delta", "--format", "both"],
        ["run", "delta.toml"],
    ],
    ids=["options", "job-file"],
)
def test_delta_with_a_csv_is_refused_before_any_request(
    petstore_server: Any, isolated: Path, how: list[str]
) -> None:
    srv = petstore_server(seed_pets=5)
    Path("delta.toml").write_text(
        '[export]\nout = "out"\ntable_format = "delta"\nformat = "both"\n', encoding="utf-8"
    )

    result = run(srv, *how)

    assert result.exit_code == 2
    said = {
        "options": (
            "--format both writes a CSV beside each Parquet file, and a Delta table "
            "(--table-format delta) holds Parquet only: give --format parquet or leave the "
            "format out"
        ),
        "job-file": (
            'format = "both" in delta.toml writes a CSV beside each Parquet file, and a Delta '
            'table (table_format = "delta" in delta.toml) holds Parquet only: give format = '
            '"parquet" in delta.toml or leave the format out'
        ),
    }
    assert result.stderr == f"Error: {said['options' if how[0] == 'export' else 'job-file']}\n"
    assert not Path("out").exists()  # no lock taken, nothing fetched or written


def test_strict_incomplete_export_exits_1_and_publishes_nothing(
    petstore_server: Any, isolated: Path
) -> None:
    srv = petstore_server(seed_pets=150, pagination="none")

    result = run(srv, "export", "--out", "out", "--strict")

    assert result.exit_code == 1
    [error] = [x for x in result.stderr.splitlines() if x.startswith("Error: ")]
    assert error.startswith(
        "Error: export refused to publish (--strict): The export could not be proven complete"
    )
    assert error.endswith(
        "Nothing was published. Check the server's paging (`petsync check`) and re-run. "
        "The previous snapshot stays the latest."
    )
    assert list_snapshots(Path("out")) == []


def test_locked_directory_exits_75_naming_the_lock(petstore_server: Any, isolated: Path) -> None:
    srv = petstore_server(seed_pets=10)

    with DirectoryLock(Path("out")):
        result = run(srv, "export", "--out", "out")

    assert result.exit_code == 75
    assert result.stderr.startswith(
        "Error: another petsync run is writing to out (it holds the lock out/.petsync.lock, pid "
    )


def test_drop_beyond_max_drop_exits_4_with_a_warning(petstore_server: Any, isolated: Path) -> None:
    big = petstore_server(seed_pets=100)
    small = petstore_server(seed_pets=70)
    assert run(big, "export", "--out", "out").exit_code == 0
    yesterday = TODAY - dt.timedelta(days=1)  # the baseline is the newest *earlier* snapshot
    partition_path(Path("out"), TODAY).rename(partition_path(Path("out"), yesterday))

    result = run(small, "export", "--out", "out", "--max-drop", "25%")

    assert result.exit_code == 4
    assert (
        "Warning: Suspicious drop: the pet count fell by 30.0% (from 100 in the snapshot of "
        f"{yesterday} to 70), more than the allowed 25%." in result.stderr
    )
    assert result.stderr.count("Suspicious drop") == 1  # once: not also as a log line
    assert result.stdout.splitlines()[1].endswith("complete, suspicious drop")


def test_max_drop_accepts_a_fraction(petstore_server: Any, isolated: Path) -> None:
    big = petstore_server(seed_pets=100)
    small = petstore_server(seed_pets=70)
    assert run(big, "export", "--out", "out").exit_code == 0
    partition_path(Path("out"), TODAY).rename(
        partition_path(Path("out"), TODAY - dt.timedelta(days=1))
    )

    assert run(small, "export", "--out", "out", "--max-drop", "0.35").exit_code == 0
    assert run(small, "export", "--out", "out", "--max-drop", "0.25").exit_code == 4


def test_max_drop_out_of_range_is_a_usage_error(petstore_server: Any, isolated: Path) -> None:
    srv = petstore_server(seed_pets=1)

    result = run(srv, "export", "--out", "out", "--max-drop", "150%")

    assert result.exit_code == 2
    assert "'150%' is not a share of pets; use e.g. 20% or 0.2" in result.stderr


def test_keep_prunes_after_a_successful_run(
    petstore_server: Any, isolated: Path, tmp_path: Path
) -> None:
    srv = petstore_server(seed_pets=20)
    old = partition_path(Path("out"), dt.date(2020, 1, 1))
    old.mkdir(parents=True)
    (old / MANIFEST_NAME).write_text('{"complete": true, "pets": 20}')

    result = run(srv, "export", "--out", "out", "--keep", "1")

    assert result.exit_code == 0, result.output
    assert [s.date for s in list_snapshots(Path("out"))] == [TODAY]
    assert "pruned 1 older snapshot(s)" in result.stdout


def test_missing_key_is_a_usage_error(isolated: Path) -> None:
    result = CliRunner().invoke(
        cli, ["export", "--out", "out", "--base-url", "http://127.0.0.1:9/v1"]
    )

    assert result.exit_code == 2
    assert "no API key" in result.stderr


def test_demo_exports_a_seeded_catalogue_and_prints_the_loading_lines(isolated: Path) -> None:
    result = CliRunner().invoke(cli, ["demo", "--pets", "300"], catch_exceptions=False)

    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"snapshot {TODAY - dt.timedelta(days=6)}: 300 pets (")
    assert '  import petsync; df = petsync.load_snapshots("petsync-demo")' in result.stdout
    assert "read_parquet('petsync-demo/pets/*/*.parquet', hive_partitioning=true)" in result.stdout
    assert len(load_snapshot("petsync-demo", date=TODAY - dt.timedelta(days=6))) == 300


def _crafted_snapshots(srv: Any, directory: Path) -> None:
    """Yesterday: pets 1-4. Today: 1 renamed, 2 sold, 3 removed, 5 added."""
    for pet in [
        Pet(1, "Rex", 1, "available"),
        Pet(2, "Tom", 1, "available"),
        Pet(3, "Kit", 1, None),
        Pet(4, "Bo", 1, "pending"),
    ]:
        srv.store.insert(pet)
    from petsync.client.config import ClientConfig
    from petsync.core.apikey import ApiKey  # noqa: F401 - the server's key is already an ApiKey
    from petsync.export.config import ExportConfig
    from petsync.export.run import run_export

    config = ExportConfig(client=ClientConfig(srv.base_url, srv.api_key), out_dir=directory)
    run_export(config, today=dt.date(2026, 11, 21))


def test_diff_counts_between_two_dates(petstore_server: Any, isolated: Path) -> None:
    first = petstore_server()
    _crafted_snapshots(first, Path("out"))
    second = petstore_server()
    for pet in [
        Pet(1, "Rex II", 1, "available"),
        Pet(2, "Tom", 1, "sold"),
        Pet(4, "Bo", 1, "pending"),
        Pet(5, "New", 1, "available"),
    ]:
        second.store.insert(pet)
    from petsync.client.config import ClientConfig
    from petsync.export.config import ExportConfig
    from petsync.export.run import run_export

    run_export(
        ExportConfig(client=ClientConfig(second.base_url, second.api_key), out_dir=Path("out")),
        today=dt.date(2026, 11, 22),
    )

    result = CliRunner().invoke(cli, ["diff", "2026-11-21", "2026-11-22", "--dir", "out"])
    as_json = CliRunner().invoke(
        cli, ["diff", "2026-11-21", "out/pets/snapshot_date=2026-11-22", "--dir", "out", "--json"]
    )
    details = CliRunner().invoke(
        cli, ["diff", "2026-11-21", "2026-11-22", "--dir", "out", "--details"]
    )

    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "from 2026-11-21 (out/pets/snapshot_date=2026-11-21) to 2026-11-22 "
        "(out/pets/snapshot_date=2026-11-22)",
        "added:         1",
        "removed:       1",
        "renamed:       1",
        "recategorised: 0",
        "status changes: 1",
        "  available -> sold: 1",
    ]
    (line,) = as_json.stdout.splitlines()  # one line, as export --json
    body = json.loads(line)
    assert body["added"] == 1 and body["removed"] == 1 and body["renamed"] == 1
    assert body["status_transitions"] == [{"from": "available", "to": "sold", "pets": 1}]
    assert "details" not in body
    assert "Rex II" in details.stdout and "New" in details.stdout and "Kit" in details.stdout


def test_diff_of_a_missing_snapshot_is_a_usage_error(isolated: Path) -> None:
    result = CliRunner().invoke(cli, ["diff", "2026-11-21", "2026-11-22", "--dir", "out"])

    assert result.exit_code == 2
    assert result.stderr.startswith(
        "Error: no petsync snapshot at out/pets/snapshot_date=2026-11-21"
    )


HEAVY = ("pandas", "pyarrow", "numpy", "httpx", "httpcore", "msgspec", "dagster")


def test_importing_the_cli_loads_no_data_or_network_library() -> None:
    # `petsync --help` and `import petsync` stay fast: what a command needs loads when it runs.
    code = (
        "import sys, petsync, petsync.cli.main; "
        "loaded = {m.split('.')[0] for m, module in sys.modules.items() if module}; "
        f"heavy = sorted(loaded & set({HEAVY!r})); "
        "print(heavy, 'importlib.metadata' in sys.modules)"  # metadata: a bug's report only
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "[] False"


def test_the_command_lines_client_loads_no_command_line_of_httpx() -> None:
    # httpx imports its own command line (rich, pygments) when they are installed, as they
    # are in the test environment: the petsync command line refuses it, a library caller not.
    code = (
        "import sys, {first}; import petsync.client.client, httpx; "
        "print('rich' in sys.modules, callable(httpx.main))"
    )
    shown = {}
    for first in ("petsync.cli", "petsync"):
        out = subprocess.run(
            [sys.executable, "-c", code.format(first=first)],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        shown[first] = out.stdout.strip()
    assert shown == {"petsync.cli": "False True", "petsync": "True True"}


def test_export_killed_mid_way_leaves_the_previous_snapshot(
    petstore_server: Any, tmp_path: Path
) -> None:
    """A SIGKILLed `petsync export` (as cron would run it) publishes nothing partial."""
    from petsync.client.config import ClientConfig
    from petsync.export.config import ExportConfig
    from petsync.export.run import run_export
    from petsync.server.faults import Faults

    srv = petstore_server(seed_pets=600, faults=Faults(latency_ms=20))
    out = tmp_path / "out"
    first = run_export(ExportConfig(client=ClientConfig(srv.base_url, srv.api_key), out_dir=out))
    assert first.snapshot_path is not None
    manifest_before = (first.snapshot_path / MANIFEST_NAME).read_text()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "PETSYNC_API_KEY": srv.api_key.reveal(),
        "PETSYNC_BASE_URL": srv.base_url,
    }
    # One listing after the other: the first listing's line on stderr proves pages were
    # fetched, and the sweep (7 pages at >= 20 ms each) is still running when we kill.
    proc = subprocess.Popen(
        [sys.executable, "-m", "petsync", "export", "--out", str(out), "--concurrency", "1"],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        deadline = time.monotonic() + 60
        line = ""
        while time.monotonic() < deadline and not line.startswith("export listing="):
            line = proc.stderr.readline()
            if not line and proc.poll() is not None:
                break
        assert line.startswith("export listing=available"), line
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        if proc.stderr is not None:
            proc.stderr.close()

    [info] = list_snapshots(out)
    assert (info.path / MANIFEST_NAME).read_text() == manifest_before
    assert len(load_snapshot(out)) == 600
    assert list((out / STAGING_DIR).iterdir()) != []  # the killed run's staging, unpublished
    import pandas as pd

    assert len(pd.read_parquet(out / "pets")) == 600
    # The next run cleans the leftovers (and the lock was released by the kernel).
    srv.faults.latency_ms = 0
    again = run_export(ExportConfig(client=ClientConfig(srv.base_url, srv.api_key), out_dir=out))
    assert again.complete is True
    assert list((out / STAGING_DIR).iterdir()) == []


def test_incomplete_export_with_json_logs_keeps_stderr_json_and_exits_4(
    petstore_server: Any, isolated: Path
) -> None:
    srv = petstore_server(seed_pets=150, pagination="none")

    result = run(srv, "--log-format", "json", "export", "--out", "out")

    assert result.exit_code == 4
    entries = [json.loads(line) for line in result.stderr.splitlines()]  # JSON lines only
    warnings = [e["fields"]["message"] for e in entries if e["event"] == "export.warning"]
    assert warnings and warnings[0].startswith("The export could not be proven complete: ")
    assert [e for e in entries if e["event"] == "error"] == []  # incomplete is no error
    assert "INCOMPLETE" in result.stdout
    [info] = list_snapshots(Path("out"))
    assert info.complete is False


def test_demo_into_a_locked_directory_exits_75_naming_the_lock(isolated: Path) -> None:
    with DirectoryLock(Path("petsync-demo")):
        result = CliRunner().invoke(cli, ["demo", "--pets", "5"])

    assert result.exit_code == 75
    assert result.stdout == ""
    assert result.stderr.startswith(
        "Error: another petsync run is writing to petsync-demo (it holds the lock "
        "petsync-demo/.petsync.lock, pid "
    )


def test_memory_budget_takes_the_units_of_every_size_option(
    petstore_server: Any, isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import petsync.export.run

    srv = petstore_server(seed_pets=30)
    budgets: list[int] = []
    real_run_export = petsync.export.run.run_export

    def recording(config: Any, **kwargs: Any) -> Any:
        budgets.append(config.memory_budget)
        return real_run_export(config, **kwargs)

    monkeypatch.setattr(petsync.export.run, "run_export", recording)

    decimal = run(srv, "export", "--out", "out", "--memory-budget", "1.5GB")
    binary = run(srv, "export", "--out", "out", "--memory-budget", "200MiB")
    refused = run(srv, "export", "--out", "out", "--memory-budget", "lots")

    assert (decimal.exit_code, binary.exit_code) == (0, 0), decimal.output + binary.output
    assert budgets == [1_500_000_000, 200 * 2**20]
    assert refused.exit_code == 2
    assert "Invalid value for '--memory-budget': 'lots' is not a size; use e.g. 32MiB" in (
        refused.stderr
    )


def test_an_unusable_scratch_dir_stops_the_export_before_any_request(isolated: Path) -> None:
    Path("file").write_text("not a folder\n")
    env = {"PETSYNC_API_KEY": "k-scratch-test-1234"}
    args = ["export", "--out", "out", "--scratch-dir", "file/sub", "--retries", "0"]

    result = CliRunner().invoke(cli, [*args, "--base-url", "http://127.0.0.1:9/v1"], env=env)

    assert result.exit_code == 2
    assert result.stderr.startswith(
        "Error: scratch directory (--scratch-dir) file/sub: file is not a directory"
    )
    assert "connect" not in result.stderr  # refused before the first request
    assert not Path("out", "pets").exists()
