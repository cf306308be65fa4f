"""The client's transport against a server petsync did not write: Python's ``http.server``.

The raw loopback scripts of ``test_wire.py`` send what we think a server sends; here
the answers come from the standard library's server, framed its way: HTTP/1.0 closing each
connection, HTTP/1.1 kept alive, gzip, and TLS with a certificate the client must verify.
"""

from __future__ import annotations

import gzip
import json
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from petsync.client.client import PetstoreClient
from petsync.client.config import ClientConfig
from petsync.core.apikey import ApiKey
from petsync.core.models import NewPet

KEY = "k-stdlib"
PETS = 7
LIMIT = 3


@dataclass
class Served:
    """What the server saw: connections opened, request lines, the last POST body."""

    connections: int = 0
    requests: list[str] = field(default_factory=list)
    authorized: list[bool] = field(default_factory=list)
    posted: list[dict[str, object]] = field(default_factory=list)


def handler_for(served: Served, protocol: str, gzipped: bool) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = protocol

        def setup(self) -> None:
            super().setup()
            served.connections += 1

        def log_message(self, format: str, *args: object) -> None:  # keep pytest's output clean
            pass

        def do_GET(self) -> None:
            self._note()
            query = parse_qs(urlsplit(self.path).query)
            start = int(query.get("after", ["0"])[0])
            limit = int(query["limit"][0])
            ids = range(start + 1, min(start + limit, PETS) + 1)
            pets = [{"id": i, "name": f"pet {i}", "categoryId": 2, "status": "sold"} for i in ids]
            headers = {}
            if ids and ids[-1] < PETS:
                headers["Link"] = f'</v1/pets?limit={limit}&after={ids[-1]}>; rel="next"'
            self._answer(200, json.dumps(pets).encode(), headers)

        def do_POST(self) -> None:
            self._note()
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            served.posted.append(body)
            self._answer(201, json.dumps({"id": 100 + len(served.posted), **body}).encode(), {})

        def _note(self) -> None:
            served.requests.append(f"{self.command} {self.path}")
            served.authorized.append(self.headers["Authorization"] == f"Bearer {KEY}")

        def _answer(self, status: int, body: bytes, headers: dict[str, str]) -> None:
            if gzipped:
                body = gzip.compress(body)
                headers = {**headers, "Content-Encoding": "gzip"}
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

    return Handler


@pytest.fixture
def serve() -> Iterator[object]:
    servers: list[ThreadingHTTPServer] = []

    def start(
        protocol: str = "HTTP/1.1", *, gzipped: bool = False, tls: tuple[Path, Path] | None = None
    ) -> tuple[str, Served]:
        served = Served()
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler_for(served, protocol, gzipped))
        server.daemon_threads = True
        scheme = "http"
        if tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            server.socket = context.wrap_socket(server.socket, server_side=True)
            scheme = "https"
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"{scheme}://127.0.0.1:{server.server_address[1]}/v1", served

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _list(base_url: str) -> list[int]:
    config = ClientConfig(base_url, ApiKey(KEY), pagination="link")
    with PetstoreClient(config) as client:
        return [pet.id for page in client.list_pets(limit=LIMIT) for pet in page.pets]


@pytest.mark.parametrize(
    ("protocol", "gzipped", "connections"),
    [("HTTP/1.0", False, 3), ("HTTP/1.1", False, 1), ("HTTP/1.1", True, 1)],
    ids=["http1.0-closes", "http1.1-kept-alive", "http1.1-gzip"],
)
def test_a_listing_pages_through_the_standard_library_server(
    serve, protocol: str, gzipped: bool, connections: int
) -> None:
    base_url, served = serve(protocol, gzipped=gzipped)
    assert _list(base_url) == list(range(1, PETS + 1))
    assert served.requests == [
        f"GET /v1/pets?limit={LIMIT}",
        f"GET /v1/pets?limit={LIMIT}&after=3",
        f"GET /v1/pets?limit={LIMIT}&after=6",
    ]
    assert all(served.authorized)
    assert served.connections == connections


def test_a_listing_and_a_create_over_verified_tls(
    serve, certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    base_url, served = serve(tls=certificate)
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate[0]))  # trust the test's own CA
    config = ClientConfig(base_url, ApiKey(KEY), pagination="link")
    with PetstoreClient(config) as client:
        ids = [pet.id for page in client.list_pets(limit=LIMIT) for pet in page.pets]
        created = client.create_pet(NewPet(name="Rex", categoryId=4))
    assert ids == list(range(1, PETS + 1))
    assert (created.id, created.name, created.categoryId) == (101, "Rex", 4)
    assert served.posted == [{"name": "Rex", "categoryId": 4}]
    assert all(served.authorized)
    assert served.connections == 1  # one thread, one kept-alive connection, TLS once


def test_an_untrusted_certificate_is_refused_before_the_key_is_sent(
    serve, certificate: tuple[Path, Path]
) -> None:
    from petsync.core.errors import TransportError

    base_url, served = serve(tls=certificate)
    with pytest.raises(TransportError) as caught:
        _list(base_url)
    assert "certificate" in str(caught.value)
    assert KEY not in str(caught.value)
    assert served.requests == []  # the handshake failed: no request, no key, was read
