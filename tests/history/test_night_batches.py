"""A night's pets handed to the history in id order, in bounded pieces, whatever their order."""

from __future__ import annotations

import datetime as dt
import itertools
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

import petsync.history.id_order as id_order
import petsync.history.night_batches as night
from petsync.core.errors import InputError
from petsync.formats.schema import PET_SCHEMA
from petsync.formats.snapshots import list_snapshots
from petsync.history.id_order import SPILL_NAME, in_id_order
from petsync.history.night_batches import night_pieces
from petsync.history.update import update_history
from petsync.storage.layout import PARQUET_NAME, SnapshotInfo
from tests.export.published import Row, publish_snapshot
from tests.history.nights import START, random_nights

STATUSES = ["sold", "pending", "available", None]


@pytest.fixture
def small(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reads, runs, merges and pieces of a few rows: every edge is crossed many times."""
    monkeypatch.setattr(night, "READ_ROWS", 3)
    monkeypatch.setattr(id_order, "RUN_ROWS", 7)
    monkeypatch.setattr(id_order, "MERGE_ROWS", 2)
    monkeypatch.setattr(id_order, "OUT_ROWS", 5)


def batches(ids: list[int], size: int) -> list[pa.RecordBatch]:
    table = pa.table({"id": pa.array(ids, pa.int64()), "n": pa.array(ids, pa.int64())})
    return table.to_batches(size)


def rows_of(pieces: object) -> list[tuple[int, ...]]:
    out = []
    for piece in pieces:  # type: ignore[attr-defined]
        out += [tuple(row.values()) for row in piece.to_pylist()]
    return out


def publish_in_row_groups(out: Path, date: dt.date, rows: list[Row], group: int) -> SnapshotInfo:
    """A snapshot whose file holds ``rows`` in the order given, in row groups of ``group``."""
    folder = publish_snapshot(out, date, rows)
    table = pa.Table.from_pylist(
        [dict(zip(("id", "name", "categoryId", "status"), r, strict=True)) for r in rows],
        schema=PET_SCHEMA,
    )
    pq.write_table(table, folder / PARQUET_NAME, row_group_size=group)
    return next(info for info in list_snapshots(out) if info.date == date)


def test_rows_in_any_order_come_out_in_id_order_through_spilled_runs(
    tmp_path: Path, small: None
) -> None:
    ids = random.Random(1).sample(range(-50, 1000), 200)
    seen: list[bool] = []

    pieces = in_id_order(batches(ids, 11), tmp_path)
    out = []
    for piece in pieces:
        seen.append((tmp_path / SPILL_NAME).exists())
        out += piece.column("id").to_pylist()

    assert out == sorted(ids)
    assert all(seen)  # 200 rows in runs of 7: spilled, then merged


def test_rows_that_fit_one_run_never_touch_the_scratch_folder(tmp_path: Path) -> None:
    pieces = list(in_id_order(batches([5, 3, 9, 1], 2), tmp_path))

    assert [i for p in pieces for i in p.column("id").to_pylist()] == [1, 3, 5, 9]
    assert list(tmp_path.iterdir()) == []


def test_equal_ids_come_out_side_by_side_across_runs(tmp_path: Path, small: None) -> None:
    ids = [*range(30), 12, *range(30, 40)]  # 12 twice, in two runs

    out = [i for p in in_id_order(batches(ids, 4), tmp_path) for i in p.column("id").to_pylist()]

    assert out == sorted(ids)


@pytest.mark.parametrize("max_runs", [16, 1], ids=["side-by-side", "spilled"])
def test_a_night_of_listings_comes_out_in_id_order(
    tmp_path: Path, small: None, monkeypatch: pytest.MonkeyPatch, max_runs: int
) -> None:
    """Listing after listing, each in id order (as an export stores them): read by one
    reader per listing, or (past MAX_RUNS) sorted through the scratch folder."""
    monkeypatch.setattr(night, "MAX_RUNS", max_runs)
    pets: list[Row] = [(i, f"p{i}", i % 3, ["sold", None, "available"][i % 3]) for i in range(60)]
    stored = sorted(pets, key=lambda r: (str(r[3]), r[0]))  # runs by status
    info = publish_in_row_groups(tmp_path, START, stored, group=4)

    with night_pieces(info) as pieces:
        out = rows_of(pieces)

    assert out == pets


def test_a_night_side_by_side_writes_no_scratch_folder(
    tmp_path: Path, small: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_scratch(*args: object, **kwargs: object) -> None:
        raise AssertionError("a night of few runs needs no scratch folder")

    monkeypatch.setattr(night.tempfile, "TemporaryDirectory", no_scratch)
    stored: list[Row] = [(i, "a", 1, "sold") for i in range(0, 40, 2)]
    stored += [(i, "b", 1, None) for i in range(1, 40, 2)]
    info = publish_in_row_groups(tmp_path, START, stored, group=6)

    with night_pieces(info) as pieces:
        out = [row[0] for row in rows_of(pieces)]

    assert out == list(range(40))


def test_a_night_holding_an_id_twice_is_refused_naming_it(tmp_path: Path, small: None) -> None:
    rows: list[Row] = [(i, "a", 1, "sold") for i in range(20)] + [(7, "b", 1, None)]
    publish_in_row_groups(tmp_path, START, rows, group=5)

    with pytest.raises(InputError) as caught:
        update_history(tmp_path)

    assert str(caught.value) == (
        "the snapshot of 2026-01-01 holds pet id 7 twice; a petsync snapshot holds each id "
        "once: export it again"
    )


@pytest.mark.parametrize("max_runs", [16, 1], ids=["side-by-side", "spilled"])
def test_nights_in_an_exports_order_fold_into_the_same_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, max_runs: int
) -> None:
    """Stored listing by listing, or interleaved in pages, in pieces of a few rows: the
    table equals the one folded from nights read whole."""
    from petsync.history.load import load_history

    whole, pieces = tmp_path / "whole", tmp_path / "pieces"
    rng = random.Random(max_runs)
    for date, rows, complete in random_nights(8, nights=8, pets=60):
        publish_snapshot(whole, date, rows, complete=complete)
        update_history(whole)
        listings = [[r for r in rows if r[3] == status] for status in STATUSES]
        if rng.random() < 0.5:  # listing after listing
            stored = [row for listing in listings for row in listing]
        else:  # pages of 4 from each listing in turn, as concurrent listings store them
            pages = [[lst[i : i + 4] for i in range(0, len(lst), 4)] for lst in listings]
            stored = [
                r for turn in itertools.zip_longest(*pages, fillvalue=[]) for p in turn for r in p
            ]
        folder = publish_snapshot(pieces, date, stored, complete=complete)
        table = pa.Table.from_pylist(
            [dict(zip(("id", "name", "categoryId", "status"), r, strict=True)) for r in stored],
            schema=PET_SCHEMA,
        )
        pq.write_table(table, folder / PARQUET_NAME, row_group_size=5)
        with monkeypatch.context() as patch:
            patch.setattr(night, "READ_ROWS", 3)
            patch.setattr(night, "MAX_RUNS", max_runs)
            patch.setattr(id_order, "RUN_ROWS", 7)
            patch.setattr(id_order, "MERGE_ROWS", 2)
            patch.setattr(id_order, "OUT_ROWS", 5)
            update_history(pieces)

    assert load_history(pieces).equals(load_history(whole))


def test_an_object_replaced_while_it_was_read_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "pets.parquet"
    path.write_bytes(b"first")
    info = SnapshotInfo(START, tmp_path, {"complete": True})
    check = night._unchanged_check(info, pafs.LocalFileSystem(), str(path))

    check()  # unchanged: nothing to say
    path.write_bytes(b"second, longer")

    with pytest.raises(InputError, match="was replaced while it was read; run the history again"):
        check()
