"""The wire: :class:`~petsync.client.wire.CurlExchange` against raw loopback servers.

The mock-transport tests of ``test_client.py`` replace the transport; these run the one that
a real export takes (libcurl) against sockets on 127.0.0.1 that answer correctly, oddly or
in breach of HTTP/1.1, each breach refused with libcurl's reason.
"""

from __future__ import annotations

import gzip
import json
import socket

import pytest

from petsync.client.client import PetstoreClient
from petsync.client.config import ClientConfig, RetryPolicy
from petsync.core.apikey import ApiKey
from petsync.core.errors import (
    ApiError,
    AuthenticationError,
    OutcomeUnknownError,
    RetriesExhaustedError,
    TransportError,
)
from petsync.core.models import NewPet, Pet, PetStatus
from tests.client.loopback import Harness, Loopback, _read_request, answer, chunked
from tests.conftest import FakeClock

KEY = "k-direct"


ONE = b'[{"id":1,"name":"a","categoryId":1}]'
THIRD = b'[{"id":3,"name":"c","categoryId":1}]'


def page(ids: range) -> bytes:
    records = ",".join(f'{{"id":{i},"name":"n{i}","categoryId":1}}' for i in ids)
    return f"[{records}]".encode()


def kept_alive(*answers: bytes) -> object:
    """Answer each request on one connection with the next of ``answers`` (raw responses)."""

    def script(server: Loopback, conn: socket.socket) -> None:
        for index, raw in enumerate(answers):
            if index:  # the harness read the first request already
                server.requests.append(_read_request(conn))
            server.send(conn, raw)

    return script


def response(body: bytes, headers: str = "", status: str = "200 OK") -> bytes:
    return (
        f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n{headers}"
        f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )


def _client(live: Harness, server: Loopback, attempts: int = 1) -> PetstoreClient:
    config = ClientConfig(
        server.base_url,
        ApiKey(KEY),
        retry=RetryPolicy(max_attempts=attempts),
        pagination="link",
    )
    return live.client(config)


def _ids(client: PetstoreClient, limit: int = 2) -> list[int]:
    return [pet.id for page in client.list_pets(limit=limit) for pet in page.pets]


def test_a_listing_pages_over_one_kept_alive_connection(live: Harness) -> None:
    next_link = 'Link: </v1/pets?limit=2&after=2>; rel="next"\r\n'
    server = live.serve(
        kept_alive(
            response(page(range(1, 3)), next_link),
            response(b'[{"id":3,"name":"c","categoryId":1}]'),
        )
    )
    client = _client(live, server)
    assert _ids(client) == [1, 2, 3]
    assert server.connections == 1 and len(server.requests) == 2
    first = server.requests[0].decode()
    assert first.startswith("GET /v1/pets?limit=2 HTTP/1.1\r\n")
    assert f"Authorization: Bearer {KEY}\r\n" in first and "Host: 127.0.0.1:" in first
    assert server.requests[1].decode().startswith("GET /v1/pets?limit=2&after=2 HTTP/1.1\r\n")


def test_an_answer_that_closes_the_connection_is_followed_by_a_new_one(live: Harness) -> None:
    next_link = 'Link: </v1/pets?limit=2&after=2>; rel="next"\r\nConnection: close\r\n'
    server = live.serve(
        answer(body=page(range(1, 3)), headers=next_link),
        answer(body=THIRD),
    )
    client = _client(live, server)
    assert _ids(client) == [1, 2, 3]
    assert (server.connections, client.requests, client.retries) == (2, 2, 0)


@pytest.mark.parametrize(
    "script",
    [
        chunked("HTTP/1.1 200 OK\r\n", [b'[{"id":1,"name":"a",', b'"categoryId":1}]']),
        answer(
            body=gzip.compress(b'[{"id":1,"name":"a","categoryId":1}]'),
            headers="Content-Encoding: gzip\r\n",
        ),
        lambda server, conn: server.send(
            conn, b'HTTP/1.0 200 OK\r\n\r\n[{"id":1,"name":"a","categoryId":1}]'
        ),
    ],
    ids=["chunked", "gzip", "http-1.0-until-close"],
)
def test_bodies_framed_every_way_are_read(live: Harness, script: object) -> None:
    server = live.serve(script)  # type: ignore[arg-type]
    assert _ids(_client(live, server)) == [1]


def test_a_503_is_retried_after_its_retry_after(live: Harness, fake_clock: FakeClock) -> None:
    server = live.serve(
        answer("503 Service Unavailable", b"{}", "Retry-After: 7\r\nConnection: close\r\n"),
        answer(body=ONE),
    )
    client = _client(live, server, attempts=2)
    assert _ids(client) == [1]
    assert (client.requests, client.retries) == (2, 1)
    assert fake_clock.sleeps and fake_clock.sleeps[0] >= 7


def test_a_refused_key_is_an_authentication_error_naming_the_base_url(live: Harness) -> None:
    body = b'{"code": "unauthorized", "message": "bad key", "status": 401}'
    server = live.serve(answer("401 Unauthorized", body))
    with pytest.raises(AuthenticationError) as caught:
        _ids(_client(live, server))
    assert str(caught.value).startswith(
        f"the API at {server.base_url} refused the API key (HTTP 401, unauthorized: bad key)"
    )
    assert KEY not in str(caught.value)


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"HTTX/1.1 200 OK\r\n\r\n", "HTTP/0.9"),
        (b"HTTP/1.1 200 OK\r\nbad line\r\nContent-Length: 2\r\n\r\n[]", "Header without colon"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n[]", "Content-Length"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: -2\r\n\r\n[]", "Content-Length"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\n[]", "Content-Length"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n[]", "bytes missing"),
        (b"HTTP/1.1 200 OK\r\nX: " + b"a" * 310_000 + b"\r\n\r\n", "larger than allowed"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "chunk"),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0x5\r\n[]",
            "outstanding read data",
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffffff\r\n",
            "chunk",
        ),
        (b"", "Empty reply from server"),
    ],
    ids=[
        "status-line",
        "header-without-colon",
        "two-lengths",
        "negative-length",
        "plus-length",
        "short-body",
        "huge-head",
        "chunk",
        "chunk-0x",
        "chunk-size-overflow",
        "nothing",
    ],
)
def test_an_answer_that_breaks_http_is_a_transport_error_retried_for_get(
    live: Harness, raw: bytes, reason: str
) -> None:
    def script(server: Loopback, conn: socket.socket) -> None:
        server.send(conn, raw)

    server = live.serve(script, script)
    client = _client(live, server, attempts=2)
    with pytest.raises(RetriesExhaustedError) as caught:
        _ids(client)
    error = caught.value.last_error
    assert type(error) is TransportError
    assert str(error).startswith(f"no answer to GET {server.base_url}/pets?limit=2 (")
    assert reason in str(error)
    assert (client.requests, client.retries) == (2, 1)


def test_create_pet_posts_on_the_threads_own_connection(live: Harness) -> None:
    created = b'{"id": 7, "name": "Zo\xc3\xab", "categoryId": 3, "status": "sold"}'
    answered = response(created, status="201 Created")
    server = live.serve(kept_alive(answered, answered))
    client = _client(live, server)
    first = client.create_pet(NewPet("Zoë", 3, PetStatus.SOLD))
    client.create_pet(NewPet("Zoë", 3, PetStatus.SOLD))
    assert first == Pet(7, "Zoë", 3, "sold")
    assert server.connections == 1
    head, _, body = server.requests[0].partition(b"\r\n\r\n")
    assert head.startswith(b"POST /v1/pets HTTP/1.1\r\n")
    assert b"\r\nContent-Type: application/json\r\n" in head + b"\r\n"
    assert b"\r\nContent-Length: %d" % len(body) in head
    assert json.loads(body) == {"name": "Zoë", "categoryId": 3, "status": "sold"}


def test_a_post_answered_500_is_outcome_unknown_and_not_re_sent(live: Harness) -> None:
    server = live.serve(answer("500 Internal Server Error", b"{}"))
    client = _client(live, server, attempts=3)
    with pytest.raises(OutcomeUnknownError):
        client.create_pet(NewPet("Rex", 3))
    assert (server.connections, client.requests) == (1, 1)


def test_a_redirect_is_reported_not_followed(live: Harness) -> None:
    moved = response(b"", headers="Location: http://127.0.0.2:9/v1/pets\r\n", status="302 Found")
    server = live.serve(kept_alive(moved))
    client = _client(live, server)
    with pytest.raises(ApiError) as caught:
        _ids(client)
    assert "a redirect to http://127.0.0.2:9/v1/pets; petsync does not follow redirects" in str(
        caught.value
    )
    assert len(server.requests) == 1 and client.requests == 1


def test_a_listing_after_a_post_on_the_same_connection_is_a_get(live: Harness) -> None:
    created = response(b'{"id": 7, "name": "Rex", "categoryId": 3}', status="201 Created")
    server = live.serve(kept_alive(created, response(ONE)))
    client = _client(live, server)
    client.create_pet(NewPet("Rex", 3))
    assert _ids(client) == [1]
    assert server.connections == 1
    assert server.requests[1].startswith(b"GET /v1/pets?limit=2 HTTP/1.1\r\n")
    assert b"Content-Length" not in server.requests[1]


def test_posts_around_a_listing_on_one_connection_each_carry_their_own_body(
    live: Harness,
) -> None:
    # The handle keeps the URL and header lines it was last given: a listing between two
    # POSTs must change them and the next POST change them back.
    created = response(b'{"id": 7, "name": "Rex", "categoryId": 3}', status="201 Created")
    server = live.serve(kept_alive(created, response(ONE), created))
    client = _client(live, server)
    client.create_pet(NewPet("Rex", 3))
    assert _ids(client) == [1]
    client.create_pet(NewPet("Rexander the Great", 12, PetStatus.PENDING))
    assert server.connections == 1
    post, get, again = server.requests
    assert get.startswith(b"GET /v1/pets?limit=2 HTTP/1.1\r\n")
    for request, pet in (
        (post, {"name": "Rex", "categoryId": 3}),
        (again, {"name": "Rexander the Great", "categoryId": 12, "status": "pending"}),
    ):
        head, _, body = request.partition(b"\r\n\r\n")
        assert head.startswith(b"POST /v1/pets HTTP/1.1\r\n")
        assert b"\r\nAuthorization: Bearer " + KEY.encode() + b"\r\n" in head + b"\r\n"
        assert b"\r\nContent-Type: application/json\r\n" in head + b"\r\n"
        assert b"\r\nContent-Length: %d\r\n" % len(body) in head + b"\r\n"
        assert json.loads(body) == pet


def test_a_post_on_a_kept_alive_connection_dropped_after_it_was_read_is_not_re_sent(
    live: Harness,
) -> None:
    # The server reads the POST and closes without an answer: it may have created the pet.
    # libcurl would re-send a request on a fresh connection when a reused one died before
    # any answer byte (right for GET); a POST must come back as outcome unknown instead.
    def page_then_drop(server: Loopback, conn: socket.socket) -> None:
        server.send(conn, response(ONE))
        server.requests.append(_read_request(conn))  # the POST, read, then no answer

    created = response(b'{"id": 7, "name": "Rex", "categoryId": 3}', status="201 Created")
    server = live.serve(page_then_drop, kept_alive(created))
    client = _client(live, server, attempts=3)
    assert _ids(client) == [1]
    with pytest.raises(OutcomeUnknownError):
        client.create_pet(NewPet("Rex", 3))
    posts = [r for r in server.requests if r.startswith(b"POST ")]
    assert len(posts) == 1 and server.connections == 1
    assert client.requests == 2
