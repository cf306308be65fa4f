"""What the Python blocks of docs/history.md must have made (one demo night, folded)."""

from __future__ import annotations

from typing import Any


def check_history(ns: dict[str, Any], shown: str, demo_pets: int) -> None:
    assert ns["report"].versions == demo_pets and ns["report"].current == demo_pets
    assert len(ns["versions"]) == len(ns["catalogue"]) == demo_pets
    assert list(ns["moves"].columns) == [
        "id",
        "name",
        "from_status",
        "to_status",
        "since",
        "changed_on",
        "days",
    ]
    assert len(ns["history"]) == demo_pets  # pandas read the folder as one table
    assert ns["current"].height == demo_pets  # polars: every version is current
    assert "status" in shown and "pets" in shown  # DuckDB's table
    # The S3 blocks: the Parquet export of the bucket (one night), the Delta table (two).
    assert ns["on_s3"].versions == len(ns["remote"]) == ns["on_s3"].current > 0
    assert str(ns["on_s3"].path).endswith("/petsync/history")
    assert [n.opened for n in ns["delta_history"].nights][0] == ns["on_s3"].versions
    assert len(ns["delta_history"].nights) == 2
