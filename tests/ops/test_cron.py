"""The lines of cron.example, run as cron runs them: /bin/sh -c, cron's bare environment.

Only the paths change (the working directory, the env file and the virtual environment the
crontab's PATH names move into tmp_path) and the `petsync` there is a two-line shim for this
interpreter, as the console script of a venv install would be. Success must print nothing
(cron sends no mail); failure must exit non-zero with the reason on stderr (cron mails it to
MAILTO).
"""

from __future__ import annotations

import fcntl
import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from petsync.server.runner import RunningServer

REPO = Path(__file__).resolve().parents[2]
CRON = REPO / "cron.example"
TIMEOUT = 90  # seconds: python start-up, pandas import and a small export or import
VENV_BIN = "/opt/petsync/venv/bin"  # where the crontab's PATH finds petsync first


def crontab() -> tuple[dict[str, str], dict[str, str]]:
    """The crontab's variables, and the command of each job line by job name."""
    variables: dict[str, str] = {}
    commands: dict[str, str] = {}
    for line in CRON.read_text().splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        first = stripped.split()[0]
        if "=" in first and not first[0].isdigit() and first[0] != "*":
            name, _, value = stripped.partition("=")
            variables[name.strip()] = value.strip()
            continue
        command = stripped.split(None, 5)[5]
        assert "%" not in command  # cron would turn it into a newline
        job = "nightly-export" if "nightly-export" in command else "bulk-import"
        commands[job] = command
    return variables, commands


def test_crontab_has_both_jobs_and_cron_variables() -> None:
    variables, commands = crontab()
    assert set(commands) == {"nightly-export", "bulk-import"}
    assert variables["SHELL"] == "/bin/sh"
    assert "MAILTO" in variables
    assert variables["PATH"].split(":") == [VENV_BIN, "/usr/local/bin", "/usr/bin", "/bin"]
    for command in commands.values():
        assert "flock -n" in command and ">>logs/" in command and "2>&1" in command
        assert ". /etc/petsync/env" in command and command.startswith("cd /var/lib/petsync")


class Host:
    """A working directory laid out as the README says, and a way to run a cron line."""

    def __init__(self, tmp_path: Path, srv: RunningServer, key: str) -> None:
        self.srv = srv
        self.work = tmp_path / "var-lib-petsync"
        self.home = tmp_path / "home"
        self.bin = tmp_path / "bin"
        self.env_file = tmp_path / "etc-petsync-env"
        for folder in (self.home, self.bin, self.work / "jobs"):
            folder.mkdir(parents=True)
        for name in ("logs", "run", "metrics", "inbox", "imports"):
            (self.work / name).mkdir()
        for job in ("nightly-export", "bulk-import"):
            shutil.copy(REPO / "jobs" / f"{job}.toml", self.work / "jobs")
        (self.work / "petsync.toml").write_text(
            f'[environments.production]\nbase_url = "{srv.base_url}"\n', encoding="utf-8"
        )
        (self.work / "inbox" / "new-animals.csv").write_text(
            "name,categoryId,status\nRex,1,available\nMia,2,\nBo,3,sold\n", encoding="utf-8"
        )
        self.env_file.write_text(f"PETSYNC_PRODUCTION_API_KEY={key}\n", encoding="utf-8")
        self.env_file.chmod(0o600)
        shim = self.bin / "petsync"
        shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m petsync "$@"\n')
        shim.chmod(0o755)

    def run(self, job: str) -> subprocess.CompletedProcess[str]:
        variables, commands = crontab()
        command = (
            commands[job]
            .replace("/var/lib/petsync", str(self.work))
            .replace("/etc/petsync/env", str(self.env_file))
        )
        environment = {
            "SHELL": variables["SHELL"],
            "PATH": variables["PATH"].replace(VENV_BIN, str(self.bin)),
            "HOME": str(self.home),
            "LOGNAME": "petsync",
        }
        return subprocess.run(
            [variables["SHELL"], "-c", command],
            env=environment,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )


def log_entries(host: Host, job: str) -> list[dict[str, object]]:
    """The job's log, each line parsed as JSON (a line that is not fails the test)."""
    text = (host.work / "logs" / f"{job}.log").read_text()
    return [json.loads(line) for line in text.splitlines()]


@pytest.fixture
def host(tmp_path: Path, petstore_server: Callable[..., RunningServer]) -> Host:
    srv = petstore_server(seed_pets=40)
    return Host(tmp_path, srv, srv.api_key.reveal())


def test_nightly_export_line_succeeds_silently(host: Host) -> None:
    done = host.run("nightly-export")
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    entries = log_entries(host, "nightly-export")  # every line JSON: log events, summary
    assert [e["pets"] for e in entries if "snapshot_path" in e] == [40]
    assert "export.published" in [e.get("event") for e in entries]
    (snapshot,) = (host.work / "snapshots" / "pets").iterdir()
    assert (snapshot / "pets.parquet").is_file()
    assert (
        "petsync_pets_exported"
        in (host.work / "metrics" / "petsync-nightly-export.prom").read_text()
    )


def test_bulk_import_line_creates_the_rows(host: Host) -> None:
    done = host.run("bulk-import")
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    entries = log_entries(host, "bulk-import")
    summaries = [e for e in entries if "imports" in e]  # the job's FILE is a glob
    assert [(i["created"], i["already_created"]) for s in summaries for i in s["imports"]] == [
        (3, 0)
    ]
    assert sorted(pet.name for pet in host.srv.store.all()[-3:]) == ["Bo", "Mia", "Rex"]
    assert len(list(host.work.glob("archive/*/new-animals.accepted.csv"))) == 1


def test_refused_key_is_mailed_with_the_exit_code_and_the_log_tail(host: Host) -> None:
    host.env_file.write_text("PETSYNC_PRODUCTION_API_KEY=wrong-key-for-cron\n")
    done = host.run("nightly-export")
    assert done.returncode == 3
    assert done.stdout == ""
    first, *tail = done.stderr.splitlines()
    assert first == (
        "petsync nightly-export failed with exit 3 (1 failure, 2 config, 3 key refused, "
        "4 incomplete, 69 petsync not found on PATH, 75 another run holds the lock, 127 flock "
        f"not found, 143 stopped); this run's lines of {host.work}/logs/nightly-export.log "
        "(the last 50 at most):"
    )
    assert '"level": "error"' in tail[-1] and '"exit_code": 3' in tail[-1]
    assert "wrong-key-for-cron" not in done.stderr
    assert "wrong-key-for-cron" not in (host.work / "logs" / "nightly-export.log").read_text()


def test_the_mail_holds_only_the_failed_runs_lines_not_the_night_before(host: Host) -> None:
    assert host.run("nightly-export").returncode == 0  # a good night: its long summary line
    before = len(log_entries(host, "nightly-export"))
    host.env_file.write_text("PETSYNC_PRODUCTION_API_KEY=wrong-key-for-cron\n")

    done = host.run("nightly-export")

    assert done.returncode == 3
    mailed = [json.loads(line) for line in done.stderr.splitlines()[1:]]
    assert mailed == log_entries(host, "nightly-export")[before:]  # exactly this run's lines
    assert not any("snapshot_path" in entry for entry in mailed)  # not last night's summary
    assert mailed[-1]["fields"]["exit_code"] == 3


def test_overlapping_run_is_skipped_and_mailed(host: Host) -> None:
    lock = host.work / "run" / "nightly-export.lock"
    with lock.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)  # the "previous night" still runs
        done = host.run("nightly-export")
    assert done.returncode == 75
    assert done.stderr.startswith("petsync nightly-export failed with exit 75 (")
    assert not (host.work / "snapshots").exists()


def test_petsync_installed_elsewhere_is_mailed_as_exit_69(host: Host) -> None:
    # `pip install` into a venv cron's PATH does not name: flock cannot run petsync.
    (host.bin / "petsync").unlink()
    done = host.run("nightly-export")
    assert done.returncode == 69
    first = done.stderr.splitlines()[0]
    assert first.startswith("petsync nightly-export failed with exit 69 (")
    assert "69 petsync not found on PATH" in first
    assert "flock: failed to execute petsync" in done.stderr  # the log tail says it too


def test_missing_env_file_is_mailed(host: Host) -> None:
    host.env_file.unlink()
    done = host.run("nightly-export")
    assert done.returncode != 0
    assert str(host.env_file) in done.stderr
