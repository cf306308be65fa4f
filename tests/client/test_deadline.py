"""The request deadline: one attempt, headers and body included, ends on time.

Against a real socket server on 127.0.0.1 that drips bytes (``tests/client/loopback.py``):
the read timeout (5 s) never fires, so only the total deadline (0.3 s) can end a request that
the server would otherwise stretch to 2 s. Retry waits go to the fake clock.
"""

from __future__ import annotations

import time

import pytest

from petsync.client.client import PetstoreClient
from petsync.client.config import ClientConfig, RetryPolicy
from petsync.core.apikey import ApiKey
from petsync.core.errors import OutcomeUnknownError, RetriesExhaustedError, TransportError
from petsync.core.models import NewPet
from tests.client.loopback import Harness, Loopback, Script, answer, drip
from tests.conftest import FakeClock

DEADLINE = 0.3
DRIP_EVERY = 0.05
DRIPPED = b"x" * 40  # 2 s of dripping: what the request would take without a deadline
BOUND = 1.2  # seconds: well under the 2 s of dripping, well over the deadline
SLOW = "raise it with request_timeout= if the server is slow but working"


def _client(live: Harness, server: Loopback, attempts: int = 1) -> PetstoreClient:
    config = ClientConfig(
        server.base_url,
        ApiKey("k-deadline"),
        read_timeout=5.0,
        request_timeout=DEADLINE,
        retry=RetryPolicy(max_attempts=attempts),
        pagination="none",
    )
    return live.client(config)


BODY_DRIP = drip(b"HTTP/1.1 200 OK\r\nContent-Length: 42\r\n\r\n[", DRIPPED, DRIP_EVERY, b"]")
HEADER_DRIP = drip(
    b"HTTP/1.1 200 OK\r\nX-Slow: ", DRIPPED, DRIP_EVERY, b"\r\nContent-Length: 2\r\n\r\n[]"
)


@pytest.mark.parametrize("script", [BODY_DRIP, HEADER_DRIP], ids=["body", "headers"])
def test_a_dripping_server_is_cut_off_at_the_request_timeout(
    script: Script, live: Harness, fake_clock: FakeClock
) -> None:
    server = live.serve(script)
    client = _client(live, server)
    started = time.monotonic()
    with pytest.raises(RetriesExhaustedError) as caught:
        list(client.list_pets())
    elapsed = time.monotonic() - started
    assert DEADLINE <= elapsed < BOUND
    assert isinstance(caught.value.last_error, TransportError)
    assert str(caught.value.last_error) == (
        f"no answer to GET {server.base_url}/pets?limit=100 within the request timeout of "
        f"0.3 s; {SLOW}"
    )


def test_get_is_retried_after_a_missed_deadline(live: Harness, fake_clock: FakeClock) -> None:
    pet = b'[{"id": 1, "name": "a", "categoryId": 2}]'
    server = live.serve(BODY_DRIP, answer(body=pet))
    client = _client(live, server, attempts=3)
    started = time.monotonic()
    pages = list(client.list_pets())
    assert time.monotonic() - started < BOUND
    assert [p.id for page in pages for p in page.pets] == [1]
    assert (client.requests, client.retries, len(fake_clock.sleeps)) == (2, 1, 1)


def test_a_post_past_its_deadline_is_outcome_unknown_and_not_re_sent(
    live: Harness, fake_clock: FakeClock
) -> None:
    created = b'{"id": 7, "name": "Rex", "categoryId": 3}'
    server = live.serve(BODY_DRIP, answer("201 Created", created))
    client = _client(live, server, attempts=3)
    with pytest.raises(OutcomeUnknownError) as caught:
        client.create_pet(NewPet("Rex", 3))
    assert str(caught.value) == (
        f"POST {server.base_url}/pets was sent but no answer came within the request timeout "
        f"of 0.3 s; {SLOW}; the pet may or may not have been created. petsync does not re-send "
        "it (that could create it twice): list the pets to check before sending it again"
    )
    assert len(server.requests) == 1 and server.requests[0].startswith(b"POST /v1/pets ")
    assert client.requests == 1 and fake_clock.sleeps == []


def test_a_prompt_server_is_not_slowed_or_failed_by_the_deadline(
    live: Harness, fake_clock: FakeClock
) -> None:
    server = live.serve(answer(body=b"[]"), answer(body=b"[]"))
    client = _client(live, server)
    started = time.monotonic()
    for _ in range(2):
        assert list(client.list_pets())[0].pets == []
    assert time.monotonic() - started < DEADLINE
