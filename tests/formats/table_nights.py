"""Two nights exported into a table (Delta or Iceberg), as the table-format tests share them."""

from __future__ import annotations

import datetime as dt
from typing import Any

from petsync.client.config import ClientConfig
from petsync.core.apikey import ApiKey
from petsync.core.models import Pet
from petsync.export.config import ExportConfig
from petsync.export.outcome import ExportReport
from petsync.export.run import run_export
from tests.export.scripted import BASE, ScriptedClient

DAY1, DAY2, DAY3 = dt.date(2026, 11, 20), dt.date(2026, 11, 21), dt.date(2026, 11, 22)
NIGHT1 = [
    Pet(1, "Rex", 10, "available"),
    Pet(2**63 - 1, "Max", -(2**63), "sold"),
    Pet(-(2**63), "Min", 2**63 - 1, None),
]
NIGHT2 = [Pet(1, "Rex", 10, "sold"), Pet(7, "Neo", 3, "pending")]


def config(out: str, table_format: str, **options: Any) -> ExportConfig:
    return ExportConfig(
        client=ClientConfig(BASE, ApiKey("k")),
        out_dir=out,
        table_format=table_format,
        **{"max_drop": 1.0, **options},
    )


def export_to(
    table_format: str, out: str, pets: list[Pet], today: dt.date, **options: Any
) -> ExportReport:
    """One night of ``pets`` exported into the table at ``out``."""
    return run_export(
        config(out, table_format, **options), client=ScriptedClient(pets), today=today
    )


def ids(pets: list[Pet]) -> list[int]:
    return sorted(p.id for p in pets)
