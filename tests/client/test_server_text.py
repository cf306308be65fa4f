"""Every pattern that reads what a server sent, over hostile input at the size it can reach.

A header line reaches the client only up to libcurl's cap (:data:`HEADER_LINE`, 100 KiB; a
longer one is refused on the wire, see ``test_wire.py``), a body only up to the response size
limit (32 MiB by default). Each pattern must read such input in one pass: a quadratic one
takes tens of seconds here (the ``Link`` pattern this replaced: 1.1 s of CPU at 16,000
characters, about 40 s at 100 KiB), which the per-test timeout turns into a failure. The
timeout is a bound on a runaway, not a measurement: linear patterns take milliseconds.
"""

from __future__ import annotations

import socket

import httpx
import pytest

from petsync.client import body, origins, pagination
from petsync.client.client import PetstoreClient
from petsync.client.config import ClientConfig, RetryPolicy
from petsync.client.retry import parse_retry_after
from petsync.core.apikey import ApiKey, redact
from petsync.core.errors import RetriesExhaustedError
from tests.client.loopback import Harness, Loopback, _read_request

HEADER_LINE = 100 * 1024  # libcurl's CURL_MAX_HTTP_HEADER: the longest header line it passes
BODY_CAP = 32 * 1024 * 1024  # ClientConfig's default max_response_bytes
RUNAWAY = pytest.mark.timeout(20)


def _fill(unit: str, size: int = HEADER_LINE - 10, prefix: str = "", suffix: str = "") -> str:
    return prefix + unit * ((size - len(prefix) - len(suffix)) // len(unit)) + suffix


HOSTILE_LINKS = {
    "many-lt": _fill("<"),
    "lt-space": _fill("< "),
    "lt-no-gt": _fill("a", prefix="<"),
    "many-semicolons": _fill(";", prefix="<a>"),
    "params-no-rel": _fill("; x", prefix="<a>"),
    "rel-without-value": _fill(";rel=", prefix="<a>"),
    "unclosed-quotes": _fill('<a>;rel="'),
    "spaces": _fill(" ", prefix="<a>", suffix="x"),
    "many-links": _fill('<a>; rel="prev", '),
    "commas": _fill(",", prefix="<a>;rel=next"),
}


@RUNAWAY
@pytest.mark.parametrize("value", HOSTILE_LINKS.values(), ids=HOSTILE_LINKS.keys())
def test_a_hostile_link_header_is_read_in_one_pass(value: str) -> None:
    # Three such lines: a page may repeat a header (up to libcurl's cap on all of them).
    headers = httpx.Headers([("Link", value)] * 3)
    assert pagination.next_link(headers) in (None, "a")


HOSTILE_TARGETS = {
    "slashes": _fill("/"),
    "percents": _fill("%", prefix="/"),
    "half-escapes": _fill("%a", prefix="/", suffix="\x00"),
    "question-marks": _fill("?", prefix="/", suffix=" "),
    "dot-segments": _fill("/.", suffix=" "),
    "dots": _fill(".", prefix="/", suffix="/../"),
}


@RUNAWAY
@pytest.mark.parametrize("target", HOSTILE_TARGETS.values(), ids=HOSTILE_TARGETS.keys())
def test_a_hostile_next_link_target_is_judged_in_one_pass(target: str) -> None:
    assert origins.same_origin_target(target) in (True, False)


HOSTILE_BODIES = {
    "escaped-quotes": b'"' + b'\\"' * (BODY_CAP // 2 - 1),
    "unclosed-string": b'["' + b"a" * (BODY_CAP - 2),
    "backslashes": b'"' + b"\\" * (BODY_CAP - 1),
}


@RUNAWAY
@pytest.mark.parametrize("data", HOSTILE_BODIES.values(), ids=HOSTILE_BODIES.keys())
def test_the_nesting_report_reads_a_hostile_body_in_one_pass(data: bytes) -> None:
    assert "levels deep" in body._nesting_message(data)


HOSTILE_SECRETS_TEXT = {
    "bearer-spaces": _fill(" ", prefix="bearer", suffix=","),
    "many-bearers": _fill("bearer "),
    "key-params": _fill("api_key=", suffix=" "),
}


@RUNAWAY
@pytest.mark.parametrize("text", HOSTILE_SECRETS_TEXT.values(), ids=HOSTILE_SECRETS_TEXT.keys())
def test_redaction_reads_hostile_server_text_in_one_pass(text: str) -> None:
    assert "sk-x" not in redact(text + " sk-x", [ApiKey("sk-x")])


def test_a_hostile_link_on_every_page_does_not_slow_a_listing(live: Harness) -> None:
    hostile = _fill("<", HEADER_LINE - 100).encode()  # with "Link: " and the next link
    pages = [b'[{"id":1,"name":"a","categoryId":1}]', b'[{"id":2,"name":"b","categoryId":1}]']

    def script(server: Loopback, conn: socket.socket) -> None:
        for index, page in enumerate(pages):
            if index:
                server.requests.append(_read_request(conn))
            link = b"</v1/pets?limit=1&after=1>; rel=next, " if index == 0 else b""
            server.send(
                conn,
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nLink: "
                + link
                + hostile
                + b"\r\nContent-Length: %d\r\n\r\n" % len(page)
                + page,
            )

    server = live.serve(script)
    config = ClientConfig(
        server.base_url, ApiKey("k"), pagination="link", retry=RetryPolicy(max_attempts=1)
    )
    client = live.client(config)
    assert [p.id for page in client.list_pets(limit=1) for p in page.pets] == [1, 2]
    assert client.requests == 2


@RUNAWAY
@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        (_fill("9"), float("inf")),
        ("9" * 20, 1e20),
        ("\u00b2", None),  # a digit to str.isdigit, not a number to int() or float()
        ("\u0663", None),  # ARABIC-INDIC DIGIT THREE: not delta-seconds either
        (_fill(" ", suffix="7"), 7.0),
        (_fill("Wed, 21 Oct 2015 "), None),
    ],
    ids=["100k-digits", "20-digits", "superscript", "arabic-indic", "spaces", "date-garbage"],
)
def test_a_hostile_retry_after_is_read_without_failing(value: str, seconds: float | None) -> None:
    assert parse_retry_after(value, date_header=None, wall_clock=lambda: 0.0) == seconds


def test_a_retry_after_of_thousands_of_digits_ends_the_retries_with_a_message() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(503, headers={"Retry-After": "9" * 5000}, json={})

    config = ClientConfig("https://petstore.test/v1", ApiKey("k"), pagination="none")
    client = PetstoreClient(config, transport=httpx.MockTransport(handler), sleep=lambda s: None)
    with pytest.raises(RetriesExhaustedError, match="would pass the retry budget of 300 s"):
        list(client.list_pets())
    assert client.requests == 1
