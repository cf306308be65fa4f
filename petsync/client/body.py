"""A response body, bounded: its decompressed size capped, its JSON nesting limited.

httpx reads a whole body into memory, and its gzip decoder inflates each network chunk of up
to 64 KiB at once: deflate reaches about 1032:1, so one chunk can become 66 MB, and a 1 MB
body 1 GB. :func:`read_body` reads the raw body itself, stops as soon as the decoded bytes pass
the limit, and inflates ``gzip``/``deflate`` in pieces of at most :data:`PIECE` bytes, so memory
stays within the limit plus a piece, bombs included. A plain body (the usual page) goes
through one counting loop and no decoder.

:func:`parse_json` turns the ``RecursionError`` of a deeply nested document into a
:class:`NestingError`; :func:`nested_deeper_than` bounds what is kept of a record.
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from petsync.client.exchange import Answer
from petsync.core.errors import ProtocolError
from petsync.core.settings_table import MAX_RESPONSE_SIZE
from petsync.core.text import shown_text

PIECE = 64 * 1024  # the most one inflate step may produce
MAX_JSON_DEPTH = 100  # a page is an array of flat objects: depth 2
ACCEPTED_ENCODINGS = "gzip, deflate"  # what petsync asks for, and all it decodes
_WBITS = {"gzip": zlib.MAX_WBITS | 16, "x-gzip": zlib.MAX_WBITS | 16, "deflate": zlib.MAX_WBITS}

# A URL as shown to people (redacted), or how to make it: only a message needs it, so a
# page that goes well never pays for redacting its URL.
Shown = str | Callable[[], str]


def shown_of(shown: Shown) -> str:
    """The text of ``shown``, made now if it was deferred."""
    return shown if isinstance(shown, str) else shown()


def read_body(answer: Answer, limit: int, method: str, shown: Shown) -> bytes | bytearray:
    """The decoded body of an answer, at most ``limit`` bytes.

    Raises :class:`ProtocolError` naming the URL and the limit as soon as the body (or its
    announced ``Content-Length``) passes it; httpx errors while reading a streamed answer
    pass through for the client to translate. The answer is left for the caller to close.

    An answer whose body was decoded already (``coded`` False: a response a mock transport
    built in memory) is only measured.
    """
    if not answer.coded:
        return _collected(answer.pieces, limit, method, shown)
    headers = answer.headers
    coding = headers.get("content-encoding")
    length = headers.get("content-length")
    return read_stream(answer.pieces, coding, length, limit, method, shown)


def read_stream(
    raw: Iterable[bytes],
    content_encoding: str | None,
    content_length: str | None,
    limit: int,
    method: str,
    shown: Shown,
) -> bytes | bytearray:
    """The decoded body from its raw pieces and headers, at most ``limit`` bytes.

    What :func:`read_body` does for an answer, for any stream of raw body pieces: the same
    limit, refusals and decoding.
    """
    codings = _codings(content_encoding, method, shown)
    if not codings:
        declared = content_length or ""
        if declared.isdigit() and int(declared) > limit:
            raise too_large(
                f"{method} {shown_of(shown)} announced a body of {int(declared)} bytes, more than",
                limit,
                started=False,
            )
        return _collected(raw, limit, method, shown)
    request = f"{method} {shown_of(shown)}"
    stream: Iterable[bytes] = raw
    for coding in reversed(codings):  # the last coding applied is the first undone
        stream = inflate(stream, coding, limit, request)
    return _collected(stream, limit, method, shown)


def _collected(pieces: Iterable[bytes], limit: int, method: str, shown: Shown) -> bytes | bytearray:
    """The pieces as one buffer, failing past ``limit``; within the limit plus a piece.

    A body that came in one piece (the usual page) is returned as it is, uncopied; more
    pieces grow one buffer in place, so the body is never held twice (as ``b"".join`` would
    while it copies).
    """
    first: bytes | None = None
    buffer: bytearray | None = None
    size = 0
    for piece in pieces:
        size += len(piece)
        if size > limit:
            raise too_large(f"{method} {shown_of(shown)} answered a body larger than", limit)
        if first is None:
            first = piece
        elif buffer is None:
            buffer = bytearray(first)
            buffer += piece
        else:
            buffer += piece
    if buffer is not None:
        return buffer
    return first if first is not None else b""


def _codings(header: str | None, method: str, shown: Shown) -> list[str]:
    if header is None:
        return []
    codings = [c.strip().lower() for c in header.split(",") if c.strip().lower() != "identity"]
    for coding in codings:
        if coding not in _WBITS:
            raise ProtocolError(
                f"{method} {shown_of(shown)} answered with Content-Encoding "
                f"{shown_text(coding, 40)!r}, "
                f"which petsync did not ask for (it accepts {ACCEPTED_ENCODINGS}); report it to "
                "the API owner"
            )
    return codings


def inflate(chunks: Iterable[bytes], coding: str, limit: int, request: str) -> Iterator[bytes]:
    """Undo one content coding in pieces of at most PIECE bytes, failing past ``limit``.

    Every stage is held to the limit, so a bomb nested in several codings cannot make an
    inner stage churn through more than ``limit`` bytes either. The coded body must be
    whole and nothing else: zlib checks each gzip member's CRC-32 and length (and a zlib
    stream's Adler-32); a gzip body of several members (RFC 1952 2.2) is read to its last
    member; a body that stops before its end, or has bytes after it, is refused. An empty
    body is an empty answer.
    """
    over = f"{request} answered a {coding} body that inflates to more than"
    decoder = zlib.decompressobj(_WBITS[coding])
    started = False
    size = 0
    for chunk in chunks:
        data = chunk
        pending = False  # the decoder holds output it could not hand over within PIECE
        while data or pending:
            if decoder.eof:  # the previous member ended: a next one, or bytes after the end
                if coding == "deflate" or not _GZIP_MAGIC.startswith(data[:2]):
                    raise _undecodable(request, coding, "bytes follow the end of the body")
                decoder = zlib.decompressobj(_WBITS[coding])
            try:
                piece = decoder.decompress(data, PIECE)
            except zlib.error as exc:
                if not started and coding == "deflate":  # raw deflate, without a zlib header
                    decoder = zlib.decompressobj(-zlib.MAX_WBITS)
                    started = True
                    continue
                raise _undecodable(request, coding, str(exc)) from exc
            started = True
            size += len(piece)
            if size > limit:
                raise too_large(over, limit)
            if piece:
                yield piece
            data = decoder.unused_data if decoder.eof else decoder.unconsumed_tail
            pending = not data and not decoder.eof and len(piece) == PIECE
    if started and not decoder.eof:
        raise _undecodable(request, coding, "the body stops before its end")


_GZIP_MAGIC = b"\x1f\x8b"


def too_large(subject: str, limit: int, *, started: bool = True) -> ProtocolError:
    done = "stopped reading it" if started else "did not read it"
    return ProtocolError(
        f"{subject} the response size limit of {_size(limit)}; petsync {done}. A page of "
        "100 pets is about 10 KB: if answers this large are expected, raise the limit with "
        + MAX_RESPONSE_SIZE
    )


def _undecodable(request: str, coding: str, reason: str) -> ProtocolError:
    return ProtocolError(
        f"{request} answered a {coding} body that cannot be decoded ({reason}); "
        "report it to the API owner"
    )


def _size(size: int) -> str:
    """Bytes, with MiB or KiB when exact (``32 MiB (33554432 bytes)``)."""
    for unit, factor in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= factor and size % factor == 0:
            return f"{size // factor} {unit} ({size} bytes)"
    return f"{size} bytes"


class NestingError(ValueError):
    """A JSON document nested deeper than petsync reads."""


def parse_json(body: bytes | bytearray, **hooks: Any) -> object:
    """Decode a JSON body; ValueError when it is not JSON, NestingError when nested too deep.

    A normal document costs nothing extra: the depth is only measured when the parser ran
    out of stack (``RecursionError``), to say how deep it went. ``hooks`` go to
    ``json.loads`` (``object_pairs_hook``, ``parse_int``).
    """
    try:
        result: object = json.loads(body, **hooks)
    except RecursionError:
        raise NestingError(_nesting_message(body)) from None
    return result


# A string runs to its closing quote or, unterminated, to the end of the body: either way it
# is one match, so a body of escaped quotes is scanned once, not once per quote.
_TOKEN = re.compile(rb'"(?:[^"\\]++|\\.)*+(?:"|\Z)|[\[\]{}]')


def _nesting_message(body: bytes | bytearray) -> str:
    depth = deepest = 0
    for match in _TOKEN.finditer(body):
        token = match.group()
        if token in (b"[", b"{"):
            depth += 1
            if depth > MAX_JSON_DEPTH:
                return f"JSON nested deeper than {MAX_JSON_DEPTH} levels"
            deepest = max(deepest, depth)
        elif token in (b"]", b"}"):
            depth -= 1
    # The parser ran out of stack above a shallower document (a deep caller): say so.
    return f"JSON nested {deepest} levels deep, more than petsync could parse here"


def nested_deeper_than(value: object, levels: int) -> bool:
    """True when decoded JSON ``value`` nests arrays and objects more than ``levels`` deep.

    Iterative, so it cannot itself run out of stack; it stops at the first path too deep.

    >>> nested_deeper_than([[1]], 2), nested_deeper_than([[[1]]], 2)
    (False, True)
    """
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Iterable[object] = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        depth += 1
        if depth > levels:
            return True
        stack.extend((child, depth) for child in children)
    return False
