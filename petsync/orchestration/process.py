"""One job file run as a ``petsync run`` child process, stoppable as cron's would be.

An orchestrator runs petsync the way cron does, so the job file stays the one configuration
and every exit code and signal keeps its meaning: the child is ``python -m petsync --log-format
json --log-level info run --json JOBFILE``, its stderr (JSON log lines) is handed
line by line to the caller, its stdout is the command's one-line JSON summary. If the caller is
interrupted while the child runs (Dagster cancelling a run raises in the op), the child gets
SIGTERM, which makes it stop after the requests in flight and publish nothing, and the
interruption goes on once the child has exited.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from petsync.core.apikey import redact
from petsync.core.errors import ExitCode
from petsync.core.stop import DEFAULT_GRACE_SECONDS

# After SIGTERM the child has its grace period for requests in flight, then this long to
# clean up and exit, before it is killed.
CLEANUP_SECONDS = 30.0
# The summary is one JSON line of a few kilobytes; more than this on stdout is not petsync's.
MAX_SUMMARY_BYTES = 16 * 1024 * 1024
LOG_TAIL_LINES = 20


@dataclass(frozen=True)
class JobProcess:
    """How a job's child process ended: its exit code, its JSON summary and its last lines."""

    exit_code: int
    summary: dict[str, Any] | None
    log_tail: tuple[str, ...] = field(default=())

    @property
    def stopped(self) -> bool:
        """It ended on SIGTERM or Ctrl-C (exit 143 or 130)."""
        return self.exit_code in (int(ExitCode.TERMINATED), int(ExitCode.INTERRUPTED))

    def error_message(self) -> str:
        """The child's last error line (its message names the fix), else its exit code."""
        for line in reversed(self.log_tail):
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict) and event.get("level") == "error":
                return redact(str(event.get("message", line)))
        return f"petsync exited {self.exit_code}"


def job_command(
    jobfile: Path,
    overrides: Mapping[str, str] | None = None,
    *,
    api_key_file: Path | None = None,
    python: str = sys.executable,
) -> list[str]:
    """The child's command line; it never holds a key, only a key file's path.

    >>> job_command(Path("jobs/nightly.toml"), {"keep": "7"}, python="python")[6:]
    ['info', 'run', '--json', '--set', 'keep=7', 'jobs/nightly.toml']
    """
    command = [python, "-m", "petsync", "--log-format", "json", "--log-level", "info"]
    command += ["run", "--json"]
    for key, value in (overrides or {}).items():
        command += ["--set", f"{key}={value}"]
    if api_key_file is not None:
        command += ["--api-key-file", str(api_key_file)]
    return [*command, str(jobfile)]


def run_job(
    command: Sequence[str],
    *,
    cwd: Path | None = None,
    environ: Mapping[str, str] | None = None,
    on_line: Callable[[str], None] | None = None,
    grace_seconds: float = DEFAULT_GRACE_SECONDS,
) -> JobProcess:
    """Run a :func:`job_command` to its end; stop it with SIGTERM if this thread is interrupted.

    ``environ`` is the child's whole environment (default: this process's): the place for the
    API key. ``on_line`` gets each stderr line as it comes, from a reader thread.
    """
    tail: deque[str] = deque(maxlen=LOG_TAIL_LINES)
    out: list[str] = []
    with subprocess.Popen(
        list(command),
        cwd=cwd,
        env=dict(os.environ if environ is None else environ),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        errors="replace",
    ) as child:
        readers = [
            threading.Thread(target=_read_lines, args=(child.stderr, tail, on_line), daemon=True),
            threading.Thread(target=_read_summary, args=(child.stdout, out), daemon=True),
        ]
        for reader in readers:
            reader.start()
        try:
            code = child.wait()
        except BaseException:
            # Cancelled: the child stops as under cron's `timeout` or systemd, then we go on.
            _stop(child, grace_seconds)
            raise
        finally:
            for reader in readers:
                reader.join(timeout=CLEANUP_SECONDS)
    return JobProcess(code, _parse_summary("".join(out)), tuple(tail))


def _stop(child: subprocess.Popen[str], grace_seconds: float) -> None:
    if child.poll() is not None:
        return
    child.send_signal(signal.SIGTERM)
    try:
        child.wait(timeout=grace_seconds + CLEANUP_SECONDS)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()


def _read_lines(stream: Any, tail: deque[str], on_line: Callable[[str], None] | None) -> None:
    for raw in stream:
        line = raw.rstrip("\n")
        tail.append(line)
        if on_line is not None:
            on_line(line)


def _read_summary(stream: Any, out: list[str]) -> None:
    size = 0
    for line in stream:
        size += len(line)
        if size <= MAX_SUMMARY_BYTES:
            out.append(line)


def _parse_summary(text: str) -> dict[str, Any] | None:
    for line in reversed(text.splitlines()):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None
