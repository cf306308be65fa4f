"""--keep never prunes tonight's snapshot, and leaves one dated after tonight (a night whose
clock ran ahead) alone: in a hive directory, a Delta table and an Iceberg table alike."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from petsync.client.config import ClientConfig
from petsync.core.apikey import ApiKey
from petsync.core.models import Pet
from petsync.export.config import ExportConfig
from petsync.export.outcome import ExportReport
from petsync.export.run import run_export
from petsync.formats.snapshots import list_snapshots
from tests.export.scripted import BASE, ScriptedClient
from tests.formats.table_nights import DAY1, DAY2, DAY3, NIGHT1, NIGHT2

FUTURE = DAY3 + dt.timedelta(days=400)


def export(out: str, pets: list[Pet], today: dt.date, **options: Any) -> ExportReport:
    config = ExportConfig(client=ClientConfig(BASE, ApiKey("k")), out_dir=out, **options)
    return run_export(config, client=ScriptedClient(pets), today=today)


@pytest.mark.parametrize("table_format", ["hive", "delta", "iceberg"])
def test_keep_counts_only_nights_up_to_tonight(tmp_path: Path, table_format: str) -> None:
    out = str(tmp_path / "out")
    for day in (DAY1, FUTURE, DAY2):
        export(out, NIGHT1, day, table_format=table_format)

    report = export(out, NIGHT2, DAY3, keep=1, table_format=table_format, max_drop=1.0)

    assert [s.date for s in list_snapshots(out)] == [DAY3, FUTURE]
    assert len(report.pruned) == 2  # DAY1 and DAY2; tonight and the future night stay
    assert report.later_snapshots == (FUTURE,)
    assert report.drop.previous_date == DAY2  # the newest before tonight, not the future
