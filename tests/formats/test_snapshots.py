"""Snapshot layout, read side: listing, resolving and loading published snapshots."""

from __future__ import annotations

import datetime as dt
import warnings
from pathlib import Path

import pytest

from petsync.core.errors import InputError
from petsync.formats.snapshots import (
    FlaggedSnapshotWarning,
    find_snapshot,
    latest_snapshot,
    list_snapshots,
    load_snapshot,
)
from petsync.storage.layout import partition_path
from tests.export.published import publish_snapshot

DAY1, DAY2, DAY3 = dt.date(2026, 11, 20), dt.date(2026, 11, 21), dt.date(2026, 11, 22)


def publish(
    directory: Path,
    date: dt.date,
    ids: list[int],
    *,
    complete: bool = True,
    drop_check: dict[str, object] | None = None,
) -> Path:
    rows = [(i, f"pet{i}", 1, "sold") for i in ids]
    return publish_snapshot(directory, date, rows, complete=complete, drop_check=drop_check)


def test_list_snapshots_is_oldest_first_and_skips_foreign_directories(tmp_path: Path) -> None:
    publish(tmp_path, DAY2, [1])
    publish(tmp_path, DAY1, [1, 2])
    (tmp_path / "pets" / "snapshot_date=2026-11-23").mkdir()  # no manifest: not a snapshot
    (tmp_path / "pets" / "other").mkdir()

    found = list_snapshots(tmp_path)

    assert [(s.date, s.pets, s.complete) for s in found] == [(DAY1, 2, True), (DAY2, 1, True)]


def test_list_snapshots_of_a_missing_directory_is_empty(tmp_path: Path) -> None:
    assert list_snapshots(tmp_path / "nothing") == []


def test_latest_snapshot_skips_incomplete_ones_unless_asked(tmp_path: Path) -> None:
    publish(tmp_path, DAY1, [1])
    publish(tmp_path, DAY2, [1], complete=False)

    latest = latest_snapshot(tmp_path)
    any_latest = latest_snapshot(tmp_path, complete_only=False)

    assert latest is not None and latest.date == DAY1
    assert any_latest is not None and any_latest.date == DAY2


@pytest.mark.parametrize(
    "ref",
    [
        "2026-11-21",
        "DIR/pets/snapshot_date=2026-11-21",
        "DIR/pets/snapshot_date=2026-11-21/pets.parquet",
    ],
    ids=["date", "partition-dir", "parquet-file"],
)
def test_find_snapshot_by_date_or_path(tmp_path: Path, ref: str) -> None:
    publish(tmp_path, DAY2, [1])

    info = find_snapshot(ref.replace("DIR", str(tmp_path)), directory=tmp_path)

    assert info.date == DAY2
    assert info.path == partition_path(tmp_path, DAY2)


def test_find_snapshot_names_what_is_missing(tmp_path: Path) -> None:
    with pytest.raises(InputError) as caught:
        find_snapshot("2026-01-01", directory=tmp_path)

    assert str(caught.value) == (
        f"no petsync snapshot at {tmp_path}/pets/snapshot_date=2026-01-01 (expected a "
        "snapshot_date=YYYY-MM-DD directory holding _manifest.json and pets.parquet of the "
        "same run); an export with out_dir=DIR writes them under DIR/pets"
    )


def test_load_snapshot_defaults_to_the_latest_complete(tmp_path: Path) -> None:
    publish(tmp_path, DAY1, [1, 2])
    publish(tmp_path, DAY2, [3], complete=False)

    frame = load_snapshot(tmp_path)

    assert frame["id"].tolist() == [1, 2]
    assert frame.attrs["snapshot_date"] == "2026-11-20"
    assert frame.attrs["manifest"] == {"complete": True, "pets": 2}


def test_load_snapshot_by_date_loads_an_incomplete_one_with_a_warning(tmp_path: Path) -> None:
    publish(tmp_path, DAY1, [1, 2])
    publish(tmp_path, DAY2, [3], complete=False)

    with pytest.warns(FlaggedSnapshotWarning) as caught:
        frame = load_snapshot(tmp_path, "2026-11-21")

    assert frame["id"].tolist() == [3] and frame.attrs["trusted"] is False
    assert str(caught[0].message) == (
        "the snapshot of 2026-11-21 is flagged, not to be trusted blindly: incomplete: "
        "complete is not true (load_snapshot(..., flagged=True) loads it without this warning)"
    )


def test_load_snapshot_flagged_true_asks_for_flagged_ones_without_a_warning(
    tmp_path: Path,
) -> None:
    publish(tmp_path, DAY1, [1, 2])
    publish(tmp_path, DAY2, [3], complete=False)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        latest = load_snapshot(tmp_path, flagged=True)
        by_date = load_snapshot(tmp_path, DAY2, flagged=True)

    assert latest["id"].tolist() == [3] and by_date["id"].tolist() == [3]


def test_load_snapshot_skips_a_drop_flagged_snapshot_by_default(tmp_path: Path) -> None:
    publish(tmp_path, DAY1, [1, 2])
    publish(tmp_path, DAY2, [3], drop_check={"flagged": True, "reason": "fell by 50%"})

    frame = load_snapshot(tmp_path)
    with pytest.warns(FlaggedSnapshotWarning, match="suspicious drop: fell by 50%"):
        flagged = load_snapshot(tmp_path, DAY2)

    assert frame.attrs["snapshot_date"] == "2026-11-20" and frame.attrs["trusted"] is True
    assert flagged["id"].tolist() == [3]
    assert [s.trusted for s in list_snapshots(tmp_path)] == [True, False]


def test_load_snapshot_without_a_trusted_one_says_what_to_do(tmp_path: Path) -> None:
    publish(tmp_path, DAY1, [1], complete=False)

    with pytest.raises(InputError) as caught:
        load_snapshot(tmp_path)

    assert str(caught.value) == (
        f"no trusted snapshot under {tmp_path}/pets; run an export with out_dir='{tmp_path}' "
        "first, or pass flagged=True to load a flagged one"
    )


def test_load_snapshot_dtypes(tmp_path: Path) -> None:
    publish(tmp_path, DAY1, [2**63 - 1, -(2**63)])

    frame = load_snapshot(tmp_path)

    assert frame.dtypes.astype(str).to_dict() == {
        "id": "Int64",
        "name": "string",
        "categoryId": "Int64",
        "status": "category",
    }
    assert frame["id"].tolist() == [-(2**63), 2**63 - 1]  # exact, and ordered by id
