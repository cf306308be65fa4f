"""A raw HTTP/1.1 server on 127.0.0.1 for the client's transport tests: hostile on purpose.

Connection n is answered by script n, which gets the socket after the request (head and any
``Content-Length`` body) was read (or at once, with ``read_requests=False``) and writes what
it likes: slowly, hugely, or not at all.
Everything is bounded: scripts send finite data, waits go through :meth:`Loopback.pause`
(which ``close`` interrupts), ``accept`` gives up after ``ACCEPT_TIMEOUT``, and ``close``
joins the thread with a timeout.
"""

from __future__ import annotations

import random
import socket
import struct
import threading
from collections.abc import Callable, Iterable, Mapping

from petsync.client.client import PetstoreClient
from petsync.client.config import ClientConfig
from tests.conftest import FakeClock

EMPTY: Mapping[str, str] = {}  # no proxy settings
ACCEPT_TIMEOUT = 5.0
IO_TIMEOUT = 5.0

Script = Callable[["Loopback", socket.socket], None]


class Loopback:
    """Serves one connection per script, in order, and records what it saw and sent.

    ``requests`` holds each request's raw bytes; ``sent`` counts the bytes written;
    ``connections`` counts accepted connections (a proxy that must see nothing keeps 0).
    """

    def __init__(self, *scripts: Script, read_requests: bool = True) -> None:
        self.requests: list[bytes] = []
        self._read_requests = read_requests  # False: the script gets the raw connection
        self.sent = 0
        self.connections = 0
        self._scripts = list(scripts)
        self._stop = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.1)
        self.port: int = self._listener.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.origin}/v1"

    def pause(self, seconds: float) -> None:
        """Wait (inside a script), cut short when the server closes."""
        if self._stop.wait(seconds):
            raise ConnectionAbortedError("server closing")

    def send(self, conn: socket.socket, data: bytes) -> None:
        conn.sendall(data)
        self.sent += len(data)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=IO_TIMEOUT)
        self._listener.close()

    def _serve(self) -> None:
        waited = 0.0
        while self._scripts and not self._stop.is_set() and waited < ACCEPT_TIMEOUT:
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                waited += 0.1
                continue
            waited = 0.0
            self.connections += 1
            script = self._scripts.pop(0)
            with conn:
                conn.settimeout(IO_TIMEOUT)
                try:
                    if self._read_requests:
                        self.requests.append(_read_request(conn))
                    script(self, conn)
                except OSError:
                    pass  # the client hung up: what these tests provoke


def _read_request(conn: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk
        if len(data) > 1 << 20:
            raise ConnectionAbortedError("request head too large")
    head, _, body = data.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
            while len(body) < length:
                chunk = conn.recv(65536)
                if not chunk:
                    break
                body += chunk
    return head + b"\r\n\r\n" + body


# -- scripts ---------------------------------------------------------------------------------


def answer(status: str = "200 OK", body: bytes = b"[]", headers: str = "") -> Script:
    """A prompt, complete answer."""

    def script(server: Loopback, conn: socket.socket) -> None:
        server.send(
            conn,
            f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n{headers}"
            f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body,
        )

    return script


def drip(prefix: bytes, dripped: bytes, every: float, suffix: bytes = b"") -> Script:
    """Send ``prefix``, then ``dripped`` one byte every ``every`` seconds, then ``suffix``."""

    def script(server: Loopback, conn: socket.socket) -> None:
        server.send(conn, prefix)
        for byte in dripped:
            server.pause(every)
            server.send(conn, bytes([byte]))
        server.send(conn, suffix)

    return script


def chunked(head: str, chunks: Iterable[bytes]) -> Script:
    """An answer with ``head`` (status line and headers) and a chunked body, sent lazily."""

    def script(server: Loopback, conn: socket.socket) -> None:
        server.send(conn, f"{head}Transfer-Encoding: chunked\r\n\r\n".encode())
        for chunk in chunks:
            if chunk:
                server.send(conn, f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
        server.send(conn, b"0\r\n\r\n")

    return script


def reset(server: Loopback, conn: socket.socket) -> None:
    """Drop the connection with a TCP reset, having answered nothing."""
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


class Harness:
    """The loopback servers and live clients of one test, all closed at its end.

    Clients run on the test's fake clock (retry waits never sleep) and, unless told
    otherwise, read proxy settings from an empty environment. A test module's fixture makes
    one per test: ``harness = Harness(fake_clock); yield harness; harness.close()``.
    """

    def __init__(self, fake_clock: FakeClock) -> None:
        self._fake_clock = fake_clock
        self._servers: list[Loopback] = []
        self._clients: list[PetstoreClient] = []

    def serve(self, *scripts: Script, read_requests: bool = True) -> Loopback:
        self._servers.append(Loopback(*scripts, read_requests=read_requests))
        return self._servers[-1]

    def client(
        self, config: ClientConfig, environ: Mapping[str, str] | None = EMPTY
    ) -> PetstoreClient:
        """A client of ``config`` with its own transport; ``environ=None`` reads os.environ."""
        client = PetstoreClient(
            config,
            sleep=self._fake_clock.sleep,
            clock=self._fake_clock,
            rng=random.Random(0),
            environ=environ,
        )
        self._clients.append(client)
        return client

    def close(self) -> None:
        for client in self._clients:
            client.close()  # no kept-alive socket left for the garbage collector
        for server in self._servers:
            server.close()
