"""Transport errors translated: what fails at once (and says what to fix), what is retried.

Mock transports raise the exceptions the client's transport raises (httpx's, and its
subclasses for a name that does not resolve and a refused certificate or handshake); real
loopback sockets show a refused connection, a reset and TLS spoken to a plain-http port.
"""

from __future__ import annotations

import random
import socket
import ssl
from collections.abc import Callable

import httpx
import pytest

from petsync.client.client import PetstoreClient
from petsync.client.config import ClientConfig, RetryPolicy
from petsync.client.wire import CertificateRefused, HostNotFound, TlsFailed
from petsync.core.apikey import ApiKey
from petsync.core.errors import (
    ApiError,
    OutcomeUnknownError,
    RetriesExhaustedError,
    TransportError,
)
from petsync.core.models import NewPet
from tests.client.loopback import Harness, Loopback, answer, reset
from tests.conftest import FakeClock

BASE = "https://petstore.test/v1"
URL = f"{BASE}/pets?limit=100"
ATTEMPTS = 3
KEY = "sk-test-5f1c9a"


def _client(
    fake_clock: FakeClock, handler: Callable[[httpx.Request], httpx.Response]
) -> PetstoreClient:
    config = ClientConfig(
        BASE, ApiKey(KEY), pagination="none", retry=RetryPolicy(max_attempts=ATTEMPTS)
    )
    return PetstoreClient(
        config,
        transport=httpx.MockTransport(handler),
        sleep=fake_clock.sleep,
        clock=fake_clock,
        rng=random.Random(0),
    )


class Failing:
    """A handler raising ``error`` caused by ``cause`` (what the OS said, if anything)."""

    def __init__(self, error: httpx.RequestError, cause: BaseException | None = None) -> None:
        self.error = error
        self.cause = cause
        self.calls = 0

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.calls += 1
        raise self.error from self.cause


NONAME = socket.gaierror(socket.EAI_NONAME, "Name or service not known")
CERT = ssl.SSLCertVerificationError(
    1, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed certificate"
)
WRONG_VERSION = ssl.SSLError(1, "[SSL: WRONG_VERSION_NUMBER] wrong version number")

FINAL = [
    (
        HostNotFound("[Errno -2] Name or service not known"),
        NONAME,
        f"could not find the host petstore.test for GET {URL} (ConnectError: [Errno -2] Name or "
        "service not known): the name does not resolve. Check the host name in the base URL "
        "(and this machine's DNS)",
    ),
    (
        CertificateRefused("[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed"),
        CERT,
        f"the TLS certificate of petstore.test was refused for GET {URL} (ConnectError: [SSL: "
        "CERTIFICATE_VERIFY_FAILED] certificate verify failed). Check that the base URL names "
        "the API's own host; if the API uses a private certificate authority, point "
        "SSL_CERT_FILE at its certificate",
    ),
    (
        TlsFailed("[SSL: WRONG_VERSION_NUMBER] wrong version number"),
        WRONG_VERSION,
        f"TLS with petstore.test failed for GET {URL} (ConnectError: [SSL: WRONG_VERSION_NUMBER] "
        "wrong version number): the server does not speak TLS as expected. Check the base "
        "URL's scheme and port (https to a port that serves plain http?)",
    ),
    (
        httpx.UnsupportedProtocol("Request URL has an unsupported protocol 'ftp://'."),
        None,
        f"petsync could not send GET {URL} (UnsupportedProtocol: Request URL has an unsupported "
        "protocol 'ftp://'.); check the base URL",
    ),
    (
        httpx.LocalProtocolError("Illegal header value b'a\\nb'"),
        None,
        f"petsync could not send GET {URL} (LocalProtocolError: Illegal header value "
        "b'a\\nb'); check the base URL",
    ),
    (
        httpx.ProxyError("407 Proxy Authentication Required"),
        None,
        f"the proxy refused to open a tunnel for GET {URL} (ProxyError: 407 Proxy "
        "Authentication Required); check the proxy settings (HTTPS_PROXY, ALL_PROXY, NO_PROXY)",
    ),
]


@pytest.mark.parametrize(
    ("error", "cause", "message"),
    FINAL,
    ids=[
        "dns-unknown-name",
        "tls-certificate",
        "tls-protocol",
        "unsupported",
        "local",
        "proxy-407",
    ],
)
def test_what_cannot_recover_fails_at_once_saying_what_to_fix(
    error: httpx.RequestError, cause: BaseException | None, message: str, fake_clock: FakeClock
) -> None:
    handler = Failing(error, cause)
    with pytest.raises(TransportError) as caught:
        list(_client(fake_clock, handler).list_pets())
    assert type(caught.value) is TransportError
    assert str(caught.value) == message
    assert handler.calls == 1 and fake_clock.sleeps == []


@pytest.mark.parametrize(
    ("error", "cause"),
    [
        (
            httpx.ConnectError("[Errno -3] Temporary failure in name resolution"),
            socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution"),
        ),
        (httpx.ConnectError("[Errno 111] Connection refused"), ConnectionRefusedError(111, "")),
        (httpx.ReadError("[Errno 104] Connection reset by peer"), ConnectionResetError(104, "")),
        (httpx.ConnectError("EOF occurred in violation of protocol"), ssl.SSLEOFError(8, "EOF")),
        (httpx.RemoteProtocolError("Server disconnected without sending a response."), None),
        (httpx.ProxyError("502 Bad Gateway"), None),
    ],
    ids=["dns-temporary", "refused", "reset", "tls-eof", "disconnected", "proxy-502"],
)
def test_what_can_recover_is_retried_for_get(
    error: httpx.RequestError, cause: BaseException | None, fake_clock: FakeClock
) -> None:
    handler = Failing(error, cause)
    with pytest.raises(RetriesExhaustedError) as caught:
        list(_client(fake_clock, handler).list_pets())
    assert handler.calls == ATTEMPTS and len(fake_clock.sleeps) == ATTEMPTS - 1
    assert str(caught.value).endswith(
        "; to retry more, raise max_attempts= (now 2 retries), or try again later"
    )


def test_a_post_to_an_unknown_host_fails_at_once_and_is_not_outcome_unknown(
    fake_clock: FakeClock,
) -> None:
    handler = Failing(HostNotFound("[Errno -2] Name or service not known"), NONAME)
    with pytest.raises(TransportError) as caught:
        _client(fake_clock, handler).create_pet(NewPet("Rex", 3))
    assert type(caught.value) is TransportError
    assert str(caught.value).startswith("could not find the host petstore.test for POST ")
    assert handler.calls == 1


def test_a_post_whose_connection_was_reset_after_sending_is_not_re_sent(
    fake_clock: FakeClock,
) -> None:
    handler = Failing(
        httpx.ReadError("[Errno 104] Connection reset by peer"), ConnectionResetError()
    )
    with pytest.raises(OutcomeUnknownError):
        _client(fake_clock, handler).create_pet(NewPet("Rex", 3))
    assert handler.calls == 1


def test_a_tls_error_after_sending_is_still_outcome_unknown_for_a_post(
    fake_clock: FakeClock,
) -> None:
    bad_mac = ssl.SSLError(1, "[SSL: DECRYPTION_FAILED_OR_BAD_RECORD_MAC] bad record mac")
    handler = Failing(httpx.ReadError("[SSL] bad record mac"), bad_mac)
    with pytest.raises(OutcomeUnknownError):
        _client(fake_clock, handler).create_pet(NewPet("Rex", 3))
    assert handler.calls == 1


@pytest.mark.parametrize(
    ("status", "calls"),
    [(408, ATTEMPTS), (429, ATTEMPTS), (400, 1), (403, 1), (404, 1), (409, 1), (451, 1)],
    ids=str,
)
def test_4xx_is_retried_only_for_408_and_429(
    status: int, calls: int, fake_clock: FakeClock
) -> None:
    seen: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(status)
        return httpx.Response(status)

    with pytest.raises((ApiError, RetriesExhaustedError)):
        list(_client(fake_clock, handler).list_pets())
    assert len(seen) == calls


# -- real sockets on 127.0.0.1 ---------------------------------------------------------------


def _live(live: Harness, base_url: str) -> PetstoreClient:
    config = ClientConfig(
        base_url, ApiKey(KEY), pagination="none", retry=RetryPolicy(max_attempts=ATTEMPTS)
    )
    return live.client(config)


def test_a_refused_connection_is_retried_within_the_budget(live: Harness) -> None:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]  # closed again below: nothing listens there
    base = f"http://127.0.0.1:{port}/v1"
    with pytest.raises(RetriesExhaustedError) as caught:
        list(_live(live, base).list_pets())
    assert caught.value.attempts == ATTEMPTS
    assert str(caught.value.last_error).startswith(
        f"could not connect for GET {base}/pets?limit=100 (ConnectError: Failed to connect to "
        f"127.0.0.1:{port} after"
    )


def test_a_reset_connection_is_retried(live: Harness) -> None:
    server = live.serve(reset, answer(body=b'[{"id": 5, "name": "a", "categoryId": 1}]'))
    client = _live(live, server.base_url)
    assert [p.id for page in client.list_pets() for p in page.pets] == [5]
    assert (server.connections, client.retries) == (2, 1)


def test_tls_to_a_plain_http_port_fails_at_once(live: Harness, fake_clock: FakeClock) -> None:
    def plain(server: Loopback, conn: socket.socket) -> None:
        server.send(conn, b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")

    server = live.serve(plain, plain, read_requests=False)
    base = f"https://127.0.0.1:{server.port}/v1"
    with pytest.raises(TransportError) as caught:
        list(_live(live, base).list_pets())
    assert str(caught.value).startswith(f"TLS with 127.0.0.1 failed for GET {base}/pets?limit=100")
    assert "Check the base URL's scheme and port" in str(caught.value)
    assert server.connections == 1 and fake_clock.sleeps == []


@pytest.mark.parametrize(
    ("status", "fix"),
    [
        (
            403,
            "; the API refused this key the operation: check the key's rights with the API owner",
        ),
        (404, "; the API has no /pets there: check the base URL (it ends with /v1)"),
        (
            407,
            "; a proxy on the way wants credentials: give them in the proxy URL (e.g. "
            "HTTPS_PROXY=http://user:password@proxy:3128)",
        ),
        (409, ""),
    ],
    ids=str,
)
def test_a_refused_request_says_what_to_fix_when_the_status_tells(
    status: int, fix: str, fake_clock: FakeClock
) -> None:
    client = _client(fake_clock, lambda request: httpx.Response(status))
    with pytest.raises(ApiError) as caught:
        list(client.list_pets())
    assert str(caught.value) == f"GET {URL} answered HTTP {status}, an empty body{fix}"
