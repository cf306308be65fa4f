"""The documented readers over a folder holding a trusted, an incomplete and a drop-flagged
snapshot give the documented answer: the trusted night only, and petsync's own readers
name the flagged ones.

The README's and docs/notebooks.md's Python blocks that read ``petsync-demo`` run as
written, in a working directory whose ``petsync-demo`` holds those three snapshots.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

import petsync
from petsync.client.config import ClientConfig
from petsync.core.apikey import ApiKey
from petsync.core.errors import ExitCode
from petsync.core.models import Pet
from petsync.export.config import ExportConfig
from petsync.export.run import run_export
from tests.docs.test_code_blocks import (
    DEMO_DIR,
    README,
    ROOT,
    is_demo,
    python_blocks,
    run_demo_shell_lines,
)
from tests.export.scripted import BASE, ScriptedClient

TRUSTED, INCOMPLETE, DROPPED = dt.date(2026, 11, 20), dt.date(2026, 11, 21), dt.date(2026, 11, 22)
CATALOGUE = [Pet(i, f"pet{i}", i % 3, ("available", "sold", None)[i % 3]) for i in range(1, 11)]
NOTEBOOKS = ROOT / "docs" / "notebooks.md"


@pytest.fixture
def three_nights(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``petsync-demo`` with a trusted night, an incomplete one and a suspicious drop."""
    monkeypatch.chdir(tmp_path)
    config = ExportConfig(client=ClientConfig(BASE, ApiKey("k")), out_dir=Path(DEMO_DIR))
    nights = [
        (TRUSTED, ScriptedClient(CATALOGUE)),
        (INCOMPLETE, ScriptedClient(CATALOGUE, incomplete={"sold": "the end was not proven"})),
        (DROPPED, ScriptedClient(CATALOGUE[:2])),
    ]
    codes = [run_export(config, client=client, today=day).exit_code for day, client in nights]
    assert codes == [ExitCode.OK, ExitCode.INCOMPLETE, ExitCode.INCOMPLETE]
    return tmp_path / DEMO_DIR


def run_demo_blocks(page: Path) -> dict[str, Any]:
    run_demo_shell_lines(page, Path.cwd())  # `petsync history petsync-demo`, as in the page
    namespace: dict[str, Any] = {}
    for number, block in enumerate(python_blocks(page), start=1):
        if is_demo(block):
            exec(compile(block, f"{page.name}, python block {number}", "exec"), namespace)
    return namespace


def test_the_readme_lines_read_the_trusted_night_only(
    three_nights: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    first: dict[str, Any] = {}
    blocks = [b for b in python_blocks(README) if is_demo(b)]
    exec(blocks[0], first)  # the pandas line (the notebook block reuses its name, df)

    namespace = run_demo_blocks(README)  # no warning: filterwarnings=error would fail it

    shown = capfd.readouterr().out
    assert set(first["df"]["snapshot_date"].astype(str)) == {TRUSTED.isoformat()}
    assert len(first["df"]) == len(CATALOGUE)
    assert TRUSTED.isoformat() in shown  # DuckDB's table
    assert INCOMPLETE.isoformat() not in shown.split("{")[0]  # before the notebook's prints
    assert DROPPED.isoformat() not in shown.split("{")[0]
    assert namespace["pets_pl"]["snapshot_date"].unique().to_list() == [TRUSTED]
    assert namespace["pets_pl"].height == len(CATALOGUE)
    frame = namespace["df"]
    assert frame.attrs["snapshot_date"] == TRUSTED.isoformat() and frame.attrs["trusted"]
    assert [(s.date, s.trusted) for s in namespace["snapshots"]] == [
        (TRUSTED, True),
        (INCOMPLETE, False),
        (DROPPED, False),
    ]


def test_the_notebooks_page_reads_the_trusted_night_only(
    three_nights: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    namespace = run_demo_blocks(NOTEBOOKS)

    duckdb_table = capfd.readouterr().out.split("{")[0]
    assert TRUSTED.isoformat() in duckdb_table
    assert INCOMPLETE.isoformat() not in duckdb_table
    assert DROPPED.isoformat() not in duckdb_table
    assert namespace["pets_pl"]["snapshot_date"].unique().to_list() == [TRUSTED]
    assert namespace["df"].attrs["snapshot_date"] == TRUSTED.isoformat()


def test_loading_a_flagged_night_warns_and_flagged_true_asks_for_it(three_nights: Path) -> None:
    with pytest.warns(petsync.FlaggedSnapshotWarning) as caught:
        dropped = petsync.load_snapshot(DEMO_DIR, "2026-11-22")
    latest = petsync.load_snapshot(DEMO_DIR, flagged=True)

    assert "suspicious drop: the pet count fell by 80.0%" in str(caught[0].message)
    assert dropped["id"].tolist() == [1, 2] and dropped.attrs["trusted"] is False
    assert latest.attrs["snapshot_date"] == DROPPED.isoformat()
    incomplete = petsync.list_snapshots(DEMO_DIR)[1]
    assert incomplete.flag_reasons == ["incomplete: listing 'sold': the end was not proven"]


def test_the_export_pages_csv_glob_finds_the_trusted_night(three_nights: Path) -> None:
    namespace = run_demo_blocks(ROOT / "docs" / "export.md")

    assert f"snapshot_date={TRUSTED.isoformat()}" in namespace["path"]
    assert namespace["csv_table"].num_rows == len(CATALOGUE)
