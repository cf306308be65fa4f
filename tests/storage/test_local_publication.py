"""Publication: staged snapshots renamed into place, same-day replacement, pruning, cleanup."""

from __future__ import annotations

import ctypes.util
import datetime as dt
from pathlib import Path

import pytest

from petsync.formats.snapshots import list_snapshots, load_snapshot
from petsync.storage.layout import MANIFEST_NAME, PARQUET_NAME, STAGING_DIR, partition_path
from petsync.storage.local_publication import StagedSnapshot, clean_staging, prune_snapshots
from tests.export.published import publish_snapshot

DAY1, DAY2, DAY3 = dt.date(2026, 11, 20), dt.date(2026, 11, 21), dt.date(2026, 11, 22)


def publish(directory: Path, date: dt.date, ids: list[int]) -> Path:
    return publish_snapshot(directory, date, [(i, f"pet{i}", 1, "sold") for i in ids])


def test_publish_moves_the_staged_snapshot_into_its_dated_partition(tmp_path: Path) -> None:
    path = publish(tmp_path, DAY1, [1, 2])

    assert path == tmp_path / "pets" / "snapshot_date=2026-11-20"
    assert sorted(p.name for p in path.iterdir()) == [MANIFEST_NAME, PARQUET_NAME]
    assert list((tmp_path / STAGING_DIR).iterdir()) == []


@pytest.mark.parametrize("renameat2", [True, False], ids=["renameat2", "two-renames"])
def test_publish_on_the_same_date_replaces_the_snapshot_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, renameat2: bool
) -> None:
    publish(tmp_path, DAY1, [1, 2])
    looked_up: list[str] = []
    if not renameat2:

        def no_libc(name: str) -> None:
            looked_up.append(name)

        monkeypatch.setattr(ctypes.util, "find_library", no_libc)

    publish(tmp_path, DAY1, [3])

    assert load_snapshot(tmp_path)["id"].tolist() == [3]
    assert list((tmp_path / STAGING_DIR).iterdir()) == []
    assert looked_up == ([] if renameat2 else ["c"])  # the fallback really ran


def test_discard_removes_the_staged_files(tmp_path: Path) -> None:
    staged = StagedSnapshot.create(tmp_path)
    staged.write_text(MANIFEST_NAME, "{}")

    staged.discard()

    assert list((tmp_path / STAGING_DIR).iterdir()) == []
    assert list_snapshots(tmp_path) == []


def test_scratch_files_lie_in_the_staging_area_so_cleanup_finds_them(tmp_path: Path) -> None:
    staged = StagedSnapshot.create(tmp_path)
    scratch = staged.scratch(".rows.arrow")
    scratch.write_bytes(b"rows of a killed run")

    clean_staging(tmp_path)

    assert scratch.parent == tmp_path / STAGING_DIR
    assert not scratch.exists()
    assert not staged.path.exists()


def test_prune_keeps_the_newest(tmp_path: Path) -> None:
    for day in (DAY1, DAY2, DAY3):
        publish(tmp_path, day, [1])

    removed = prune_snapshots(tmp_path, keep=1)

    assert removed == [partition_path(tmp_path, DAY1), partition_path(tmp_path, DAY2)]
    assert [s.date for s in list_snapshots(tmp_path)] == [DAY3]
    assert list((tmp_path / STAGING_DIR).iterdir()) == []


def test_prune_refuses_to_keep_nothing(tmp_path: Path) -> None:
    publish(tmp_path, DAY1, [1])

    with pytest.raises(ValueError, match="keep must be at least 1"):
        prune_snapshots(tmp_path, keep=0)

    assert [s.date for s in list_snapshots(tmp_path)] == [DAY1]


def test_clean_staging_removes_leftovers(tmp_path: Path) -> None:
    (tmp_path / STAGING_DIR / "a").mkdir(parents=True)
    (tmp_path / STAGING_DIR / "b.tmp").write_text("x")

    removed = clean_staging(tmp_path)

    assert sorted(p.name for p in removed) == ["a", "b.tmp"]
    assert list((tmp_path / STAGING_DIR).iterdir()) == []
