"""diff_snapshots on two crafted snapshots."""

from __future__ import annotations

import datetime as dt
import json
import random
from pathlib import Path

import pytest

from petsync.core.errors import InputError
from petsync.history.diff import diff_snapshots
from tests.export.published import Row, publish_snapshot

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


def _night(rng: random.Random, pets: list[Row]) -> list[Row]:
    """The next night: pets gone, new, renamed, recategorised, moved (to and from no status
    and an unknown one), in the order an export stores them (not by id)."""
    statuses = ["available", "pending", "sold", None, "lost"]
    night: list[Row] = []
    for pet_id, name, category, status in pets:
        roll = rng.random()
        if roll < 0.1:
            continue  # gone
        if roll < 0.2:
            name = name + " II"
        elif roll < 0.3:
            category = rng.randrange(-(2**63), 2**63)
        elif roll < 0.45:
            status = rng.choice(statuses)
        night.append((pet_id, name, category, status))
    night += [(rng.randrange(-(2**63), 2**63), f"new {i}", i, "sold") for i in range(20)]
    rng.shuffle(night)
    return night


@pytest.mark.parametrize("max_runs", [16, 1], ids=["runs-merged", "sorted-through-scratch"])
def test_a_diff_read_a_piece_at_a_time_finds_what_a_whole_read_finds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, max_runs: int
) -> None:
    """Pieces of a few rows, so every edge between them is crossed many times; the two
    nights are never read whole."""
    from petsync.history import diff as diff_module
    from petsync.history import id_order
    from petsync.history import night_batches as night

    monkeypatch.setattr(night, "READ_ROWS", 3)
    monkeypatch.setattr(night, "MAX_RUNS", max_runs)
    monkeypatch.setattr(id_order, "RUN_ROWS", 7)
    monkeypatch.setattr(id_order, "MERGE_ROWS", 2)
    monkeypatch.setattr(id_order, "OUT_ROWS", 5)
    rng = random.Random(34)
    first: list[Row] = [
        (rng.randrange(-(2**63), 2**63), f"pet {i}", i % 7, rng.choice(["sold", None, "lost"]))
        for i in range(300)
    ]
    publish_snapshot(tmp_path, dt.date(2026, 11, 21), first)
    publish_snapshot(tmp_path, dt.date(2026, 11, 22), _night(rng, first))

    def whole(info: object, **options: object) -> None:
        raise AssertionError("a night was read whole")

    with monkeypatch.context() as patch:
        patch.setattr(diff_module, "read_table", whole)
        streamed = diff_snapshots("2026-11-21", "2026-11-22", directory=tmp_path)
    monkeypatch.setattr(diff_module, "_keeps_columns", lambda info: True)  # as with kept fields
    read_whole = diff_snapshots("2026-11-21", "2026-11-22", directory=tmp_path)

    assert streamed.json_line(details=True) == read_whole.json_line(details=True)
    assert streamed.added == 20 and streamed.removed > 0 and streamed.renamed > 0
    assert streamed.recategorised > 0 and len(streamed.status_transitions) > 3


def test_a_snapshot_holding_an_id_twice_is_refused_naming_it(tmp_path: Path) -> None:
    publish_snapshot(tmp_path, dt.date(2026, 11, 21), [(1, "Rex", 1, "sold")])
    publish_snapshot(tmp_path, dt.date(2026, 11, 22), [(1, "Rex", 1, "sold"), (1, "Bo", 2, None)])

    with pytest.raises(InputError, match="2026-11-22 holds pet id 1 twice"):
        diff_snapshots("2026-11-21", "2026-11-22", directory=tmp_path)


def test_a_status_first_seen_late_in_the_nights_is_named_in_every_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pieces are coded as they are read: one read before a status is first seen has a
    shorter list of statuses than one read after, and both are named right."""
    from petsync.history import night_batches as night

    monkeypatch.setattr(night, "READ_ROWS", 3)
    first: list[Row] = [(i, f"pet {i}", 1, "sold") for i in range(1, 31)]
    second: list[Row] = [(1, "pet 1", 1, None), *first[1:24]]
    second += [(i, f"pet {i}", 1, "rehomed") for i in range(26, 31)]  # 25 is gone
    publish_snapshot(tmp_path, dt.date(2026, 11, 21), first)
    publish_snapshot(tmp_path, dt.date(2026, 11, 22), second)

    d = diff_snapshots("2026-11-21", "2026-11-22", directory=tmp_path)

    assert d.status_transitions == {("sold", "rehomed"): 5, ("sold", None): 1}
    assert d.transition_rows["id"].tolist() == [1, 26, 27, 28, 29, 30]
    assert d.removed_rows["id"].tolist() == [25]
