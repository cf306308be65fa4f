"""A tiny memory budget gives the answers of an unlimited one: what does not fit is spilled.

The catalogue below has repeats inside a listing, a pet that moved status, a sweep that sees
other versions, pets only the sweep sees, and loops; with a budget of one byte every record
of ids seen and every deduplication key goes to the scratch directory, and the snapshot, the
manifest's counts and the loop errors must not change.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from petsync.client.client import PetstoreClient
from petsync.client.config import ClientConfig
from petsync.core.apikey import ApiKey
from petsync.core.errors import PaginationError
from petsync.export.config import ExportConfig
from petsync.export.run import run_export
from petsync.storage.layout import PARQUET_NAME
from tests.export.test_run import DAY2

BASE = "http://127.0.0.1:9/v1"
PAGE = 3
TINY = 1
UNLIMITED = 2**40


def pet(i: int, status: str | None, name: str | None = None) -> dict[str, Any]:
    record: dict[str, Any] = {"id": i, "name": name or f"pet {i}", "categoryId": i % 4}
    if status is not None:
        record["status"] = status
    return record


def catalogue() -> dict[str | None, list[dict[str, Any]]]:
    available = [pet(i, "available") for i in range(1, 21)]
    available.insert(4, pet(2, "available"))  # a repeat inside the listing: dropped
    sold = [pet(i, "sold") for i in range(21, 31)] + [pet(5, "sold", "moved")]  # churn
    pending = [pet(i, "pending") for i in range(40, 30, -1)]  # not in id order
    sweep = [pet(i, None if i % 10 == 3 else "available") for i in range(1, 21)]
    sweep += [pet(i, "sold") for i in range(21, 31)] + [pet(i, "pending") for i in range(31, 41)]
    sweep[6] = pet(7, "available", "renamed during the run")  # the sweep sees a newer version
    sweep[4] = pet(5, "sold", "moved")
    sweep += [pet(41, None), pet(42, "lost")]
    return {"available": available, "sold": sold, "pending": pending, None: sweep}


Listings = dict[str | None, list[dict[str, Any]]]


def handler(listings: Listings, loop: str | None = None) -> Callable[[httpx.Request], Any]:
    """Link paging over ``listings``; ``loop`` makes that listing's third page link back."""

    def handle(request: httpx.Request) -> httpx.Response:
        status = request.url.params.get("status")
        position = int(request.url.params.get("pos", "0"))
        records = listings[status]
        page = records[position : position + PAGE]
        headers = {}
        if position + PAGE < len(records):
            looping = loop is not None and status == loop and position >= 2 * PAGE
            following = PAGE if looping else position + PAGE
            query = f"limit={PAGE}" + (f"&status={status}" if status else "")
            headers["Link"] = f'</v1/pets?{query}&pos={following}>; rel="next"'
        return httpx.Response(200, json=page, headers=headers)

    return handle


def export(tmp_path: Path, name: str, budget: int, listings: Listings, loop: str | None = None):
    transport = httpx.MockTransport(handler(listings, loop))
    config = ExportConfig(
        client=ClientConfig(BASE, ApiKey("k"), pagination="link"),
        out_dir=tmp_path / name,
        page_limit=PAGE,
        concurrency=1,  # one listing after another: "latest fetch" is the same in both runs
        memory_budget=budget,
    )
    with PetstoreClient(config.client, transport=transport) as client:
        return run_export(config, client=client, today=DAY2)


COUNTS = (
    "pets",
    "by_status",
    "no_status",
    "unknown_status",
    "rows_fetched",
    "seen_under_two_statuses",
    "conflicting_duplicates",
    "status_mismatches",
    "quarantined",
    "pages",
    "requests",
)


def test_a_tiny_budget_gives_the_snapshot_and_counts_of_an_unlimited_one(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    answers = []
    for name, budget in (("tiny", TINY), ("unlimited", UNLIMITED)):
        report = export(tmp_path, name, budget, catalogue())
        assert report.snapshot_path is not None
        rows = pq.read_table(report.snapshot_path / PARQUET_NAME).sort_by("id").to_pylist()
        manifest = report.manifest
        dropped = [r["duplicates_dropped"] for r in manifest["listings"]]
        answers.append((rows, {key: manifest[key] for key in COUNTS}, dropped))
        if budget == TINY:
            assert manifest["scratch_bytes"] > 0
            assert sum(r.scratch_bytes for r in report.listings) > 0  # ids seen, on disk
    tiny, unlimited = answers
    assert tiny == unlimited
    rows, counts, dropped = tiny
    by_id = {row["id"]: row for row in rows}
    assert len(rows) == 42
    assert by_id[5]["name"] == "moved" and by_id[5]["status"] == "sold"
    assert by_id[7]["name"] == "renamed during the run"
    assert by_id[41]["status"] is None and by_id[42]["status"] == "lost"
    assert (counts["seen_under_two_statuses"], counts["conflicting_duplicates"]) == (1, 4)
    assert dropped == [1, 0, 0, 0]


@pytest.mark.parametrize("loop", ["pending", None], ids=["repeated-link", "repeated-records"])
def test_a_tiny_budget_still_detects_every_loop(tmp_path: Path, loop: str | None) -> None:
    listings = catalogue()
    if loop is None:  # the sweep's last page holds only records it already listed
        listings[None] = listings[None] + [pet(8, "available"), pet(1, "available")]
        listings[None][-5:-2] = [pet(31, "pending"), pet(35, "pending"), pet(36, "pending")]
    messages = []
    for name, budget in (("tiny", TINY), ("unlimited", UNLIMITED)):
        with pytest.raises(PaginationError) as caught:
            export(tmp_path, name, budget, listings, loop)
        messages.append(str(caught.value))
    assert messages[0] == messages[1]
    assert ("again" if loop else "only records already listed") in messages[0]
    assert not list((tmp_path / "tiny").glob(".petsync-tmp/*"))  # scratch removed
    assert json.dumps(messages)  # plain text


def test_a_full_scratch_dir_names_that_option_and_publishes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    from petsync.core.errors import PetsyncError
    from petsync.core.models import Pet
    from petsync.export import run as export_run
    from tests.export.scripted import ScriptedClient

    def no_space(scratch: Path, **_: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(scratch / "rows.arrow"))

    monkeypatch.setattr(export_run, "PetCollector", no_space)
    scratch_dir = tmp_path / "scratch"
    config = ExportConfig(
        client=ClientConfig(BASE, ApiKey("k")), out_dir=tmp_path / "out", scratch_dir=scratch_dir
    )

    with pytest.raises(PetsyncError) as caught:
        run_export(config, client=ScriptedClient([Pet(1, "Rex", 1, "sold")]), today=DAY2)

    assert str(caught.value).startswith(
        f"cannot write the scratch area under {scratch_dir} (scratch_dir=): No space left on device"
    )
    assert str(caught.value).endswith("or choose another scratch_dir=.")
    assert not (tmp_path / "out" / "pets").exists()
    assert list(scratch_dir.iterdir()) == []  # its run folder removed
