"""Every ```python block of the README and docs/ runs as written, and does what it says.

A block is one of three kinds, told apart by what it names:

* a demo block names ``petsync-demo``: it runs on a real ``petsync demo`` export in the
  working directory, exactly as written;
* an API block names the example API, ``https://petstore.example.com/v1``: it is meant for a
  real API and key, so it runs against a live reference server, with that URL replaced by
  the server's, ``key_from_your_vault`` bound to the server's key, and ``/srv/petsync`` made
  a folder of the working directory; nothing else changes;
* an S3 block names the example bucket, ``s3://archive/``: it runs against moto's S3 server
  on loopback (the ``s3`` fixture sets the AWS variables, the endpoint included), with that
  bucket replaced by the test's, which holds a Parquet export at ``petsync`` and a Delta
  table of two nights at ``petsync-delta``; nothing else changes;
* any other block must run offline as written (the reference server's own example).

Lines that cannot run offline (DuckDB's httpfs and delta extensions are downloads, Spark a
cluster) stay in ``text`` blocks, and the page says they are not run.

The blocks of a page run in order in one namespace, as in a notebook; then the page's check
asserts on what they made.
"""

from __future__ import annotations

import datetime as dt
import re
import secrets
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import petsync
from petsync.core.apikey import ApiKey
from petsync.demo import duckdb_line, pandas_line, run_demo
from petsync.server.runner import RunningServer
from tests.conftest import S3Bucket, StartServer
from tests.docs.history_check import check_history

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
SHELL_BLOCK = re.compile(r"^```sh\n(.*?)^```", re.S | re.M)

DEMO_DIR = "petsync-demo"
DEMO_PETS = 150
API_URL = "https://petstore.example.com/v1"
API_OUT = "/srv/petsync"
SERVER_PETS = 40
NEW_PETS_CSV = "name,categoryId,status\nRex,1,available\nMia,2,\nBo,3,SOLD\n"


S3_BUCKET = "s3://archive/"
S3_NIGHTS = (dt.date(2026, 11, 21), dt.date(2026, 11, 22))


def python_blocks(page: Path) -> list[str]:
    return PYTHON_BLOCK.findall(page.read_text(encoding="utf-8"))


def run_demo_shell_lines(page: Path, cwd: Path) -> None:
    """Run the page's :func:`demo_shell_lines` in ``cwd``, with this Python's petsync."""
    for line in demo_shell_lines(page):
        command = re.sub(r"(^|&& )petsync ", rf"\1{sys.executable} -m petsync ", line)
        done = subprocess.run(
            command, shell=True, cwd=cwd, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, (page.name, line, done.stderr)


def demo_shell_lines(page: Path) -> list[str]:
    """The ```sh lines that run petsync on the demo's folder (``petsync history
    petsync-demo``...), which the page's Python blocks may read the result of."""
    blocks = SHELL_BLOCK.findall(page.read_text(encoding="utf-8"))
    return [
        line
        for block in blocks
        for line in block.splitlines()
        if line.startswith("petsync ") and DEMO_DIR in line
    ]


def is_demo(block: str) -> bool:
    return DEMO_DIR in block


def is_api(block: str) -> bool:
    return API_URL in block


def is_s3(block: str) -> bool:
    return S3_BUCKET in block


@dataclass
class Workplace:
    """The working directory the blocks run in: a demo export, a live server, a spreadsheet."""

    path: Path
    server: RunningServer
    key: str
    bucket: S3Bucket | None = None

    def run_page(self, page: Path) -> dict[str, Any]:
        run_demo_shell_lines(page, self.path)  # first, as a reader would: `petsync history`
        namespace: dict[str, Any] = {}
        for number, block in enumerate(python_blocks(page), start=1):
            source = block
            if is_s3(block):
                assert self.bucket is not None, f"{page.name}: an S3 block and no bucket"
                source = block.replace(S3_BUCKET, f"s3://{self.bucket.name}/")
            if is_api(block):
                source = block.replace(API_URL, self.server.base_url).replace(
                    API_OUT, "srv-petsync"
                )
                namespace["key_from_your_vault"] = self.key
            exec(compile(source, f"{page.name}, python block {number}", "exec"), namespace)
        return namespace


@pytest.fixture
def workplace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, petstore_server: StartServer
) -> Workplace:
    monkeypatch.chdir(tmp_path)
    run_demo(Path(DEMO_DIR), DEMO_PETS)
    key = "docs-key-" + secrets.token_hex(8)
    server = petstore_server(api_key=ApiKey(key), seed_pets=SERVER_PETS)
    (tmp_path / "new-pets.csv").write_text(NEW_PETS_CSV, encoding="utf-8")
    return Workplace(tmp_path, server, key)


def fill_bucket(workplace: Workplace, bucket: S3Bucket) -> None:
    """What the S3 blocks read: an export of the server, and a Delta table of two nights."""
    from petsync.client.config import ClientConfig
    from petsync.export.config import ExportConfig
    from petsync.export.run import run_export

    client = ClientConfig(workplace.server.base_url, ApiKey(workplace.key))
    run_export(ExportConfig(client=client, out_dir=bucket.uri("petsync")), today=S3_NIGHTS[1])
    delta = ExportConfig(client=client, out_dir=bucket.uri("petsync-delta"), table_format="delta")
    for night in S3_NIGHTS:
        run_export(delta, today=night)
    workplace.bucket = bucket


def nulls_as_none(values: list[Any]) -> list[Any]:
    """None for every kind of missing value (None, NaN, pd.NA), so columns compare as lists."""
    return [None if pd.isna(value) else value for value in values]


# -- what each page's blocks must have made ------------------------------------------------


def check_readme(ns: dict[str, Any], shown: str) -> None:
    frame = ns["df"]  # load_snapshot() replaced the loading line's frame
    snapshots = ns["snapshots"]
    assert len(frame) == snapshots[-1].pets and str(frame["id"].dtype) == "Int64"
    assert frame.attrs["snapshot_date"] == snapshots[-1].date.isoformat()
    assert len(ns["first"]) == DEMO_PETS  # the demo's first night: the seeded catalogue
    assert len(snapshots) == 7 and ns["d"].added > 0 and ns["d"].removed > 0  # a week moved
    week = ns["week"]
    assert str(week["snapshot_date"].dtype) == "datetime64[ns]"
    assert len(week) == sum(s.pets for s in snapshots)
    assert "snapshot_date" in shown and "available" in shown  # the DuckDB table
    assert len(ns["moves"]) > 0 and "sold" in shown  # transitions, after `petsync history`


def check_export(ns: dict[str, Any], shown: str) -> None:
    frame = petsync.load_snapshot(DEMO_DIR)
    ids = frame["id"].tolist()
    names = frame["name"].tolist()
    statuses = nulls_as_none(frame["status"].astype(object).tolist())
    assert None in statuses  # the demo has pets without status: the null rule is exercised

    by_id = sorted(ns["csv_table"].to_pylist(), key=lambda row: row["id"])
    assert [r["id"] for r in by_id] == ids
    assert [r["name"] for r in by_id] == names
    assert [r["status"] for r in by_id] == statuses

    duck = sorted(ns["csv_relation"].fetchall())
    assert [row[0] for row in duck] == ids
    assert [row[1] for row in duck] == names
    assert [row[3] for row in duck] == statuses

    pandas_csv = ns["csv_frame"].sort_values("id")
    assert str(pandas_csv["id"].dtype) == "Int64"
    assert pandas_csv["name"].tolist() == names
    assert nulls_as_none(pandas_csv["status"].tolist()) == statuses


def check_notebooks(ns: dict[str, Any], shown: str) -> None:
    frame = ns["df"]  # load_snapshot() replaced the loading line's frame
    assert frame.attrs["snapshot_date"] == ns["snapshots"][-1].date.isoformat()
    assert len(frame) == ns["snapshots"][-1].pets and str(frame["id"].dtype) == "Int64"
    assert "snapshot_date" in shown and "available" in shown  # the DuckDB table
    # The S3 blocks: the Parquet export read three ways, the Delta table four.
    assert len(ns["pets"]) == SERVER_PETS and "snapshot_date" in ns["pets"].columns
    assert ns["table"].num_rows == SERVER_PETS
    assert len(ns["latest"]) == SERVER_PETS and str(ns["latest"]["id"].dtype) == "Int64"
    assert sorted(ns["pets"]["id"].tolist()) == ns["latest"]["id"].tolist()
    assert ns["frame"].attrs["snapshot_date"] == "2026-11-22"
    assert ns["first"].attrs["snapshot_date"] == "2026-11-21"
    assert ns["first"].attrs["manifest"]["table_version"] == 0
    assert sorted(ns["night"]["id"].tolist()) == ns["frame"]["id"].tolist()
    assert ns["everything"].height == 2 * SERVER_PETS
    exported = petsync.list_snapshots("srv-petsync")
    assert [(s.complete, s.pets) for s in exported] == [(True, SERVER_PETS)]
    imported = ns["report"]  # the import's report, after the export's
    assert (imported.created, imported.rejected, imported.uncertain) == (3, 0, 0)
    assert imported.exit_code == 0
    assert (Path("new-pets.accepted.csv")).is_file()
    again = ns["again"]  # the same file from another folder: found in the API's home
    assert (again.created, again.already_created, again.exit_code) == (0, 3, 0)


def check_server(ns: dict[str, Any], shown: str) -> None:
    assert re.search(r"^http://127\.0\.0\.1:\d+/v1 250$", shown, re.M)


def check_orchestration(ns: dict[str, Any], shown: str) -> None:
    import dagster as dg

    defs = ns["defs"]
    keys = {key.to_user_string() for key in defs.resolve_all_asset_keys()}
    assert keys == {"nightly_export_snapshot", "nightly_export_history"}
    assert defs.resolve_schedule_def("nightly_export_schedule").cron_schedule == "30 2 * * *"
    assert isinstance(ns["PetsyncTarget"](api_key_file="k"), dg.ConfigurableResource)


CHECKS: dict[str, Callable[[dict[str, Any], str], None]] = {
    "README.md": check_readme,
    "export.md": check_export,
    "notebooks.md": check_notebooks,
    "orchestration.md": check_orchestration,
    "server.md": check_server,
    "history.md": lambda ns, shown: check_history(ns, shown, DEMO_PETS),
}


# -- tests ---------------------------------------------------------------------------------


@pytest.mark.parametrize("page", [README, ROOT / "docs" / "notebooks.md"], ids=lambda p: p.name)
def test_page_shows_the_demo_loading_lines_verbatim(page: Path) -> None:
    blocks = [block.strip() for block in python_blocks(page)]

    assert pandas_line(Path(DEMO_DIR)) in blocks
    assert duckdb_line(Path(DEMO_DIR)) in blocks


def test_pandas_line_reads_every_snapshot_with_its_date(workplace: Workplace) -> None:
    namespace: dict[str, Any] = {}

    exec(pandas_line(Path(DEMO_DIR)), namespace)

    frame = namespace["df"]
    assert len(frame) == sum(s.pets for s in petsync.list_snapshots(DEMO_DIR))
    assert list(frame.columns) == ["snapshot_date", "id", "name", "categoryId", "status"]
    assert str(frame["id"].dtype) == "Int64"
    assert str(frame["snapshot_date"].dtype) == "datetime64[ns]"
    assert len(frame[frame.snapshot_date > "2026-01-01"]) == len(frame)  # dates compare


def test_duckdb_line_queries_every_snapshot(
    workplace: Workplace, capfd: pytest.CaptureFixture[str]
) -> None:
    exec(duckdb_line(Path(DEMO_DIR)), {})

    shown = capfd.readouterr().out
    assert "snapshot_date" in shown and "available" in shown and "NULL" in shown


def test_every_page_with_python_blocks_has_a_check() -> None:
    pages = {page.name for page in PAGES if python_blocks(page)}

    assert pages == set(CHECKS)


def test_s3_blocks_are_neither_demo_nor_api_blocks() -> None:
    found = 0
    for page in PAGES:
        for block in python_blocks(page):
            if is_s3(block):
                found += 1
                assert not is_demo(block) and not is_api(block), f"{page.name}: a mixed block"
    assert found >= 2  # the Parquet readers and the Delta readers of notebooks.md


def test_api_blocks_are_not_demo_blocks() -> None:
    for page in PAGES:
        for block in python_blocks(page):
            if is_api(block):
                assert not is_demo(block), f"{page.name}: a block mixes the demo and the API"
                assert "key_from_your_vault" in block, f"{page.name}: an API block without a key"


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_python_blocks_of_the_page_run_and_do_what_they_say(
    name: str,
    workplace: Workplace,
    capfd: pytest.CaptureFixture[str],
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    page = README if name == "README.md" else ROOT / "docs" / name
    if any(is_s3(block) for block in python_blocks(page)):
        bucket = request.getfixturevalue("s3")  # the AWS variables, moto's endpoint
        monkeypatch.setenv("AWS_ALLOW_HTTP", "true")  # delta-rs, to moto's http:// endpoint
        fill_bucket(workplace, bucket)

    if any("jobs/nightly-export.toml" in block for block in python_blocks(page)):
        shutil.copytree(ROOT / "jobs", workplace.path / "jobs")  # the working directory cron uses
    namespace = workplace.run_page(page)

    CHECKS[name](namespace, capfd.readouterr().out)
