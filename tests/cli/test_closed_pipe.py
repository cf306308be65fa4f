"""``petsync ... | head -1``: a reader that leaves early ends petsync quietly, as other tools.

A pipe whose read end is closed before petsync starts makes its first write fail (EPIPE),
every time: no race with a reader, no delay. The shell pipeline runs as written in the docs.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

RUN_TIMEOUT = 60.0
JOB = '[export]\nout = "snapshots"\n'


def environment(home: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "PETSYNC_BASE_URL": "http://127.0.0.1:9/v1",
        "PETSYNC_API_KEY": "closed-pipe-key",
    }


@pytest.mark.parametrize(
    "args",
    [
        ["run", "--check", "job.toml"],
        ["run", "--check", "job.toml", "job.toml"],
        ["--help"],
        ["config", "show", "--json"],
    ],
    ids=["run-check", "two-jobs", "help", "config-show"],
)
def test_a_closed_stdout_ends_quietly(tmp_path: Path, args: list[str]) -> None:
    (tmp_path / "job.toml").write_text(JOB, encoding="utf-8")
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader has gone before the first line
    try:
        done = subprocess.run(
            [sys.executable, "-m", "petsync", *args],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
            env=environment(tmp_path),
            timeout=RUN_TIMEOUT,
            check=False,
        )
    finally:
        os.close(write_end)

    assert done.stderr == ""  # no "internal error", no traceback, no "Exception ignored"
    assert done.returncode == 1


def test_run_check_piped_into_head_shows_its_lines_and_nothing_else(tmp_path: Path) -> None:
    (tmp_path / "job.toml").write_text(JOB, encoding="utf-8")

    done = subprocess.run(
        ["/bin/sh", "-c", f"{sys.executable} -m petsync run --check job.toml | head -3"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=environment(tmp_path),
        timeout=RUN_TIMEOUT,
        check=False,
    )

    assert done.returncode == 0
    assert done.stderr == ""
    lines = done.stdout.splitlines()
    assert lines[0] == "job.toml: export job 'job' is valid"
    assert len(lines) == 3
