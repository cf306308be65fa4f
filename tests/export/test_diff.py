"""diff_snapshots on two crafted snapshots."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from petsync.core.errors import InputError
from petsync.export.diff import diff_snapshots
from tests.export.published import publish_snapshot

BIG = 2**63 - 1
OLD = [
    (1, "Rex", 10, "available"),
    (2, "Tom", 10, "available"),
    (3, "Kit", 11, None),
    (4, "Bo", 12, "pending"),
    (BIG, "Max", 13, "sold"),
]
NEW = [
    (1, "Rex II", 10, "available"),  # renamed
    (2, "Tom", 10, "sold"),  # available -> sold
    (4, "Bo", 99, "pending"),  # recategorised
    (BIG, "Max", 13, None),  # sold -> no status
    (-7, "New", 1, "available"),  # added; 3 removed
]


@pytest.fixture
def snapshots(tmp_path: Path) -> Path:
    publish_snapshot(tmp_path, dt.date(2026, 11, 21), OLD)
    publish_snapshot(tmp_path, dt.date(2026, 11, 22), NEW)
    return tmp_path


def test_diff_counts_every_kind_of_change(snapshots: Path) -> None:
    d = diff_snapshots("2026-11-21", "2026-11-22", directory=snapshots)

    assert (d.added, d.removed, d.renamed, d.recategorised) == (1, 1, 1, 1)
    assert d.status_transitions == {("available", "sold"): 1, ("sold", "(none)"): 1}


def test_diff_rows_keep_exact_ids(snapshots: Path) -> None:
    d = diff_snapshots("2026-11-21", "2026-11-22", directory=snapshots)

    assert d.added_rows["id"].tolist() == [-7]
    assert d.removed_rows["id"].tolist() == [3]
    assert d.renamed_rows.to_dict(orient="records") == [
        {"id": 1, "name_old": "Rex", "name_new": "Rex II"}
    ]
    assert d.transition_rows["id"].tolist() == [2, BIG]


def test_diff_json_with_details(snapshots: Path) -> None:
    body = diff_snapshots("2026-11-21", "2026-11-22", directory=snapshots).to_json(details=True)

    assert body["status_transitions"] == [
        {"from": "available", "to": "sold", "pets": 1},
        {"from": "sold", "to": "(none)", "pets": 1},
    ]
    assert body["details"]["removed"] == [
        {"id": 3, "name": "Kit", "categoryId": 11, "status": "(none)"}
    ]
    assert body["details"]["status_transitions"][1] == {
        "id": BIG,
        "name": "Max",
        "status_old": "sold",
        "status_new": "(none)",
    }
    json.dumps(body)  # JSON-ready: no numpy or pandas scalars left


def test_diff_of_a_snapshot_with_itself_is_empty(snapshots: Path) -> None:
    d = diff_snapshots("2026-11-22", "2026-11-22", directory=snapshots)

    assert (d.added, d.removed, d.renamed, d.recategorised, d.status_transitions) == (
        0,
        0,
        0,
        0,
        {},
    )


def test_diff_by_path(snapshots: Path) -> None:
    old = snapshots / "pets" / "snapshot_date=2026-11-21"
    new = snapshots / "pets" / "snapshot_date=2026-11-22" / "pets.parquet"

    assert diff_snapshots(old, new).added == 1


def test_diff_of_a_missing_snapshot_names_it(snapshots: Path) -> None:
    with pytest.raises(InputError, match="no petsync snapshot at .*snapshot_date=2020-01-01"):
        diff_snapshots("2020-01-01", "2026-11-22", directory=snapshots)
