"""The listings' hot path: one connection per listing, below httpx's Client.

A listing fetches thousands of pages one after another from one origin with the same
headers. httpx's ``Client.send`` rebuilds per request what never changes here (merged
headers, the auth flow, cookies, URL checks, a Response object); with several listings in
threads sharing one client, they also queue on its pool's lock. :class:`DirectReader` gives
each listing a connection of its own and computes the request headers once (the key is put
on them by :class:`~petsync.client.auth.BearerAuth`, as on every request):

* the direct route (no proxy): :class:`~petsync.client.http11.Http11Connection`, a lean
  HTTP/1.1 connection on the deadline backend's streams;
* a proxied route: an httpcore pool of one connection, built by the same
  :func:`~petsync.client.transport.build_pool` as the client's transport.

Either way every socket operation keeps to the request deadline, errors are httpcore's own
under httpx's mapping (so :mod:`petsync.client.failures` translates them exactly as before),
the body is read by :func:`~petsync.client.body.read_stream` within ``max_response_bytes``,
and every attempt goes through the client's retry loop.

The one httpx internal relied on is ``httpx._transports.default.map_httpcore_exceptions``;
``tests/client/test_page_reader.py`` fails if it moves.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, TypeVar

import httpcore
import httpx
from httpx._transports.default import map_httpcore_exceptions

from petsync.client.body import read_stream
from petsync.client.http11 import Http11Connection
from petsync.client.pagination import PageRequest, origin_text
from petsync.client.records import Records, decode_page
from petsync.client.transport import Pool

if TYPE_CHECKING:
    from petsync.client.listing import Tally

RawHeaders = list[tuple[bytes, bytes]]
_T = TypeVar("_T")
_BODY_HEADERS = (b"content-encoding", b"content-length", b"transfer-encoding")


class StatusRefused(Exception):
    """An answer outside 2xx, read and kept for the failure translator (never leaves the client)."""

    def __init__(self, response: httpx.Response, body: bytes | bytearray) -> None:
        super().__init__(response.status_code)
        self.response = response
        self.body = body


class Sender(Protocol):
    """What a reader needs from the client: its retry loop (see ``PetstoreClient._retrying``)."""

    def _retrying(
        self, method: str, url: str, tally: Tally | None, attempt: Callable[[str], _T]
    ) -> _T: ...


class DirectReader:
    """Fetches one listing's pages over its own connection (see the module docstring).

    ``list_request`` is the listing's first request as httpx would send it, headers and
    authentication applied; ``pool`` is the listing's own pool, closed by :meth:`close`.
    """

    def __init__(
        self,
        sender: Sender,
        list_request: httpx.Request,
        pool: Pool,
        timeouts: dict[str, float | None],
        max_response_bytes: int,
        direct: Http11Connection | None = None,
    ) -> None:
        url = list_request.url
        self._sender = sender
        self._pool = pool
        self._direct = direct
        self._origin = origin_text(url)
        self._scheme, self._host, self._port = url.raw_scheme, url.raw_host, url.port
        self._origin_url = httpcore.URL(url=str(url)).origin
        self._headers: RawHeaders = list(list_request.headers.raw)
        self._extensions = {"timeout": timeouts}
        self._limit = max_response_bytes

    def fetch(self, request: PageRequest, tally: Tally) -> tuple[httpx.Headers, Records]:
        headers, body, shown = self._sender._retrying(
            "GET", request.text, tally, lambda shown: self._get(request, shown)
        )
        return httpx.Headers(headers), decode_page(body, 200, shown)

    def close(self) -> None:
        if self._direct is not None:
            self._direct.close()
        self._pool.close()

    def _target(self, request: PageRequest) -> httpcore.URL:
        text = request.text
        if text.startswith(self._origin) and text[len(self._origin) : len(self._origin) + 1] == "/":
            target = text[len(self._origin) :].encode("ascii")
            return httpcore.URL(
                scheme=self._scheme, host=self._host, port=self._port, target=target
            )
        url = request.url
        return httpcore.URL(
            scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path
        )

    def _get(self, request: PageRequest, shown: str) -> tuple[RawHeaders, bytes | bytearray, str]:
        """One attempt: the answer's headers and body, or StatusRefused, or an httpx error."""
        target = self._target(request)
        with map_httpcore_exceptions():
            if self._direct is not None and target.origin == self._origin_url:
                status, headers, pieces = self._direct.get(target.target)
                close = pieces.close  # an unread rest closes the connection
            else:
                answer = self._pool.handle_request(
                    httpcore.Request(
                        b"GET", target, headers=self._headers, extensions=self._extensions
                    )
                )
                status, headers, close = answer.status, answer.headers, answer.close
                pieces = answer.stream  # type: ignore[assignment]
            try:
                body = read_stream(
                    pieces,
                    header_value(headers, b"content-encoding"),
                    header_value(headers, b"content-length"),
                    self._limit,
                    "GET",
                    shown,
                )
            finally:
                close()
        if not 200 <= status < 300:  # parsing the URL costs more than the page's records
            refuse_outside_2xx(status, headers, body, "GET", request.url)
        return headers, body, shown


def refuse_outside_2xx(
    status: int, headers: RawHeaders, body: bytes | bytearray, method: str, url: httpx.URL | str
) -> None:
    """Raise :class:`StatusRefused` for an answer outside 2xx (with an httpx Response of it,
    for the failure translator)."""
    if not 200 <= status < 300:
        # The body is read and decoded already: the Response holds it as plain content.
        response = httpx.Response(
            status,
            headers=[(k, v) for k, v in headers if k.lower() not in _BODY_HEADERS],
            content=bytes(body),
            request=httpx.Request(method, url),
        )
        raise StatusRefused(response, body)


def header_value(headers: RawHeaders, name: bytes) -> str | None:
    """The first value of a header (``name`` in lower case), as text."""
    for key, value in headers:
        if key.lower() == name:
            return value.decode("latin-1")
    return None
