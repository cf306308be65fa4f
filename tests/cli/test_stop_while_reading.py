"""One SIGTERM ends an import while it is still reading its input, within the grace.

Hashing and decoding a large spreadsheet (CSV or workbook) is a long read before any row is
sent; each chunk's read looks at the stop request (petsync.core.reading), so a scheduler's
SIGTERM ends the run there with 143 instead of after the whole file. The test waits until
the process has the file open (its /proc fd table), never for a fixed time, and bounds
every wait.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

TIMEOUT = 60.0
ROOT = Path(__file__).resolve().parents[2]  # the checkout under test, first on the path


def has_open(pid: int, path: Path) -> bool:
    """Whether process ``pid`` holds ``path`` open (Linux: its fd table in /proc)."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == str(path):
                return True
        except OSError:
            continue
    return False


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs Linux's /proc")
@pytest.mark.parametrize("name", ["big.csv", "big.xlsx"], ids=["csv", "workbook"])
def test_sigterm_while_the_input_is_hashed_ends_the_run_at_once(tmp_path: Path, name: str) -> None:
    # A workbook is hashed whole before any reader looks at it: the same one chunk applies.
    big = tmp_path / name
    with big.open("wb") as handle:  # sparse: 2 GiB of NULs that cost no disk
        handle.write(b"name,categoryId\n")
        handle.truncate(2 << 30)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "PYTHONPATH": str(ROOT),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "petsync", "import", str(big), "--dry-run", "--grace", "2"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + TIMEOUT
        while not has_open(proc.pid, big):
            assert proc.poll() is None, f"petsync ended ({proc.returncode}) before reading"
            assert time.monotonic() < deadline, "timed out waiting for petsync to open the file"
            time.sleep(0.005)  # a poll interval, not a wait for the outcome
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=TIMEOUT)

    assert proc.returncode == 143, stderr
    assert "SIGTERM received: stopping" in stderr
    assert f"reading spreadsheet {big} was stopped by SIGTERM" in stderr
