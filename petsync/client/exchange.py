"""The seam below the client: one request sent, one answer received, and nothing else.

A request is a method, a URL (text, as httpx writes it), the header fields petsync adds
(``Host`` and ``Content-Length`` are the wire's to write) and a body; an :class:`Answer` is a
status, the header fields and the body as it came (still in its content coding: the client
decodes it within its own limit, :mod:`petsync.client.body`). :class:`Exchange` is all the
client asks of the wire. Production's is :class:`~petsync.client.wire.CurlExchange`
(libcurl); :class:`HttpxExchange` carries the same exchange through any httpx transport, so
a test's ``httpx.MockTransport`` (or respx) sits below the same client code.

:class:`Transfers` is the same seam for many requests in flight from one thread (the
import's POSTs): libcurl's multi interface in production, the exchange itself, one request
after another, in a test (:mod:`petsync.client.multi`).

No httpx request or response is built on production's path: a page costs its bytes, a few
header lines and this module's two small objects. Failures are httpx's exceptions, the
contract the translator (:mod:`petsync.client.failures`) reads.
"""

from __future__ import annotations

import codecs
import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from email.message import Message
from typing import Protocol, TypeVar, overload

import httpx

# The header fields of a request, as (name, value) pairs: prepared once by the client and
# handed over as the same object, so the wire can tell them unchanged at a glance.
RequestHeaders = Sequence[tuple[bytes, bytes]]

_T = TypeVar("_T")


class AnswerHeaders(Mapping[str, str]):
    """An answer's header fields, read as ``httpx.Headers`` reads them.

    Names are case-insensitive; a repeated field is its values joined by ``", "`` (one each
    from :meth:`get_list`); text is decoded as ASCII, else UTF-8, else Latin-1, the fields
    of one answer alike. The look-up table is built on the first look-up, in one pass.
    """

    __slots__ = ("_fields", "raw")

    def __init__(self, raw: list[tuple[bytes, bytes]]) -> None:
        self.raw = raw
        self._fields: dict[str, list[str]] | None = None

    @property
    def encoding(self) -> str:
        """The text encoding of every field of this answer."""
        if all(map(bytes.isascii, itertools.chain.from_iterable(self.raw))):
            return "ascii"
        try:
            for name, value in self.raw:
                name.decode("utf-8")
                value.decode("utf-8")
        except UnicodeDecodeError:
            return "iso-8859-1"
        return "utf-8"

    def _table(self) -> dict[str, list[str]]:
        fields = self._fields
        if fields is None:
            encoding = self.encoding
            fields = {}
            for name, value in self.raw:
                key = name.lower().decode(encoding)
                decoded = value.decode(encoding)
                if key in fields:
                    fields[key].append(decoded)
                else:
                    fields[key] = [decoded]
            self._fields = fields
        return fields

    @overload
    def get(self, key: str, /) -> str | None: ...

    @overload
    def get(self, key: str, default: str, /) -> str: ...

    @overload
    def get(self, key: str, default: _T, /) -> str | _T: ...

    def get(self, key: str, default: object = None, /) -> object:
        if self._fields is None and key.isascii():
            # Before any table: a scan of the few raw fields. An ASCII value reads the same
            # in all three encodings, so only a non-ASCII one needs the table's.
            wanted = key.lower().encode("ascii")
            found = [value for name, value in self.raw if name.lower() == wanted]
            if not found:
                return default
            if all(map(bytes.isascii, found)):
                return ", ".join([value.decode("ascii") for value in found])
        values = self._table().get(key.lower())
        return ", ".join(values) if values else default

    def get_list(self, key: str) -> list[str]:
        """Every value of the field ``key``, in the order they came."""
        return list(self._table().get(key.lower(), ()))

    def __getitem__(self, key: str) -> str:
        values = self._table().get(key.lower())
        if not values:
            raise KeyError(key)
        return ", ".join(values)

    def __iter__(self) -> Iterator[str]:
        return iter(self._table())

    def __len__(self) -> int:
        return len(self._table())

    def __repr__(self) -> str:
        return f"AnswerHeaders({self.raw!r})"

    def charset(self) -> str | None:
        """The ``charset`` of ``Content-Type`` when Python knows it (as httpx's
        ``Response.encoding`` reads it), else None."""
        content_type = self.get("content-type")
        if content_type is None:
            return None
        message = Message()
        message["content-type"] = content_type
        charset = message.get_content_charset(failobj=None)
        if charset is None:
            return None
        try:
            codecs.lookup(charset)
        except LookupError:
            return None
        return charset


class Answer:
    """What came back: ``status``, ``headers``, and the body's ``pieces`` as received.

    ``coded`` is False for a body that was decoded already (an httpx response a mock built
    in memory). ``close`` releases what the body's pieces still hold (a streamed answer).
    """

    __slots__ = ("_release", "coded", "headers", "pieces", "status")

    def __init__(
        self,
        status: int,
        headers: AnswerHeaders,
        pieces: Iterable[bytes],
        *,
        coded: bool = True,
        release: Callable[[], None] | None = None,
    ) -> None:
        self.status = status
        self.headers = headers
        self.pieces = pieces
        self.coded = coded
        self._release = release

    def close(self) -> None:
        if self._release is not None:
            self._release()


class Exchange(Protocol):
    """The wire, as the client sees it: one request in, one :class:`Answer` out."""

    def send(self, method: str, url: str, headers: RequestHeaders, body: bytes | None) -> Answer:
        """Send one request (no retry here); raise httpx's exceptions for what failed."""
        ...

    def close(self) -> None: ...


class Transfers(Protocol):
    """Many requests in flight at once, driven from one thread: each started with a tag,
    its outcome collected when it ends (:mod:`petsync.client.multi`)."""

    def start(
        self, tag: int, method: str, url: str, headers: RequestHeaders, body: bytes | None
    ) -> None:
        """Start one request (no retry here); its outcome comes from :meth:`finished`."""
        ...

    def finished(self, timeout: float) -> list[tuple[int, Answer | Exception]]:
        """The requests that ended since the last call, each with its answer or the httpx
        exception it failed with; waits up to ``timeout`` seconds when none has yet."""
        ...

    def close(self) -> None: ...


class HttpxExchange:
    """The exchange over an httpx transport: a test's mock, or any other the caller gives.

    The request is the one ``httpx.Client`` would send (``Host`` put on by httpx, and
    ``Content-Length`` where its ``json=`` puts it; ``extensions`` as given: the timeouts).
    A response built in memory (``httpx.Response(200, json=...)``) was decoded by httpx
    already and is handed over as such; a streamed one is read piece by piece as the client
    takes it, then closed.
    """

    def __init__(
        self, transport: httpx.BaseTransport, extensions: dict[str, object] | None = None
    ) -> None:
        self.transport = transport
        self._extensions = extensions or {}

    def send(self, method: str, url: str, headers: RequestHeaders, body: bytes | None) -> Answer:
        fields = list(headers)
        if body is not None:  # in the order of httpx's own json= request: Content-Type last
            typed = [(k, v) for k, v in fields if k.lower() == b"content-type"]
            fields = [(k, v) for k, v in fields if k.lower() != b"content-type"]
            fields += [(b"Content-Length", b"%d" % len(body)), *typed]
        request = httpx.Request(
            method, url, headers=fields, content=body, extensions=self._extensions
        )
        response = self.transport.handle_request(request)
        answered = AnswerHeaders(list(response.headers.raw))
        if response.is_stream_consumed or isinstance(response.stream, httpx.ByteStream):
            content = response.read()
            response.close()
            return Answer(response.status_code, answered, (content,), coded=False)
        return Answer(response.status_code, answered, response.iter_raw(), release=response.close)

    def close(self) -> None:
        self.transport.close()
