"""The README's Python lines run exactly as written against a real demo export."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from petsync.demo import duckdb_line, pandas_line, run_demo

README = Path(__file__).resolve().parents[2] / "README.md"
PYTHON_BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def readme_blocks() -> list[str]:
    """Every ```python block of the README that works on the demo's output."""
    blocks = PYTHON_BLOCK.findall(README.read_text(encoding="utf-8"))
    return [b for b in blocks if "petsync-demo" in b]


@pytest.fixture
def demo_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    run_demo(Path("petsync-demo"), 150)
    return tmp_path


def test_readme_shows_the_demo_loading_lines_verbatim() -> None:
    blocks = [b.strip() for b in readme_blocks()]

    assert pandas_line(Path("petsync-demo")) in blocks
    assert duckdb_line(Path("petsync-demo")) in blocks


def test_pandas_line_reads_every_snapshot_with_its_date(demo_dir: Path) -> None:
    namespace: dict[str, Any] = {}

    exec(pandas_line(Path("petsync-demo")), namespace)

    frame = namespace["df"]
    assert len(frame) == 150
    assert list(frame.columns) == ["id", "name", "categoryId", "status", "snapshot_date"]
    assert str(frame["id"].dtype) == "int64"


def test_duckdb_line_queries_every_snapshot(
    demo_dir: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    exec(duckdb_line(Path("petsync-demo")), {})

    shown = capfd.readouterr().out
    assert "snapshot_date" in shown and "available" in shown and "NULL" in shown


def test_every_readme_block_on_the_demo_output_runs(
    demo_dir: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    namespace: dict[str, Any] = {}
    blocks = readme_blocks()
    assert len(blocks) >= 4  # pandas, DuckDB, CSV reading, library use

    for block in blocks:
        exec(block, namespace)

    csv_rows = sorted(namespace["csv_table"].to_pylist(), key=lambda row: row["id"])
    frame = namespace["df"]  # the library block's load_snapshot() frame
    assert [r["id"] for r in csv_rows] == frame["id"].tolist()
    assert [r["status"] for r in csv_rows] == [
        None if s != s else s for s in frame["status"].astype(object).tolist()
    ]
    assert namespace["d"].added == 0
