"""A lean HTTP/1.1 GET over one kept-alive connection: the listings' direct route.

A listing sends thousands of GETs with the same headers to one origin and reads answers of
a few kilobytes. h11 and httpcore validate and re-encode every header of every request and
run a state machine per event; that is most of a page's cost once the body is decoded in C.
:class:`Http11Connection` writes the request head prepared once per listing (only the target
changes) and reads the answer in a few ``recv`` calls: the status line and headers (at most
:data:`MAX_HEAD_BYTES`), then a body framed by ``Content-Length``, ``chunked`` or the end of
the connection, handed as raw pieces to :func:`~petsync.client.body.read_stream` (size cap,
gzip/deflate in bounded pieces).

It runs on the streams of :class:`~petsync.client.deadline.DeadlineBackend`, so every socket
operation keeps to the request's deadline; it is used only for the direct route (no proxy:
a proxied listing goes through httpcore's proxy pool); what breaks HTTP/1.1 raises httpcore's
``RemoteProtocolError`` and the socket errors are httpcore's own, so httpx's mapping and
:mod:`petsync.client.failures` see exactly the exceptions httpcore would have raised.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Callable, Generator, Iterator

import httpcore
from httpcore._utils import is_socket_readable

MAX_HEAD_BYTES = 64 * 1024  # status line and headers of one answer
MAX_CHUNK_LINE = 4096  # a chunk-size line with its extensions
READ_BYTES = 64 * 1024
RawHeaders = list[tuple[bytes, bytes]]


class Http11Connection:
    """One connection to ``scheme://host:port``, opened on first use and reopened as needed.

    ``head`` is the request head without its request line (``Host`` first, each header
    ending in CRLF); :meth:`get` sends ``GET target HTTP/1.1`` with it.
    """

    def __init__(
        self,
        backend: httpcore.NetworkBackend,
        scheme: bytes,
        host: bytes,
        port: int | None,
        head: RawHeaders,
        timeouts: dict[str, float | None],
        ssl_context: ssl.SSLContext | None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._backend = backend
        self._tls = scheme == b"https"
        self._host = host.decode("ascii")
        self._port = port or (443 if self._tls else 80)
        self._head = b"".join(name + b": " + value + b"\r\n" for name, value in head) + b"\r\n"
        self._connect_timeout = timeouts.get("connect")
        self._read_timeout = timeouts.get("read")
        self._write_timeout = timeouts.get("write")
        self._ssl_context = ssl_context
        self._clock = clock
        self._stream: httpcore.NetworkStream | None = None
        self._idle_since = 0.0

    def close(self) -> None:
        if self._stream is not None:
            stream, self._stream = self._stream, None
            stream.close()

    def get(self, target: bytes) -> tuple[int, RawHeaders, Generator[bytes, None, None]]:
        """Send a GET; the status, headers and the body's raw pieces (read as consumed).

        The body must be consumed or :meth:`close` called before the next request: a body
        left unread closes the connection.
        """
        return self.send(b"GET", target)

    def send(
        self, method: bytes, target: bytes, body: bytes = b"", content_type: bytes = b""
    ) -> tuple[int, RawHeaders, Generator[bytes, None, None]]:
        """Send a request (with ``body`` and its type, if any), as :meth:`get` does."""
        request = method + b" " + target + b" HTTP/1.1\r\n" + self._head[:-2]
        if body:
            request += b"Content-Length: %d\r\nContent-Type: %s\r\n" % (len(body), content_type)
        request += b"\r\n" + body
        stream = self._ready()
        reused = self._stream is stream and self._idle_since > 0
        try:
            stream.write(request, self._write_timeout)
            status, headers, rest = self._read_head(stream, reused)
        except BaseException:
            self.close()
            raise
        return status, headers, self._body(stream, status, headers, rest)

    def _ready(self) -> httpcore.NetworkStream:
        stream = self._stream
        if stream is not None:
            # As httpcore checks before reusing a connection: readable while idle means the
            # server closed it (or sent what nobody asked for), so open a new one.
            sock = stream.get_extra_info("socket")
            if sock is None or is_socket_readable(sock):
                self.close()
                stream = None
        if stream is None:
            stream = self._backend.connect_tcp(self._host, self._port, self._connect_timeout)
            if self._tls:
                context = self._ssl_context or ssl.create_default_context()
                context.set_alpn_protocols(["http/1.1"])
                try:
                    stream = stream.start_tls(context, self._host, self._connect_timeout)
                except BaseException:
                    stream.close()
                    raise
            self._stream = stream
            self._idle_since = 0.0
        return stream

    def _read_head(
        self, stream: httpcore.NetworkStream, reused: bool
    ) -> tuple[int, RawHeaders, bytes]:
        """The status, headers and bytes after them; 1xx answers skipped."""
        buffer = b""
        while True:
            end = buffer.find(b"\r\n\r\n")
            while end < 0:
                if len(buffer) > MAX_HEAD_BYTES:
                    raise httpcore.RemoteProtocolError("Response header too large")
                data = stream.read(READ_BYTES, self._read_timeout)
                if not data:
                    if not buffer:
                        raise httpcore.RemoteProtocolError(
                            "Server disconnected without sending a response."
                        )
                    raise httpcore.RemoteProtocolError("peer closed connection in the header")
                buffer += data
                end = buffer.find(b"\r\n\r\n", max(0, len(buffer) - len(data) - 3))
            if end > MAX_HEAD_BYTES:
                raise httpcore.RemoteProtocolError("Response header too large")
            head, buffer = buffer[:end], buffer[end + 4 :]
            status, headers = _parse_head(head)
            if 100 <= status < 200 and status != 101:
                continue  # an interim answer: the real one follows
            return status, headers, buffer

    def _body(
        self, stream: httpcore.NetworkStream, status: int, headers: RawHeaders, rest: bytes
    ) -> Generator[bytes, None, None]:
        """The body's raw pieces; the connection kept for the next request if it can be."""
        lengths = [v for k, v in headers if k.lower() == b"content-length"]
        codings = b",".join(v for k, v in headers if k.lower() == b"transfer-encoding")
        closing = any(k.lower() == b"connection" and b"close" in v.lower() for k, v in headers)
        finished = False
        try:
            if status in (101, 204, 304):
                pieces: Iterator[bytes] = iter(())
                closing = closing or bool(rest)
            elif codings:
                if codings.lower().replace(b" ", b"").split(b",")[-1] != b"chunked":
                    raise httpcore.RemoteProtocolError("unsupported Transfer-Encoding")
                pieces = self._chunked(stream, rest)
            elif lengths:
                pieces = self._sized(stream, _content_length(lengths), rest)
            else:
                pieces = self._until_close(stream, rest)
                closing = True
            yield from pieces
            finished = True
        finally:
            if not finished or closing:
                self.close()
            else:
                self._idle_since = self._clock()

    def _read(self, stream: httpcore.NetworkStream) -> bytes:
        return stream.read(READ_BYTES, self._read_timeout)

    def _sized(self, stream: httpcore.NetworkStream, length: int, rest: bytes) -> Iterator[bytes]:
        if len(rest) > length:
            raise httpcore.RemoteProtocolError("the server sent more than Content-Length")
        left = length
        data = rest
        while True:
            if data:
                left -= len(data)
                yield data
            if left <= 0:
                return
            data = self._read(stream)
            if not data:
                raise httpcore.RemoteProtocolError(
                    "peer closed connection without sending complete message body: "
                    f"received {length - left} bytes, expected {length}"
                )
            if len(data) > left:
                raise httpcore.RemoteProtocolError("the server sent more than Content-Length")

    def _until_close(self, stream: httpcore.NetworkStream, rest: bytes) -> Iterator[bytes]:
        if rest:
            yield rest
        while data := self._read(stream):
            yield data

    def _chunked(self, stream: httpcore.NetworkStream, rest: bytes) -> Iterator[bytes]:
        buffer = rest
        while True:
            line, buffer = self._line(stream, buffer)
            size_text = line.split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise httpcore.RemoteProtocolError("illegal chunk size") from None
            if size < 0 or not size_text.isalnum():
                raise httpcore.RemoteProtocolError("illegal chunk size")
            if size == 0:
                while True:  # trailers, up to the empty line
                    line, buffer = self._line(stream, buffer)
                    if not line:
                        if buffer:
                            raise httpcore.RemoteProtocolError("data after the chunked body")
                        return
            while size:
                if not buffer:
                    buffer = self._read(stream)
                    if not buffer:
                        raise httpcore.RemoteProtocolError("peer closed connection in a chunk")
                piece, buffer = buffer[:size], buffer[size:]
                size -= len(piece)
                yield piece
            line, buffer = self._line(stream, buffer)
            if line:
                raise httpcore.RemoteProtocolError("a chunk is not followed by CRLF")

    def _line(self, stream: httpcore.NetworkStream, buffer: bytes) -> tuple[bytes, bytes]:
        while (end := buffer.find(b"\r\n")) < 0:
            if len(buffer) > MAX_CHUNK_LINE:
                raise httpcore.RemoteProtocolError("chunk line too long")
            data = self._read(stream)
            if not data:
                raise httpcore.RemoteProtocolError("peer closed connection in a chunked body")
            buffer += data
        if end > MAX_CHUNK_LINE:
            raise httpcore.RemoteProtocolError("chunk line too long")
        return buffer[:end], buffer[end + 2 :]


def _parse_head(head: bytes) -> tuple[int, RawHeaders]:
    lines = head.split(b"\r\n")
    parts = lines[0].split(b" ", 2)
    if len(parts) < 2 or parts[0] not in (b"HTTP/1.1", b"HTTP/1.0"):
        raise httpcore.RemoteProtocolError("illegal status line")
    code = parts[1]
    if len(code) != 3 or not code.isdigit():
        raise httpcore.RemoteProtocolError("illegal status line")
    headers: RawHeaders = []
    for line in lines[1:]:
        name, colon, value = line.partition(b":")
        if not colon or not name or name != name.strip() or line[:1] in (b" ", b"\t"):
            raise httpcore.RemoteProtocolError("illegal header line")
        headers.append((name, value.strip(b" \t")))
    if parts[0] == b"HTTP/1.0" and not any(
        k.lower() == b"connection" and b"keep-alive" in v.lower() for k, v in headers
    ):
        headers.append((b"Connection", b"close"))  # HTTP/1.0 closes unless it says otherwise
    return int(code), headers


def _content_length(values: list[bytes]) -> int:
    found = {v.strip() for value in values for v in value.split(b",")}
    if len(found) != 1:
        raise httpcore.RemoteProtocolError("conflicting Content-Length headers")
    (text,) = found
    if not text.isdigit():
        raise httpcore.RemoteProtocolError("illegal Content-Length")
    return int(text)
