"""A total deadline for one HTTP attempt: connect, send, headers and the whole body.

httpx's timeouts bound each network operation, not the request: a server that drips one
byte every half second never trips a 30 s read timeout. :class:`DeadlineBackend` is an httpcore
network backend whose streams clamp the timeout of every ``connect``, ``read``, ``write`` and
TLS handshake to the time left before the current request's deadline, and fail at once when
none is left. It sits under httpcore's HTTP/1.1 code, so the status line and headers are
bounded as well as the body, whatever the server drips.

The deadline belongs to the thread sending the request (:class:`RequestDeadline`): a
connection serves one request at a time, and a sync httpx request, body included, runs in
the thread that sent it. The cost is one clock read per socket operation, and two attribute
writes per request; nothing runs per byte.

Not bounded by it: resolving the host name (``getaddrinfo`` blocks and takes no timeout).
Bounded by a small multiple of it, where one call loops inside: connecting to a name with
several addresses (``socket.create_connection`` tries each within the time left), and a
write the kernel takes piecemeal (httpcore clamps each ``send``; petsync's bodies are a few
hundred bytes). The TLS handshake is bounded as a whole (Python's ``ssl`` uses the socket
timeout as the handshake's deadline).
"""

from __future__ import annotations

import threading
import time
import typing
from collections.abc import Callable, Iterable

import httpcore

if typing.TYPE_CHECKING:
    import ssl


class _Current(threading.local):
    at: float | None = None  # the deadline of this thread's request, on the deadline's clock
    seconds: float = 0.0  # its length, for messages


class RequestDeadline:
    """The deadline of the request each thread is sending, if any.

    The client calls :meth:`start` before sending and :meth:`clear` once the body is read;
    :class:`DeadlineBackend` streams read it at every socket operation. ``clock`` is
    monotonic seconds (real time: the sockets wait in real time).
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._current = _Current()

    def start(self, seconds: float) -> None:
        current = self._current
        current.at = self._clock() + seconds
        current.seconds = seconds

    def clear(self) -> None:
        self._current.at = None

    def passed(self) -> bool:
        """True when this thread's request has a deadline and it has passed."""
        at = self._current.at
        return at is not None and self._clock() >= at

    def clamp(
        self, timeout: float | None, timeout_error: type[Exception]
    ) -> tuple[float | None, bool]:
        """The timeout for the next socket operation, and whether the deadline set it.

        When no time is left, raises ``timeout_error`` (the httpcore timeout of that
        operation, which httpx maps to its own) before the operation starts.
        """
        at = self._current.at
        if at is None:
            return timeout, False
        left = at - self._clock()
        if left <= 0:
            raise timeout_error(self.message())
        if timeout is None or left < timeout:
            return left, True
        return timeout, False

    def message(self) -> str:
        return f"no complete answer within the request timeout of {self._current.seconds:g} s"


class DeadlineBackend(httpcore.NetworkBackend):
    """An httpcore network backend whose streams keep to the current request's deadline."""

    def __init__(
        self, deadline: RequestDeadline, backend: httpcore.NetworkBackend | None = None
    ) -> None:
        self._deadline = deadline
        self._backend = backend if backend is not None else httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        limit, by_deadline = self._deadline.clamp(timeout, httpcore.ConnectTimeout)
        try:
            stream = self._backend.connect_tcp(host, port, limit, local_address, socket_options)
        except httpcore.ConnectTimeout as exc:
            if by_deadline:
                raise httpcore.ConnectTimeout(self._deadline.message()) from exc
            raise
        return DeadlineStream(stream, self._deadline)

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        limit, _ = self._deadline.clamp(timeout, httpcore.ConnectTimeout)
        stream = self._backend.connect_unix_socket(path, limit, socket_options)
        return DeadlineStream(stream, self._deadline)

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


class DeadlineStream(httpcore.NetworkStream):
    """A network stream whose reads, writes and TLS handshake keep to the deadline."""

    def __init__(self, stream: httpcore.NetworkStream, deadline: RequestDeadline) -> None:
        self._stream = stream
        self._deadline = deadline

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        limit, by_deadline = self._deadline.clamp(timeout, httpcore.ReadTimeout)
        try:
            return self._stream.read(max_bytes, limit)
        except httpcore.ReadTimeout as exc:
            if by_deadline:
                raise httpcore.ReadTimeout(self._deadline.message()) from exc
            raise

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:  # h11 ends a bodiless request with an empty write: nothing to bound
            return
        limit, by_deadline = self._deadline.clamp(timeout, httpcore.WriteTimeout)
        try:
            self._stream.write(buffer, limit)
        except httpcore.WriteTimeout as exc:
            if by_deadline:
                raise httpcore.WriteTimeout(self._deadline.message()) from exc
            raise

    def close(self) -> None:
        self._stream.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        limit, by_deadline = self._deadline.clamp(timeout, httpcore.ConnectTimeout)
        try:
            stream = self._stream.start_tls(ssl_context, server_hostname, limit)
        except httpcore.ConnectTimeout as exc:
            if by_deadline:
                raise httpcore.ConnectTimeout(self._deadline.message()) from exc
            raise
        return DeadlineStream(stream, self._deadline)

    def get_extra_info(self, info: str) -> typing.Any:
        return self._stream.get_extra_info(info)
