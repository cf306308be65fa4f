"""What the Python blocks of docs/history.md must have made (the demo's week, folded)."""

from __future__ import annotations

from typing import Any


def check_history(ns: dict[str, Any], shown: str, demo_pets: int) -> None:
    import petsync

    latest = petsync.list_snapshots("petsync-demo")[-1].pets
    report = ns["report"]
    assert len(report.nights) == 7 and report.current == latest  # the demo's week, folded
    assert report.versions == len(ns["versions"]) > demo_pets  # pets changed: more versions
    assert len(ns["catalogue"]) == latest  # as_of the last night: its snapshot
    assert len(ns["moves"]) > 0  # statuses changed in the week
    assert list(ns["moves"].columns) == [
        "id",
        "name",
        "from_status",
        "to_status",
        "since",
        "changed_on",
        "days",
    ]
    assert len(ns["history"]) == report.versions  # pandas read the folder as one table
    assert ns["current"].height == latest  # polars: the current versions
    assert "status" in shown and "pets" in shown  # DuckDB's table
    # The S3 blocks: the Parquet export of the bucket (one night), the Delta table (two).
    assert ns["on_s3"].versions == len(ns["remote"]) == ns["on_s3"].current > 0
    assert str(ns["on_s3"].path).endswith("/petsync/history")
    assert [n.opened for n in ns["delta_history"].nights][0] == ns["on_s3"].versions
    assert len(ns["delta_history"].nights) == 2
