"""Bounded bodies: the decompressed size cap (bombs included) and the JSON nesting bound.

The cap is shown against a real socket on 127.0.0.1 sending lazily generated bodies that
decode to 1 GiB (nothing that size is ever built or written); decoding details and nesting
through ``httpx.MockTransport`` with streamed bodies.
"""

from __future__ import annotations

import gzip
import socket
import struct
import tracemalloc
import zlib
from collections.abc import Iterable, Iterator

import httpx
import pytest

from petsync.client.body import PIECE, inflate, nested_deeper_than, read_body
from petsync.client.client import PetstoreClient
from petsync.client.config import ClientConfig, RetryPolicy
from petsync.client.exchange import Answer, AnswerHeaders, HttpxExchange
from petsync.core.apikey import ApiKey
from petsync.core.errors import ApiError, ProtocolError
from petsync.core.models import NewPet
from tests.client.loopback import Harness, Loopback, answer, chunked
from tests.conftest import FakeClock

MiB = 1 << 20
GiB = 1 << 30
LIMIT = MiB
OVER = (
    "the response size limit of 1 MiB (1048576 bytes); petsync stopped reading it. A page of "
    "100 pets is about 10 KB: if answers this large are expected, raise the limit with "
    "max_response_bytes="
)
GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"


def gzip_bomb(inflated: int) -> Iterator[bytes]:
    """A valid gzip stream of ``inflated`` zero bytes (a multiple of 1 MiB), about 1/1000 the
    size, generated lazily: one 1 MiB deflate block, fully flushed so it can repeat."""
    zeros = bytes(MiB)
    deflate = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    block = deflate.compress(zeros) + deflate.flush(zlib.Z_FULL_FLUSH)
    yield GZIP_HEADER
    for _ in range(inflated // MiB):
        yield block
    yield b"\x03\x00"  # a final, empty block
    crc = 0
    for _ in range(inflated // MiB):
        crc = zlib.crc32(zeros, crc)
    yield struct.pack("<II", crc, inflated & 0xFFFFFFFF)


def zeros(total: int, size: int = 64 * 1024) -> Iterator[bytes]:
    for _ in range(total // size):
        yield bytes(size)  # a new object each time, as from a socket


def _live(live: Harness, server: Loopback) -> PetstoreClient:
    config = ClientConfig(
        server.base_url, ApiKey("k-body"), max_response_bytes=LIMIT, pagination="none"
    )
    return live.client(config)


def test_gzip_bomb_stops_at_the_limit_in_bounded_memory(live: Harness) -> None:
    # ~0.5 MB on the wire (under the cap on bytes received), 512 MiB inflated
    bomb = list(gzip_bomb(512 * MiB))
    head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
    server = live.serve(chunked(head, bomb), answer())
    client = _live(live, server)
    tracemalloc.start()
    try:
        with pytest.raises(ProtocolError) as caught:
            list(client.list_pets())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert str(caught.value) == (
        f"GET {server.base_url}/pets?limit=100 answered a gzip body that inflates to more than "
        + OVER
    )
    assert peak < LIMIT + 4 * MiB  # httpx alone would hold the whole GiB
    assert client.requests == 1 and server.connections == 1  # not retried


def test_a_huge_plain_body_stops_at_the_limit(live: Harness) -> None:
    head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
    server = live.serve(chunked(head, zeros(GiB)))
    client = _live(live, server)
    with pytest.raises(ProtocolError) as caught:
        list(client.list_pets())
    assert str(caught.value) == (
        f"GET {server.base_url}/pets?limit=100 answered a body larger than " + OVER
    )
    server.close()  # waits for the server to notice the client hung up
    assert server.sent < 100 * MiB  # of 1 GiB: the rest was never read (socket buffers aside)


def test_an_announced_size_over_the_limit_is_not_read_at_all(live: Harness) -> None:
    def script(server: Loopback, conn: socket.socket) -> None:
        server.send(conn, f"HTTP/1.1 200 OK\r\nContent-Length: {GiB}\r\n\r\n".encode())
        for chunk in zeros(GiB):
            server.send(conn, chunk)

    server = live.serve(script)
    with pytest.raises(ProtocolError) as caught:
        list(_live(live, server).list_pets())
    assert str(caught.value) == (
        f"GET {server.base_url}/pets?limit=100 announced a body of 1073741824 bytes, more than "
        + OVER.replace("stopped reading it", "did not read it")
    )
    server.close()
    assert server.sent < 100 * MiB


# -- decoding, through a mock transport with streamed bodies ----------------------------------

BASE = "https://petstore.test/v1"
URL = f"{BASE}/pets?limit=100"
PAGE = b'[{"id": 1, "name": "a", "categoryId": 2}]'


class Streamed(httpx.SyncByteStream):
    """A body httpx has not read yet, as from the network."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks = chunks

    def __iter__(self) -> Iterator[bytes]:
        yield from self._chunks


def _mock(
    fake_clock: FakeClock, chunks: Iterable[bytes], encoding: str | None, limit: int = LIMIT
) -> PetstoreClient:
    headers = {"Content-Type": "application/json"}
    if encoding is not None:
        headers["Content-Encoding"] = encoding
    transport = httpx.MockTransport(
        lambda request: httpx.Response(200, headers=headers, stream=Streamed(chunks))
    )
    config = ClientConfig(
        BASE,
        ApiKey("k"),
        max_response_bytes=limit,
        pagination="none",
        retry=RetryPolicy(max_attempts=1),
    )
    return PetstoreClient(config, transport=transport, sleep=fake_clock.sleep, clock=fake_clock)


def _deflate(data: bytes, wbits: int) -> bytes:
    compressor = zlib.compressobj(6, zlib.DEFLATED, wbits)
    return compressor.compress(data) + compressor.flush()


def _split(data: bytes, size: int = 7) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def _flipped(data: bytes, index: int) -> bytes:
    """``data`` with one bit of the byte at ``index`` flipped."""
    changed = bytearray(data)
    changed[index] ^= 1
    return bytes(changed)


@pytest.mark.parametrize(
    ("encoding", "wire"),
    [
        (None, PAGE),
        ("identity", PAGE),
        ("gzip", gzip.compress(PAGE)),
        ("x-gzip", gzip.compress(PAGE)),
        ("deflate", _deflate(PAGE, zlib.MAX_WBITS)),
        ("deflate", _deflate(PAGE, -zlib.MAX_WBITS)),
        ("gzip, gzip", gzip.compress(gzip.compress(PAGE))),
        ("GZIP", gzip.compress(PAGE[:9]) + gzip.compress(PAGE[9:])),
    ],
    ids=["none", "identity", "gzip", "x-gzip", "zlib", "raw-deflate", "gzip-twice", "two-members"],
)
def test_bodies_are_decoded_in_small_network_chunks(
    encoding: str | None, wire: bytes, fake_clock: FakeClock
) -> None:
    client = _mock(fake_clock, _split(wire), encoding)
    assert [p.id for page in client.list_pets() for p in page.pets] == [1]


@pytest.mark.parametrize(
    ("encoding", "wire", "reason"),
    [
        ("gzip", gzip.compress(PAGE) + b"trailing junk", "bytes follow the end of the body"),
        ("gzip", gzip.compress(PAGE)[:-4], "the body stops before its end"),
        ("gzip", _flipped(gzip.compress(PAGE), -8), "incorrect data check"),
        ("gzip", _flipped(gzip.compress(PAGE), -2), "incorrect length check"),
        ("deflate", _deflate(PAGE, zlib.MAX_WBITS) + b"x", "bytes follow the end of the body"),
        ("deflate", _deflate(PAGE, zlib.MAX_WBITS)[:-2], "the body stops before its end"),
    ],
    ids=["gzip-junk-after", "gzip-truncated", "gzip-crc", "gzip-length", "zlib-junk", "zlib-cut"],
)
def test_a_coded_body_must_be_whole_and_nothing_more(
    encoding: str, wire: bytes, reason: str, fake_clock: FakeClock
) -> None:
    client = _mock(fake_clock, _split(wire), encoding)
    with pytest.raises(ProtocolError) as caught:
        list(client.list_pets())
    assert str(caught.value) == (
        f"GET https://petstore.test/v1/pets?limit=100 answered a {encoding} body that cannot "
        f"be decoded ({reason}); report it to the API owner"
    ) or reason in str(caught.value)


def test_a_body_at_the_limit_passes_and_one_byte_more_fails(fake_clock: FakeClock) -> None:
    body = PAGE + b" " * (200 - len(PAGE))
    assert list(_mock(fake_clock, _split(body), None, limit=200).list_pets())
    assert list(_mock(fake_clock, [gzip.compress(body)], "gzip", limit=200).list_pets())
    with pytest.raises(ProtocolError, match="^GET .* answered a body larger than the response"):
        list(_mock(fake_clock, _split(body + b" "), None, limit=200).list_pets())
    with pytest.raises(ProtocolError, match="^GET .* gzip body that inflates to more than the"):
        list(_mock(fake_clock, [gzip.compress(body + b" ")], "gzip", limit=200).list_pets())


@pytest.mark.parametrize("encoding", [None, "gzip"])
def test_a_body_near_the_limit_is_held_once_not_twice(encoding: str | None) -> None:
    size = 8 * MiB
    chunks: Iterable[bytes] = zeros(size) if encoding is None else gzip_bomb(size)
    headers = {"Content-Encoding": encoding or "identity"}
    answer = _streamed(httpx.Response(200, headers=headers, stream=Streamed(chunks)))
    tracemalloc.start()
    try:
        body = read_body(answer, size, "GET", "u")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(body) == size
    assert peak < size * 1.3  # joining the pieces would hold the body twice


@pytest.mark.parametrize("held", [True, False], ids=["held-by-the-wire", "streamed"])
def test_a_body_is_read_the_same_held_whole_or_streamed(held: bool) -> None:
    # The wire's answers hold their pieces; any other stream comes through httpx's: the
    # same bytes, the same framing headers (repeated fields joined, names in any case).
    def answer(pieces: list[bytes], headers: list[tuple[bytes, bytes]]) -> Answer:
        if held:
            return Answer(200, AnswerHeaders(headers), pieces)
        return _streamed(httpx.Response(200, headers=headers, stream=Streamed(pieces)))

    pieces = [gzip.compress(PAGE)[:10], gzip.compress(PAGE)[10:]]
    coded = answer(pieces, [(b"content-encoding", b"identity"), (b"Content-Encoding", b"gzip")])
    assert read_body(coded, 1000, "GET", "u") == PAGE
    repeated = answer([b"x" * 5000], [(b"Content-Length", b"5"), (b"content-length", b"5")])
    with pytest.raises(ProtocolError, match="answered a body larger than"):
        read_body(repeated, 1000, "GET", "u")  # "5, 5" is no number: read, then refused


def _streamed(response: httpx.Response) -> Answer:
    """``response`` as the client receives it from an httpx transport."""
    exchange = HttpxExchange(httpx.MockTransport(lambda request: response))
    return exchange.send("GET", "http://t/v1/pets", [], None)


def test_one_network_chunk_inflates_a_piece_at_a_time() -> None:
    wire = b"".join(gzip_bomb(8 * MiB))  # one chunk of ~8 KB that inflates to 8 MiB
    pieces = [len(piece) for piece in inflate([wire], "gzip", 16 * MiB, "GET u")]
    assert max(pieces) == PIECE and sum(pieces) == 8 * MiB


@pytest.mark.parametrize(
    ("encoding", "wire", "message"),
    [
        (
            "br",
            b"\x1b\x00",
            f"GET {URL} answered with Content-Encoding 'br', which petsync did not ask for (it "
            "accepts gzip, deflate); report it to the API owner",
        ),
        (
            "gzip",
            GZIP_HEADER + b"\xff" * 20,
            f"GET {URL} answered a gzip body that cannot be decoded (Error -3 while decompressing "
            "data: invalid block type); report it to the API owner",
        ),
    ],
    ids=["unasked-coding", "corrupt-gzip"],
)
def test_an_undecodable_body_is_a_protocol_error_naming_the_url(
    encoding: str, wire: bytes, message: str, fake_clock: FakeClock
) -> None:
    with pytest.raises(ProtocolError) as caught:
        list(_mock(fake_clock, [wire], encoding).list_pets())
    assert str(caught.value) == message


def test_the_client_asks_only_for_what_it_decodes(fake_clock: FakeClock) -> None:
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers["Accept-Encoding"])
        return httpx.Response(200, json=[])

    config = ClientConfig(BASE, ApiKey("k"), pagination="none")
    list(PetstoreClient(config, transport=httpx.MockTransport(handler)).list_pets())
    assert seen == ["gzip, deflate"]


# -- JSON nesting ---------------------------------------------------------------------------------


def _nested(levels: int, inner: bytes = b"1") -> bytes:
    return b"[" * levels + inner + b"]" * levels


def _answering(fake_clock: FakeClock, status: int, body: bytes) -> PetstoreClient:
    transport = httpx.MockTransport(
        lambda request: httpx.Response(
            status, content=body, headers={"Content-Type": "application/json"}
        )
    )
    config = ClientConfig(BASE, ApiKey("k"), pagination="none", retry=RetryPolicy(max_attempts=1))
    return PetstoreClient(config, transport=transport, sleep=fake_clock.sleep, clock=fake_clock)


def test_a_page_nested_200000_levels_deep_is_a_protocol_error(fake_clock: FakeClock) -> None:
    with pytest.raises(ProtocolError) as caught:
        list(_answering(fake_clock, 200, _nested(200_000)).list_pets())
    assert str(caught.value) == (
        f"GET {URL} answered JSON nested deeper than 100 levels; listPets must return a JSON "
        "array of flat Pet objects: report it to the API owner"
    )


def test_a_kept_record_nested_too_deep_fails_the_page(fake_clock: FakeClock) -> None:
    deep = b'[{"id": 1, "name": "a", "categoryId": 2}, {"id": ' + _nested(99) + b"}]"
    with pytest.raises(ProtocolError) as caught:
        list(_answering(fake_clock, 200, deep).list_pets())
    assert str(caught.value) == (
        f"GET {URL} answered a record nested deeper than 100 levels (the page's array "
        "included); listPets must return a JSON array of flat Pet objects: report it to the "
        "API owner"
    )


def test_records_nested_within_the_bound_are_kept_and_extra_fields_of_pets_are_dropped(
    fake_clock: FakeClock,
) -> None:
    body = (
        b'[{"id": 1, "name": "a", "categoryId": 2, "extra": ' + _nested(500) + b"},"
        b' {"id": ' + _nested(97) + b"}]"
    )
    page = next(iter(_answering(fake_clock, 200, body).list_pets()))
    assert [p.id for p in page.pets] == [1]
    assert len(page.invalid) == 1 and not nested_deeper_than(page.invalid[0].record, 98)


def test_a_deeply_nested_error_body_is_shown_as_an_excerpt(fake_clock: FakeClock) -> None:
    with pytest.raises(ApiError) as caught:
        list(_answering(fake_clock, 400, _nested(200_000)).list_pets())
    assert caught.value.excerpt == "[" * 200 + "... (400001 characters, cut)"


def test_a_201_nested_too_deep_to_be_a_pet_says_it_was_probably_created(
    fake_clock: FakeClock,
) -> None:
    body = b'{"id": 1, "name": ' + _nested(990, b'"x"') + b', "categoryId": 2}'
    with pytest.raises(ProtocolError, match="the pet was probably created"):
        _answering(fake_clock, 201, body).create_pet(NewPet("a", 2))


@pytest.mark.parametrize(
    ("value", "levels", "expected"),
    [
        (1, 0, False),
        ([], 0, True),
        ([], 1, False),
        ({"a": [{"b": []}]}, 3, True),
        ({"a": [{"b": []}]}, 4, False),
        ([[1], [[2]]], 2, True),
    ],
    ids=["scalar", "empty-list", "empty-list-fits", "mixed-over", "mixed-fits", "siblings"],
)
def test_nested_deeper_than(value: object, levels: int, expected: bool) -> None:
    assert nested_deeper_than(value, levels) is expected
