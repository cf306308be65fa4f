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


GAP = 3  # the night without a snapshot, counted from the first
FLAGGED = 5  # the night whose pet count fell too far (drop flagged)


@pytest.fixture
def history_out(tmp_path: Path) -> Path:
    """An export folder with 30 days of 60 pets and their history: 29 nights, the fourth
    day without a snapshot, the sixth drop-flagged, some incomplete."""
    out = tmp_path / "out"
    for number, (date, rows, complete) in enumerate(random_nights(7, nights=30, pets=60)):
        if number == GAP:
            continue
        drop = {"flagged": True, "reason": "the count fell by 40%"} if number == FLAGGED else None
        publish_snapshot(out, date, rows, complete=complete, drop_check=drop)
    update_history(out)
    return out
