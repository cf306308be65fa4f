"""``petsync`` run as cron runs it: separate processes, a bare environment, signals.

Starts ``python -m petsync serve`` as a child, reads the URL it prints (bounded), runs
``python -m petsync check`` against it with an ``env -i``-like environment, stops the server
with SIGTERM (and Ctrl-C), and scans everything printed for the API key.
"""

from __future__ import annotations

import queue
import re
import secrets
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

START_TIMEOUT = 30.0
STOP_TIMEOUT = 20.0
RUN_TIMEOUT = 60.0
URL_LINE = re.compile(r"^Serving Petstore at (http://127\.0\.0\.1:\d+/v1)$")
KEY_LINE = re.compile(
    r"^Generated API key \(shown once; give it to clients as PETSYNC_API_KEY\): (\S+)$"
)


def cron_env(home: Path, **extra: str) -> dict[str, str]:
    """What cron gives a job: a short PATH, HOME, and nothing else we did not set."""
    return {"PATH": "/usr/bin:/bin", "HOME": str(home), **extra}


@dataclass
class ServerProcess:
    """A ``petsync serve`` child whose stdout lines are read by a thread into a queue."""

    proc: subprocess.Popen[str]
    lines: queue.Queue[str | None] = field(default_factory=queue.Queue)
    seen: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def wait_for(self, pattern: re.Pattern[str]) -> re.Match[str]:
        deadline = time.monotonic() + START_TIMEOUT
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                break
            if line is None:
                break
            self.seen.append(line)
            if match := pattern.match(line):
                return match
        raise AssertionError(f"server never printed {pattern.pattern!r}; saw {self.seen}")

    def stop(self, sig: signal.Signals) -> tuple[int, str, str]:
        """Send ``sig``, wait (bounded) and return exit code, the rest of stdout, stderr."""
        self.proc.send_signal(sig)
        code = self.proc.wait(STOP_TIMEOUT)
        rest: list[str] = []
        while (line := self.lines.get(timeout=STOP_TIMEOUT)) is not None:
            rest.append(line)
        assert self.proc.stderr is not None
        return code, "\n".join(self.seen + rest), self.proc.stderr.read()


Spawn = Callable[..., ServerProcess]


@pytest.fixture
def spawn(tmp_path: Path) -> Iterator[Spawn]:
    started: list[ServerProcess] = []

    def run(*args: str, env: dict[str, str]) -> ServerProcess:
        proc = subprocess.Popen(
            [sys.executable, "-m", "petsync", "serve", "--port", "0", *args],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        server = ServerProcess(proc)
        started.append(server)
        return server

    yield run
    for server in started:
        if server.proc.poll() is None:
            server.proc.kill()
            server.proc.wait(STOP_TIMEOUT)
        for stream in (server.proc.stdout, server.proc.stderr):
            if stream is not None:
                stream.close()


def petsync(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "petsync", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )


def write_key(path: Path, key: str) -> Path:
    path.write_text(key + "\n")
    path.chmod(0o600)
    return path


def test_check_runs_like_cron_against_a_served_petstore_and_the_key_never_shows(
    spawn: Spawn, tmp_path: Path
) -> None:
    key = "cron-key-" + secrets.token_hex(12)
    key_file = write_key(tmp_path / "server.key", key)
    db = tmp_path / "pets.db"
    server = spawn(
        "--api-key-file",
        str(key_file),
        "--db",
        str(db),
        "--seed-pets",
        "25",
        env=cron_env(tmp_path),
    )
    url = server.wait_for(URL_LINE).group(1)

    ok = petsync(
        "check",
        "--api-key-file",
        str(key_file),
        cwd=tmp_path,
        env=cron_env(tmp_path, PETSYNC_BASE_URL=url),
    )
    assert ok.returncode == 0, ok.stderr
    assert f"base URL:     {url}\n" in ok.stdout
    assert "key accepted: yes\n" in ok.stdout
    assert "pagination:   link\n" in ok.stdout
    assert re.search(r"^round trip:   \d+ ms$", ok.stdout, re.MULTILINE)

    wrong = write_key(tmp_path / "wrong.key", "wrong-" + secrets.token_hex(12))
    refused = petsync(
        "check",
        "--api-key-file",
        str(wrong),
        cwd=tmp_path,
        env=cron_env(tmp_path, PETSYNC_BASE_URL=url),
    )
    assert refused.returncode == 3
    assert url in refused.stderr

    code, server_out, server_err = server.stop(signal.SIGTERM)
    assert code == 0, server_err
    assert server_out.splitlines()[-1] == "Stopped."
    # Stopped cleanly: the database is closed (WAL folded back) and holds every pet.
    assert not Path(f"{db}-wal").exists()
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM pets").fetchone() == (25,)
    conn.close()

    printed = [ok.stdout, ok.stderr, refused.stdout, refused.stderr, server_out, server_err]
    for text in printed:
        assert key not in text
        assert wrong.read_text().strip() not in text


def test_serve_with_no_key_generates_one_and_prints_it_exactly_once(
    spawn: Spawn, tmp_path: Path
) -> None:
    server = spawn("--seed-pets", "3", env=cron_env(tmp_path))
    key = server.wait_for(KEY_LINE).group(1)
    url = server.wait_for(URL_LINE).group(1)
    assert len(key) >= 32

    ok = petsync(
        "check", cwd=tmp_path, env=cron_env(tmp_path, PETSYNC_BASE_URL=url, PETSYNC_API_KEY=key)
    )
    assert ok.returncode == 0, ok.stderr
    assert key not in ok.stdout + ok.stderr

    code, server_out, server_err = server.stop(signal.SIGINT)  # Ctrl-C
    assert code == 0, server_err
    assert server_out.count(key) == 1
    assert key not in server_err


def test_serve_takes_the_key_from_the_environment_and_never_prints_it(
    spawn: Spawn, tmp_path: Path
) -> None:
    key = "env-key-" + secrets.token_hex(12)
    server = spawn(
        "--latency-ms",
        "1",
        "--fail-after-store-rate",
        "0.5",
        "--fault-seed",
        "3",
        env=cron_env(tmp_path, PETSYNC_API_KEY=key),
    )
    url = server.wait_for(URL_LINE).group(1)
    assert "Injected faults: latency-ms 1, fail-after-store-rate 0.5 (seed 3)" in server.seen
    fetched = petsync(
        "get",
        "1",
        cwd=tmp_path,
        env=cron_env(tmp_path, PETSYNC_BASE_URL=url, PETSYNC_API_KEY=key),
    )
    assert fetched.returncode == 1  # empty catalogue: 404
    assert fetched.stderr.endswith(
        f"Error: GET {url}/pets/1 answered HTTP 404, not_found: no pet with id '1'\n"
    )
    code, server_out, server_err = server.stop(signal.SIGTERM)
    assert code == 0
    assert "Generated API key" not in server_out
    for text in (fetched.stdout, fetched.stderr, server_out, server_err):
        assert key not in text
