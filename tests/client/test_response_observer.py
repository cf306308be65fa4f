"""The client's response observer: it sees every answer's headers, error answers too, and
what it raises ends the request (the export's clock check stops a run with it)."""

from __future__ import annotations

import httpx
import pytest
import respx

from petsync.client.client import PetstoreClient
from petsync.client.config import ClientConfig
from petsync.core.apikey import ApiKey
from petsync.core.errors import PetsyncError
from tests.conftest import FakeClock

BASE = "https://petstore.test/v1"
PETS = f"{BASE}/pets"
DATES = ["Fri, 27 Nov 2026 09:00:00 GMT", "Fri, 27 Nov 2026 09:00:01 GMT"]


def _client(fake_clock: FakeClock, seen: list[str | None]) -> PetstoreClient:
    def observe(headers: httpx.Headers) -> None:
        seen.append(headers.get("date"))
        if headers.get("date") == "stop":
            raise PetsyncError("the observer stopped the request")

    return PetstoreClient(
        ClientConfig(base_url=BASE, api_key=ApiKey("k-observer")),
        transport=httpx.HTTPTransport(),
        sleep=fake_clock.sleep,
        clock=fake_clock,
        on_response=observe,
    )


def test_the_observer_sees_every_answer_a_retried_one_too(fake_clock: FakeClock) -> None:
    seen: list[str | None] = []
    with respx.mock(assert_all_called=True) as api:
        api.get(PETS).mock(
            side_effect=[
                httpx.Response(503, headers={"Date": DATES[0], "Retry-After": "1"}),
                httpx.Response(200, json=[], headers={"Date": DATES[1]}),
            ]
        )
        with _client(fake_clock, seen) as client:
            assert [len(p.columns) for p in client.list_pets(limit=10)] == [0]
    assert seen == DATES


def test_what_the_observer_raises_ends_the_request_unretried(fake_clock: FakeClock) -> None:
    seen: list[str | None] = []
    with respx.mock() as api:
        route = api.get(PETS).respond(503, headers={"Date": "stop"})
        with _client(fake_clock, seen) as client, pytest.raises(PetsyncError, match="stopped"):
            list(client.list_pets(limit=10))
    assert route.call_count == 1 and seen == ["stop"]
