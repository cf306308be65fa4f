"""The demo: a seeded reference server exported in-process, stopped like any export."""

from __future__ import annotations

from pathlib import Path

import pytest

from petsync.core.errors import ExitCode, StoppedError
from petsync.core.stop import StopRequest
from petsync.demo import run_demo
from petsync.export.snapshot import list_snapshots


def test_the_demo_exports_the_seeded_catalogue(tmp_path: Path) -> None:
    result = run_demo(tmp_path / "demo", 120)
    assert (result.export.pets, result.export.complete) == (120, True)
    assert [s.pets for s in list_snapshots(tmp_path / "demo")] == [120]


def test_a_stopped_demo_publishes_nothing_and_exits_with_the_signal(tmp_path: Path) -> None:
    stop = StopRequest()
    stop.request("SIGINT received", signal_number=2)
    with pytest.raises(StoppedError) as caught:
        run_demo(tmp_path / "demo", 120, stop=stop)
    assert caught.value.exit_code is ExitCode.INTERRUPTED
    assert list_snapshots(tmp_path / "demo") == []
