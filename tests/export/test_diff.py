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
    assert d.status_transitions == {("available", "sold"): 1, ("sold", None): 1}


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
        {"from": "sold", "to": None, "pets": 1},
    ]
    assert body["details"]["removed"] == [
        {"id": 3, "name": "Kit", "categoryId": 11, "status": None}
    ]
    assert body["details"]["status_transitions"][1] == {
        "id": BIG,
        "name": "Max",
        "status_old": "sold",
        "status_new": None,
    }
    json.dumps(body)  # JSON-ready: no numpy or pandas scalars left


def test_diff_json_line_is_one_line_with_null_for_no_status(snapshots: Path) -> None:
    line = diff_snapshots("2026-11-21", "2026-11-22", directory=snapshots).json_line()

    assert "\n" not in line
    assert json.loads(line)["status_transitions"][1] == {"from": "sold", "to": None, "pets": 1}


def test_a_status_that_appears_is_a_transition_from_none(tmp_path: Path) -> None:
    publish_snapshot(tmp_path, dt.date(2026, 11, 21), [(1, "Rex", 1, None), (2, "Mo", 1, None)])
    publish_snapshot(tmp_path, dt.date(2026, 11, 22), [(1, "Rex", 1, "sold"), (2, "Mo", 1, None)])

    d = diff_snapshots("2026-11-21", "2026-11-22", directory=tmp_path)

    assert d.status_transitions == {(None, "sold"): 1}
    assert d.transition_rows["id"].tolist() == [1]


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


def test_the_diff_says_which_side_is_flagged(tmp_path: Path) -> None:
    from petsync.cli.render import diff_lines

    publish_snapshot(tmp_path, dt.date(2026, 11, 21), OLD)
    publish_snapshot(tmp_path, dt.date(2026, 11, 22), NEW, complete=False)

    d = diff_snapshots("2026-11-21", "2026-11-22", directory=tmp_path)

    assert (d.to_json()["old"]["trusted"], d.to_json()["new"]["trusted"]) == (True, False)
    assert diff_lines(d, details=False)[0] == (
        f"from 2026-11-21 ({tmp_path}/pets/snapshot_date=2026-11-21) to 2026-11-22 "
        f"({tmp_path}/pets/snapshot_date=2026-11-22, flagged: incomplete)"
    )
