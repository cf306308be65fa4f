"""The listings of one export: plan, pages into the collector and quarantine, counts, failure."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from petsync.client.config import ClientConfig
from petsync.client.listing import InvalidRecord
from petsync.core.errors import PaginationError
from petsync.core.models import Pet, PetStatus
from petsync.export.collector import PetCollector
from petsync.export.config import ExportConfig
from petsync.export.fetch import FetchResult, ListingResult, fetch_listings
from petsync.export.quarantine import Quarantine
from tests.export.scripted import BASE, ScriptedClient

PETS = [
    Pet(1, "Rex", 10, "available"),
    Pet(2, "Tom", 11, "sold"),
    Pet(3, "Kit", 12, "sold"),
    Pet(4, "Bo", 13, None),
]


class Recorder:
    """An ExportProgress that keeps every event in order."""

    def __init__(self) -> None:
        self.events: list[tuple[object, ...]] = []

    def listing_started(self, label: str) -> None:
        self.events.append(("started", label))

    def page_done(self, label: str, pages: int, pets: int) -> None:
        self.events.append(("page", label, pages, pets))

    def listing_done(self, result: ListingResult) -> None:
        self.events.append(("done", result.label, result.pets))


@pytest.fixture
def sinks(tmp_path: Path) -> Iterator[tuple[PetCollector, Quarantine]]:
    collector = PetCollector(tmp_path / "scratch")
    with Quarantine(tmp_path / "q.jsonl", []) as quarantine:
        yield collector, quarantine
    collector.close()


def fetch(
    client: ScriptedClient,
    sinks: tuple[PetCollector, Quarantine],
    progress: Recorder | None = None,
    **options: Any,
) -> FetchResult:
    config = ExportConfig(client=ClientConfig(BASE, None), out_dir=Path("unused"), **options)
    collector, quarantine = sinks
    return fetch_listings(
        config, client, collector, quarantine, monotonic=lambda: 0.0, progress=progress
    )


def test_results_follow_the_plan_statuses_then_the_sweep(
    sinks: tuple[PetCollector, Quarantine],
) -> None:
    statuses = (PetStatus.SOLD, PetStatus.AVAILABLE)

    result = fetch(ScriptedClient(PETS), sinks, statuses=statuses, concurrency=3)

    assert [(r.label, r.pets) for r in result.listings] == [
        ("sold", 2),
        ("available", 1),
        ("all", 4),
    ]
    assert result.complete is True


def test_without_the_sweep_only_the_statuses_are_listed(
    sinks: tuple[PetCollector, Quarantine],
) -> None:
    client = ScriptedClient(PETS)

    result = fetch(client, sinks, statuses=(PetStatus.SOLD,), sweep=False)

    assert client.listed == ["sold"]
    assert [r.label for r in result.listings] == ["sold"]


def test_request_counts_are_this_runs_only(sinks: tuple[PetCollector, Quarantine]) -> None:
    client = ScriptedClient(PETS, page_size=1)
    client.requests, client.retries = 40, 3  # spent before the export began

    result = fetch(client, sinks, statuses=(PetStatus.SOLD,))

    assert (result.requests, result.retries) == (2 + 4, 0)
    assert result.pages == 6


def test_duplicates_the_client_dropped_are_reported_per_listing(
    sinks: tuple[PetCollector, Quarantine],
) -> None:
    client = ScriptedClient(PETS, duplicates={"sold": 3})

    result = fetch(client, sinks, statuses=(PetStatus.SOLD,))

    assert [(r.label, r.duplicates_dropped) for r in result.listings] == [("sold", 3), ("all", 0)]
    assert result.listings[0].to_json()["duplicates_dropped"] == 3


def test_pets_go_to_the_collector_and_invalid_records_to_the_quarantine(
    sinks: tuple[PetCollector, Quarantine],
) -> None:
    bad = InvalidRecord({"id": "x"}, "Pet 'id' is not an integer", f"{BASE}/pets")
    client = ScriptedClient(PETS, extra={None: [bad]})

    result = fetch(client, sinks, statuses=(PetStatus.SOLD,))

    collector, quarantine = sinks
    assert result.quarantined == quarantine.count == 1
    assert [(r.label, r.pets, r.invalid) for r in result.listings] == [
        ("sold", 2, 0),
        ("all", 4, 1),
    ]
    assert collector.finish().pets == 4


def test_progress_hears_each_listing_start_its_pages_and_its_end(
    sinks: tuple[PetCollector, Quarantine],
) -> None:
    progress = Recorder()

    fetch(
        ScriptedClient(PETS, page_size=1), sinks, progress, statuses=(PetStatus.SOLD,), sweep=False
    )

    assert progress.events == [
        ("started", "sold"),
        ("page", "sold", 1, 1),
        ("page", "sold", 2, 2),
        ("done", "sold", 2),
    ]


def test_a_failed_listing_raises_its_own_error(sinks: tuple[PetCollector, Quarantine]) -> None:
    failure = PaginationError("the server sent the same next link again")
    client = ScriptedClient(PETS, errors={"sold": failure})

    with pytest.raises(PaginationError) as caught:
        fetch(client, sinks, concurrency=4)

    assert caught.value is failure


def test_an_unproven_listing_makes_the_fetch_incomplete_and_says_which(
    sinks: tuple[PetCollector, Quarantine],
) -> None:
    client = ScriptedClient(PETS, incomplete={"sold": "a full last page and no next link"})

    result = fetch(client, sinks, statuses=(PetStatus.SOLD,))

    assert result.complete is False
    assert result.incomplete_reasons == ["listing 'sold': a full last page and no next link"]


@pytest.mark.parametrize(("style", "page_cap"), [("offset", None), ("offset", 40), ("page", None)])
def test_listings_read_ahead_against_the_reference_server_fetch_each_pet_once_in_order(
    petstore_server: Any, tmp_path: Path, style: str, page_cap: int | None
) -> None:
    from petsync.client.client import PetstoreClient

    srv = petstore_server(seed_pets=1_030, pagination=style, page_cap=page_cap)
    config = ExportConfig(
        client=ClientConfig(srv.base_url, srv.api_key, pagination="auto"),
        out_dir=tmp_path / "out",
        concurrency=8,
    )
    seen: dict[str, list[int]] = {}

    class Watch(PetCollector):
        def add(self, source: int, columns: Any, body: Any) -> None:
            seen.setdefault(str(source), []).extend(columns.ids)
            super().add(source, columns, body)

    collector = Watch(tmp_path / "scratch")
    with PetstoreClient(config.client) as client, Quarantine(tmp_path / "q.jsonl", []) as q:
        result = fetch_listings(config, client, collector, q, monotonic=lambda: 0.0)
    collector.close()
    assert result.complete and result.retries == 0
    assert {r.label: r.style for r in result.listings}["all"] == style
    assert seen["0"] == sorted(p.id for p in srv.store.all())  # the sweep: every pet, in order
    for status, ids in seen.items():
        assert ids == sorted(ids) and len(ids) == len(set(ids)), status
