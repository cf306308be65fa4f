"""Every benchmark script imports and answers --help: a script that imports a name the harness
no longer has fails here, not on the day someone wants its numbers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
SCRIPTS = sorted(p.name for p in BENCHMARKS.glob("bench_*.py"))


def test_the_benchmark_scripts_are_found() -> None:
    assert {"bench_export.py", "bench_import.py", "bench_storage.py"} <= set(SCRIPTS)


@pytest.mark.parametrize("script", SCRIPTS)
def test_each_benchmark_script_answers_help(script: str) -> None:
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: ")
