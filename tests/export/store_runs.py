"""The catalogue and the export call of the object-store tests (every store, and S3 alone)."""

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

CATALOGUE = [
    Pet(1, "Rex", 10, "available"),
    Pet(2, "Tom, the cat", 11, "pending"),
    Pet(4, "No status", 13, None),
    Pet(2**63 - 1, "=SUM(A1)", -(2**63), "available"),
    Pet(-(2**63), "line\nbreak 🐈", 2**63 - 1, "sold"),
]
IDS = sorted(p.id for p in CATALOGUE)


def export(
    out: str,
    client: ScriptedClient,
    *,
    today: dt.date = DAY2,
    now: dt.datetime | None = None,
    **options: Any,
) -> ExportReport:
    """One export of ``client``'s catalogue to ``out`` (the API key ``k-secret-123``)."""
    config = ExportConfig(client=ClientConfig(BASE, ApiKey("k-secret-123")), out_dir=out, **options)
    clock = (lambda: now) if now is not None else None
    return run_export(config, client=client, today=today, now=clock)
