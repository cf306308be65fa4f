"""The demo: a seeded reference server in-process, one export of it, and how to load it.

``petsync demo`` is the README's first command: it needs no server, no key and no network
beyond 127.0.0.1, and shows the whole path from the API to a DataFrame.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path

from petsync.client.config import ClientConfig
from petsync.core.apikey import ApiKey
from petsync.core.stop import StopRequest
from petsync.export.config import ExportConfig
from petsync.export.fetch import ExportProgress
from petsync.export.report import ExportReport
from petsync.export.run import run_export

DEFAULT_DEMO_PETS = 10_000
DEFAULT_DEMO_DIR = Path("petsync-demo")


@dataclass(frozen=True)
class DemoReport:
    """The export's report plus the lines that load the result in pandas and DuckDB."""

    export: ExportReport
    out_dir: Path

    @property
    def pandas_line(self) -> str:
        return pandas_line(self.out_dir)

    @property
    def duckdb_line(self) -> str:
        return duckdb_line(self.out_dir)


def pandas_line(out_dir: Path) -> str:
    """The one line that reads every snapshot under ``out_dir`` into pandas."""
    return f'import pandas as pd; df = pd.read_parquet("{out_dir.as_posix()}/pets")'


def duckdb_line(out_dir: Path) -> str:
    """The one line that queries every snapshot under ``out_dir`` with DuckDB."""
    return (
        'import duckdb; duckdb.sql("SELECT snapshot_date, status, count(*) AS pets FROM '
        f"read_parquet('{out_dir.as_posix()}/pets/*/*.parquet', hive_partitioning=true) "
        'GROUP BY ALL ORDER BY ALL").show()'
    )


def run_demo(
    out_dir: Path = DEFAULT_DEMO_DIR,
    pets: int = DEFAULT_DEMO_PETS,
    *,
    progress: ExportProgress | None = None,
    stop: StopRequest | None = None,
    extra_fields: bool = False,
) -> DemoReport:
    """Start a reference server seeded with ``pets`` pets, export it into ``out_dir``.

    ``stop`` (a signal) ends the export as it ends any: nothing published. With
    ``extra_fields`` the server sends fields beyond the interface's
    (:mod:`petsync.server.extra_fields`) and the export keeps them as columns.
    """
    from petsync.server.app import ServerConfig
    from petsync.server.faults import Faults
    from petsync.server.runner import start_server

    key = ApiKey("demo-" + secrets.token_urlsafe(16))
    faults = Faults(extra_fields=extra_fields)
    with start_server(ServerConfig(api_key=key, seed_pets=pets, faults=faults)) as server:
        config = ExportConfig(
            client=ClientConfig(server.base_url, server.api_key),
            out_dir=out_dir,
            # Each demo seeds a fresh catalogue, so a smaller --pets than last time is no
            # outage: only an empty export is worth flagging here.
            max_drop=1.0,
            extra_fields="keep" if extra_fields else "drop",
        )
        report = run_export(config, progress=progress, stop=stop)
    return DemoReport(export=report, out_dir=out_dir)
