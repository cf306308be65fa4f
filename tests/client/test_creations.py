"""createPet for many pets at once from one thread: libcurl's multi interface on the wire, and
the same client code over a test's transport (retries waited out in a queue, outcomes)."""

from __future__ import annotations

import json
import random
import socket

import httpx
import pytest

from petsync.client.client import PetstoreClient
from petsync.client.config import ClientConfig, RetryPolicy
from petsync.client.creations import Creation, Creations, created_pet, post_body
from petsync.core.apikey import ApiKey
from petsync.core.errors import (
    OutcomeUnknownError,
    ProtocolError,
    RetriesExhaustedError,
    TransportError,
)
from petsync.core.models import NewPet, PetStatus
from tests.client.loopback import Harness, Loopback, _read_request
from tests.client.test_wire import kept_alive, response
from tests.conftest import FakeClock, StartServer

BASE = "https://pets.example/v1"


def all_ended(creations: Creations, limit: int = 1000) -> list[Creation]:
    """Every outcome, in the order they came (bounded: a test never loops forever)."""
    ended: list[Creation] = []
    for _ in range(limit):
        if not creations.in_flight:
            return ended
        ended += creations.wait(5.0)
    raise AssertionError(f"still {creations.in_flight} in flight")


def mock_client(
    handler: httpx.MockTransport, fake_clock: FakeClock, attempts: int = 3
) -> PetstoreClient:
    config = ClientConfig(
        base_url=BASE,
        api_key=ApiKey("k"),
        retry=RetryPolicy(max_attempts=attempts, budget_seconds=1_000),
    )
    return PetstoreClient(
        config,
        transport=handler,
        sleep=fake_clock.sleep,
        clock=fake_clock,
        rng=random.Random(0),
    )


def created(request: httpx.Request, pet_id: int) -> httpx.Response:
    return httpx.Response(201, json={"id": pet_id, **json.loads(request.content)})


def test_posts_in_flight_together_each_create_their_pet_once(
    petstore_server: StartServer,
) -> None:
    srv = petstore_server()
    pets = {row: NewPet(f"Pet {row}", row % 5, PetStatus.AVAILABLE) for row in range(2, 42)}
    with PetstoreClient(ClientConfig(srv.base_url, srv.api_key)) as client:
        with client.creations() as creations:
            for row, pet in pets.items():
                creations.start(row, pet)
            assert creations.in_flight == 40
            ended = all_ended(creations)
        assert client.requests == 40
    assert sorted(e.key for e in ended) == sorted(pets)
    for one in ended:
        assert one.error is None and one.pet is not None and not one.retried
        assert (one.pet.name, one.pet.categoryId) == (pets[one.key].name, pets[one.key].categoryId)
    assert sorted(p.name for p in srv.store.all()) == sorted(p.name for p in pets.values())


def test_a_post_answered_500_after_storing_is_outcome_unknown_and_not_re_sent(
    petstore_server: StartServer,
) -> None:
    srv = petstore_server()
    srv.faults.fail_after_store_rate = 1.0
    config = ClientConfig(srv.base_url, srv.api_key, retry=RetryPolicy(max_attempts=5))
    with PetstoreClient(config) as client, client.creations() as creations:
        creations.start(2, NewPet("Rex", 1))
        creations.start(3, NewPet("Tom", 2))
        ended = all_ended(creations)
        assert client.requests == 2
    assert all(isinstance(e.error, OutcomeUnknownError) for e in ended)
    assert srv.store.count() == 2  # stored once each: never sent again


def test_a_refused_connection_is_surely_unsent() -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]  # bound, never listening: connections are refused
        config = ClientConfig(
            f"http://127.0.0.1:{port}/v1", ApiKey("k"), retry=RetryPolicy(max_attempts=1)
        )
        with PetstoreClient(config, environ={}) as client, client.creations() as creations:
            creations.start(2, NewPet("Rex", 1))
            (ended,) = all_ended(creations)
    assert isinstance(ended.error, TransportError | RetriesExhaustedError)
    assert not isinstance(ended.error, OutcomeUnknownError)


def test_a_429_waits_its_retry_after_in_a_queue_while_the_others_are_sent(
    fake_clock: FakeClock,
) -> None:
    seen: list[str] = []
    sent_at: list[float] = []

    def handler(request: httpx.Request) -> httpx.Response:
        name = json.loads(request.content)["name"]
        seen.append(name)
        sent_at.append(fake_clock.now)
        if name == "Rex" and seen.count("Rex") == 1:
            return httpx.Response(429, headers={"Retry-After": "7"}, json={})
        return created(request, len(seen))

    with mock_client(httpx.MockTransport(handler), fake_clock) as client:
        with client.creations() as creations:
            creations.start(2, NewPet("Rex", 1))
            creations.start(3, NewPet("Tom", 2))
            first = creations.wait(0.0)
            assert [(e.key, e.pet is not None) for e in first] == [(3, True)]
            assert creations.in_flight == 1  # Rex waits its turn, on no thread
            later = all_ended(creations)
        assert client.retries == 1
    assert seen == ["Rex", "Tom", "Rex"]
    assert [(e.key, e.retried) for e in later] == [(2, True)]
    assert later[0].pet is not None and later[0].pet.name == "Rex"
    assert sent_at[2] - sent_at[0] >= 7  # Retry-After is a floor


def test_a_connection_dropped_after_sending_is_outcome_unknown_and_not_re_sent(
    fake_clock: FakeClock,
) -> None:
    calls: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        raise httpx.ReadError("connection reset", request=request)

    transport = httpx.MockTransport(handler)
    with mock_client(transport, fake_clock, attempts=5) as client, client.creations() as creations:
        creations.start(2, NewPet("Rex", 1))
        (ended,) = all_ended(creations)
    assert isinstance(ended.error, OutcomeUnknownError)
    assert len(calls) == 1 and not ended.retried


def test_a_201_whose_body_is_not_a_pet_says_the_pet_was_probably_created(
    fake_clock: FakeClock,
) -> None:
    transport = httpx.MockTransport(lambda request: httpx.Response(201, json={"id": "x"}))
    with mock_client(transport, fake_clock) as client, client.creations() as creations:
        creations.start(2, NewPet("Rex", 1))
        (ended,) = all_ended(creations)
    assert ended.pet is None and ended.error is not None
    assert f"POST {BASE}/pets answered 201 but its body is not a Pet" in str(ended.error)
    assert "the pet was probably created" in str(ended.error)


def test_a_wait_with_nothing_in_flight_returns_at_once(fake_clock: FakeClock) -> None:
    transport = httpx.MockTransport(lambda request: created(request, 1))
    with mock_client(transport, fake_clock) as client, client.creations() as creations:
        assert creations.wait(60.0) == []
    assert fake_clock.sleeps == []


@pytest.mark.parametrize(
    "name",
    [
        "Rex",
        'Bella "Boo" Smith',
        "Rex, the Brave",
        "Zoë Müller",
        "猫咪 😀",
        "tab\tnew\nline\x00\x1f\x7f\\",
    ],
    ids=["plain", "quotes", "comma", "accents", "cjk-emoji", "controls"],
)
def test_a_post_body_is_the_bytes_httpx_json_sends(name: str) -> None:
    pet = NewPet(name, 2**63 - 1, PetStatus.SOLD)
    assert post_body(pet) == httpx.Request("POST", BASE, json=pet.to_json()).content


def test_a_body_msgspec_refuses_is_read_as_json_loads_reads_it() -> None:
    # json.loads reads NaN, which is no int64: the reason is the one it always gave.
    with pytest.raises(ProtocolError, match=r"^POST u answered 201 but its body is not a Pet"):
        created_pet(201, b'{"id": NaN, "name": "Rex", "categoryId": 1}', "u")
    body = '{"id": 7, "name": "Rex", "categoryId": 1}'.encode("utf-16")
    assert created_pet(201, body, "u").id == 7  # UTF-16: json.loads reads it, msgspec not


def test_a_post_in_flight_whose_kept_alive_connection_drops_is_not_re_sent(
    live: Harness,
) -> None:
    # The server answers the first POST, reads the second and closes without an answer: it
    # may have created the pet. libcurl would re-send on a new connection a request it could
    # rewind; a POST in flight must come back as outcome unknown instead, sent once.
    created = response(b'{"id": 7, "name": "Rex", "categoryId": 3}', status="201 Created")

    def answer_then_drop(server: Loopback, conn: socket.socket) -> None:
        server.send(conn, created)
        server.requests.append(_read_request(conn))  # the second POST, read, no answer

    server = live.serve(answer_then_drop, kept_alive(created))
    config = ClientConfig(server.base_url, ApiKey("k"), retry=RetryPolicy(max_attempts=3))
    client = live.client(config)
    with client.creations() as creations:
        creations.start(2, NewPet("Rex", 3))
        (first,) = all_ended(creations)
        creations.start(3, NewPet("Tom", 4))
        (second,) = all_ended(creations)
    assert first.pet is not None and first.pet.id == 7
    assert isinstance(second.error, OutcomeUnknownError)
    assert [r.split(b"\r\n", 1)[0] for r in server.requests] == [b"POST /v1/pets HTTP/1.1"] * 2
    assert server.connections == 1 and client.requests == 2
