"""Many requests in flight from one thread: libcurl's multi interface, and its twin for tests.

:class:`CurlTransfers` drives libcurl's multi interface: each request started is an easy
handle set up exactly as :class:`~petsync.client.wire.CurlExchange` sets up its own (the same
deadline, size cap, route, certificates, and a body libcurl cannot rewind), added to one
multi handle whose connections are kept alive between requests; :meth:`~CurlTransfers.finished`
waits on every socket at once and hands each ended transfer back with its answer, or
libcurl's failure translated as the exchange translates it. No thread waits on a socket, so
none contends for the interpreter's lock in libcurl's callbacks, and the handles are reused:
a request costs its bytes and a few calls.

:class:`ExchangeTransfers` is the same seam over any
:class:`~petsync.client.exchange.Exchange`, one request after another: a test's httpx
transport below the same client code that drives libcurl in production.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass

import pycurl

from petsync.client.exchange import Answer, Exchange, RequestHeaders, Transfers
from petsync.client.wire import CurlExchange, CurlHandle

# The longest libcurl is left alone when it has no socket to wait on (a connection being
# set up by its resolver thread): its work is then driven by timeouts, not by sockets.
IDLE_SECONDS = 0.001


@dataclass
class _Transfer:
    tag: int
    handle: CurlHandle
    method: str
    url: str


class CurlTransfers:
    """Requests in flight on libcurl's multi interface, set up as ``exchange`` sets up its own.

    One thread only: the caller's. The handles are this object's (closed by :meth:`close`),
    one per request in flight at the busiest moment, each reused for the next request.
    """

    def __init__(self, exchange: CurlExchange) -> None:
        self._exchange = exchange
        self._multi = pycurl.CurlMulti()
        self._free: list[CurlHandle] = []
        self._running: dict[pycurl.Curl, _Transfer] = {}

    def start(
        self, tag: int, method: str, url: str, headers: RequestHeaders, body: bytes | None
    ) -> None:
        handle = self._free.pop() if self._free else self._exchange.new_handle()
        self._exchange.prepare(handle, method, url, headers, body)
        self._multi.add_handle(handle.curl)
        self._running[handle.curl] = _Transfer(tag, handle, method, url)

    def finished(self, timeout: float) -> list[tuple[int, Answer | Exception]]:
        done: list[tuple[int, Answer | Exception]] = []
        self._drive(done)
        if done or not self._running or timeout <= 0:
            return done
        due = self._multi.timeout()  # when libcurl next has work of its own (ms; -1: none)
        if due >= 0:
            timeout = min(timeout, due / 1000)
        began = time.monotonic()
        if self._multi.select(timeout) <= 0 and time.monotonic() - began < timeout:
            # Back at once with no socket ready: libcurl had none to wait on. Do not spin.
            time.sleep(min(timeout, IDLE_SECONDS))
        self._drive(done)
        return done

    def _drive(self, done: list[tuple[int, Answer | Exception]]) -> None:
        multi = self._multi
        while multi.perform()[0] == pycurl.E_CALL_MULTI_PERFORM:
            pass
        while True:
            queued, ended, failed = multi.info_read()
            for curl in ended:
                transfer = self._ended(curl)
                done.append((transfer.tag, transfer.handle.answered()))
            for curl, code, message in failed:
                transfer = self._ended(curl)
                error = pycurl.error(code, message)
                failure = self._exchange.translated(
                    transfer.handle, error, transfer.method, transfer.url
                )
                done.append((transfer.tag, failure))
            if not queued:
                return

    def _ended(self, curl: pycurl.Curl) -> _Transfer:
        transfer = self._running.pop(curl)
        self._multi.remove_handle(curl)
        transfer.handle.done(transfer.method)
        self._free.append(transfer.handle)
        return transfer

    def close(self) -> None:
        for curl in list(self._running):
            self._multi.remove_handle(curl)
            curl.close()
        self._running.clear()
        for handle in self._free:
            handle.curl.close()
        self._free.clear()
        self._multi.close()


class ExchangeTransfers:
    """Requests over one exchange, sent one after another when their outcomes are asked for.

    What a test's httpx transport (:class:`~petsync.client.exchange.HttpxExchange`) gives
    the code that drives many requests: the same starts and outcomes, in the order started.
    The exchange stays its owner's to close.
    """

    def __init__(self, exchange: Exchange) -> None:
        self._exchange = exchange
        self._queued: deque[tuple[int, str, str, RequestHeaders, bytes | None]] = deque()

    def start(
        self, tag: int, method: str, url: str, headers: RequestHeaders, body: bytes | None
    ) -> None:
        self._queued.append((tag, method, url, headers, body))

    def finished(self, timeout: float) -> list[tuple[int, Answer | Exception]]:
        done: list[tuple[int, Answer | Exception]] = []
        while self._queued:
            tag, method, url, headers, body = self._queued.popleft()
            try:
                outcome: Answer | Exception = self._exchange.send(method, url, headers, body)
            except Exception as exc:  # the seam's failures, and a test transport's own
                outcome = exc
            done.append((tag, outcome))
        return done

    def close(self) -> None:
        self._queued.clear()


def transfers_over(exchange: Exchange) -> Transfers:
    """The transfers for ``exchange``: libcurl's multi interface for libcurl's exchange, else
    the exchange itself, one request after another."""
    if isinstance(exchange, CurlExchange):
        return CurlTransfers(exchange)
    return ExchangeTransfers(exchange)
