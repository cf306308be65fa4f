"""The history beside a Delta or Iceberg table equals the one beside dated partitions.

The history on object stores is tests/history/test_object_stores.py.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from petsync.client.config import ClientConfig
from petsync.core.apikey import ApiKey
from petsync.core.models import Pet
from petsync.export.config import ExportConfig
from petsync.export.run import run_export
from petsync.formats.snapshots import list_snapshots
from petsync.history.load import load_history, read_history_state
from petsync.history.table import Night
from petsync.history.update import update_history
from tests.export.scripted import BASE, ScriptedClient
from tests.history.nights import random_nights


def export(out: str, pets: list[Pet], today: dt.date, **options: Any) -> None:
    config = ExportConfig(
        client=ClientConfig(BASE, ApiKey("k")), out_dir=out, max_drop=1.0, **options
    )
    run_export(config, client=ScriptedClient(pets), today=today)


def catalogues() -> list[tuple[dt.date, list[Pet]]]:
    out = []
    for date, rows, complete in random_nights(6, nights=5, pets=20):
        if complete:  # an export of a scripted catalogue is complete
            out.append(
                (date, [Pet(i, name, category, status) for i, name, category, status in rows])
            )
    return out


def without_run_ids(nights: tuple[Night, ...]) -> list[Night]:
    return [dataclasses.replace(night, run_id=None) for night in nights]


@pytest.mark.parametrize("table_format", ["delta", "iceberg"])
def test_history_beside_a_table_format_equals_the_one_beside_partitions(
    tmp_path: Path, table_format: str
) -> None:
    table, hive = str(tmp_path / table_format), str(tmp_path / "hive")
    for date, pets in catalogues():
        export(table, pets, date, table_format=table_format)
        export(hive, pets, date)
        update_history(table)  # one night at a time
    update_history(hive)

    assert load_history(table).equals(load_history(hive))
    assert [n.date for n in read_history_state(table).nights] == [d for d, _ in catalogues()]
    rebuilt = update_history(table, rebuild=True)
    assert without_run_ids(rebuilt.nights) == without_run_ids(read_history_state(hive).nights)
    assert load_history(table).equals(load_history(hive))


@pytest.mark.parametrize("table_format", ["delta", "iceberg"])
def test_a_table_night_is_streamed_into_id_order_not_read_whole(
    tmp_path: Path, table_format: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from petsync.formats.registry import format_of_manifest
    from petsync.history import id_order
    from petsync.history.night_batches import night_pieces

    out = str(tmp_path / table_format)
    pets = [Pet(pet_id, f"p{pet_id}", pet_id % 5, "sold") for pet_id in range(400, 0, -1)]
    export(out, pets, dt.date(2026, 3, 1), table_format=table_format)
    (info,) = list_snapshots(out)
    kind = format_of_manifest(info.manifest)
    whole = kind.read_night(info, known_only=True).select(["id", "name", "categoryId", "status"])

    def refused(*args: object, **kwargs: object) -> None:
        raise AssertionError("the history read a table's night whole")

    monkeypatch.setattr(type(kind), "read_night", refused)
    monkeypatch.setattr(id_order, "RUN_ROWS", 64)  # sorted runs spilled and merged
    scanned: list[int] = []
    night_batches = kind.night_batches

    def counted(info: Any) -> Any:
        for piece in night_batches(info):
            scanned.append(piece.num_rows)
            yield piece

    monkeypatch.setattr(kind, "night_batches", counted)
    if table_format == "delta":  # Iceberg's reader hands on a data file at a time
        monkeypatch.setattr("petsync.formats.delta.SCAN_ROWS", 50)
    with night_pieces(info) as pieces:
        streamed = list(pieces)

    assert sum(scanned) == 400
    assert max(scanned) == (50 if table_format == "delta" else 400)
    table = pa.concat_tables(streamed)
    assert table.column("id").to_pylist() == list(range(1, 401))
    assert table.column("status").cast(pa.string()).equals(whole.column("status"))
    assert table.column("name").equals(whole.column("name"))
