"""The report tests' fixtures: a history of random nights, and one bundle cache per session."""

from __future__ import annotations

from pathlib import Path

import pytest

from petsync.history.update import update_history
from tests.export.published import publish_snapshot
from tests.history.nights import random_nights


@pytest.fixture(scope="session")
def bundle_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the report keeps Vega's bundled JavaScript: bundled once per test session."""
    return tmp_path_factory.mktemp("bundle-cache")


@pytest.fixture
def history_out(tmp_path: Path) -> Path:
    """An export folder with 30 nights of 60 pets (some incomplete) and their history."""
    out = tmp_path / "out"
    for date, rows, complete in random_nights(7, nights=30, pets=60):
        publish_snapshot(out, date, rows, complete=complete)
    update_history(out)
    return out
