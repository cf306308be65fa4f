"""The commands that move a catalogue's columns run Arrow on malloc, unless the user chose."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.export.published import publish_snapshot

DAY1, DAY2 = dt.date(2026, 11, 21), dt.date(2026, 11, 22)

# Runs the command in a fresh interpreter (pyarrow not loaded yet), then says which pool
# Arrow used: the pool is fixed when it is first asked for, so what the command set before
# loading pyarrow is what its allocations went through.
_PROBE = """
import sys
from petsync.cli.main import cli
try:
    cli(sys.argv[1:], standalone_mode=False)
except SystemExit:
    pass
loaded = "pyarrow" in sys.modules
import pyarrow
print(loaded, pyarrow.default_memory_pool().backend_name)
"""


def _pool_seen_by(args: list[str], environ: dict[str, str]) -> tuple[str, str]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *args],
        capture_output=True,
        text=True,
        env=environ,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    loaded, pool = done.stdout.split()[-2:]
    return loaded, pool


@pytest.fixture
def history_dir(tmp_path: Path) -> Path:
    publish_snapshot(tmp_path, DAY1, [(1, "Rex", 1, "available"), (2, "Tom", 1, None)])
    publish_snapshot(tmp_path, DAY2, [(1, "Rex", 1, "sold")])
    return tmp_path


def _environ(**changes: str) -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    return environ | changes


@pytest.mark.parametrize("command", ["history", "report"])
def test_history_and_report_allocate_with_malloc(history_dir: Path, command: str) -> None:
    if command == "report":
        _pool_seen_by(["history", str(history_dir)], _environ())

    loaded, pool = _pool_seen_by([command, str(history_dir)], _environ())

    assert (loaded, pool) == ("True", "system")


def test_a_pool_the_user_chose_is_kept(history_dir: Path) -> None:
    loaded, pool = _pool_seen_by(
        ["history", str(history_dir)], _environ(ARROW_DEFAULT_MEMORY_POOL="jemalloc")
    )

    assert (loaded, pool) == ("True", "jemalloc")


def test_diff_keeps_arrows_default(history_dir: Path) -> None:
    loaded, pool = _pool_seen_by(
        ["diff", DAY1.isoformat(), DAY2.isoformat(), "--dir", str(history_dir)], _environ()
    )

    assert loaded == "True"
    assert pool != "system"
