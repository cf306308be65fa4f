"""Shared fixtures: a fake clock, the live reference server, an S3 server on loopback, and a
self-signed TLS certificate."""

from __future__ import annotations

import datetime
import ipaddress
import multiprocessing
import os
import secrets
import tempfile
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
import respx

from petsync.core.apikey import ApiKey
from petsync.server.app import ServerConfig
from petsync.server.runner import RunningServer, start_server

if TYPE_CHECKING:
    from tests.client.loopback import Harness

# Buckets on the GCS and Azure emulators (gcs, azure, emulated): one pair of emulator
# processes per session for the export's and the history's tests.
pytest_plugins = ["tests.export.emulators"]


# Hypothesis (under schemathesis) keeps caches in ./.hypothesis: keep the checkout clean.
os.environ.setdefault(
    "HYPOTHESIS_STORAGE_DIRECTORY", os.path.join(tempfile.gettempdir(), "petsync-hypothesis")
)


def route_clients_to(router: respx.MockRouter, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every PetstoreClient built without a transport sends through ``router`` (respx routes).

    The mock takes the place of the client's libcurl exchange: the one seam every request
    goes through, so the code above it is the code production runs.
    """
    from petsync.client import client
    from petsync.client.exchange import HttpxExchange

    def exchange(*args: object, **kwargs: object) -> HttpxExchange:
        return HttpxExchange(httpx.MockTransport(router.handler))

    monkeypatch.setattr(client, "CurlExchange", exchange)


class FakeClock:
    """A monotonic clock that only moves when something sleeps on it: no test waits for real."""

    def __init__(self, start: float = 1_000.0) -> None:
        self.now = start
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += max(0.0, seconds)


@pytest.fixture
def fake_clock() -> FakeClock:
    return FakeClock()


StartServer = Callable[..., RunningServer]


@pytest.fixture
def petstore_server() -> Iterator[StartServer]:
    """Factory of live reference servers on 127.0.0.1, port 0, each with a random key.

    ``srv = petstore_server(seed_pets=250, pagination="offset", clock=fake_clock)`` takes
    the fields of :class:`ServerConfig` (``api_key`` optional) plus ``clock``; every server
    started is stopped at teardown. Start-up is bounded by the runner's own timeout.
    """
    started: list[RunningServer] = []

    def start(*, clock: Callable[[], float] | None = None, **fields: Any) -> RunningServer:
        fields.setdefault("api_key", ApiKey("test-key-" + secrets.token_hex(8)))
        config = ServerConfig(**fields)
        srv = start_server(config, clock=clock) if clock is not None else start_server(config)
        started.append(srv)
        return srv

    yield start
    for srv in started:
        srv.stop()


@pytest.fixture
def live(fake_clock: FakeClock) -> Iterator[Harness]:
    """Loopback socket servers and clients for one test, closed at teardown.

    See :class:`tests.client.loopback.Harness`: raw-socket servers on 127.0.0.1 that drip,
    inflate or proxy, for the client's deadline, size and proxy tests.
    """
    from tests.client.loopback import Harness  # it builds on FakeClock, defined here

    harness = Harness(fake_clock)
    yield harness
    harness.close()


@pytest.fixture(autouse=True)
def private_state_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Each test's own XDG_STATE_HOME: an import keeps its journals in the API's home under
    it (petsync.importer.journal_home), never in the developer's, and no test finds the
    journal of another test's file of the same bytes.

    Its own MonkeyPatch, not the test's: a test's ``monkeypatch.undo()`` (to run again
    without its patches) must not send the re-run to the real home.
    """
    state = tmp_path_factory.mktemp("state")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_STATE_HOME", str(state))
        yield state


@pytest.fixture
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Work in tmp_path with no config file or key from the developer's machine."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / ".config"))
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)  # import journals: under HOME
    for name in list(os.environ):
        if name.startswith("PETSYNC_"):
            monkeypatch.delenv(name)
    return tmp_path


# -- S3 on loopback ------------------------------------------------------------------------


def _serve_moto(conn: Connection) -> None:  # pragma: no cover - runs in the child process
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request on stderr
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    conn.send(server.get_host_and_port())
    conn.recv()  # until the parent says stop (or dies: then recv raises EOFError)
    server.stop()


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """moto's S3 server (``ThreadedMotoServer``) on 127.0.0.1, an ephemeral port, for the session.

    It runs in a child process: deltalake's Rust calls hold the GIL while they wait for the
    store, so a server thread in this process would stall them.
    """
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    process = context.Process(target=_serve_moto, args=(child,), daemon=True)
    process.start()
    if not parent.poll(60):
        process.kill()
        raise RuntimeError("moto's S3 server did not start within 60 s")
    host, port = parent.recv()
    assert host == "127.0.0.1"
    yield f"http://{host}:{port}"
    parent.send("stop")
    process.join(10)
    if process.is_alive():
        process.kill()


@dataclass
class S3Bucket:
    """A fresh bucket on the loopback S3 server; ``uri(prefix)`` names a location in it."""

    name: str
    endpoint: str
    client: Any  # a botocore S3 client with the test credentials
    enforcing: bool = False  # the server checks signatures (enforce_credentials)
    kind: str = "s3"  # as EmulatedBucket's: a test over every store tells them apart by it

    def uri(self, prefix: str = "petsync") -> str:
        return f"s3://{self.name}/{prefix}" if prefix else f"s3://{self.name}"

    def filesystem(self) -> Any:
        """The bucket's pyarrow file system, as petsync opens it from the environment."""
        from petsync.storage.filesystem import open_filesystem
        from petsync.storage.location import parse_location

        return open_filesystem(parse_location(self.uri()))

    def object_keys(self, prefix: str = "") -> list[str]:
        """The object keys under ``prefix``, without folder markers (keys ending in ``/``)."""
        found = self.client.list_objects_v2(Bucket=self.name, Prefix=prefix).get("Contents", [])
        return sorted(item["Key"] for item in found if not item["Key"].endswith("/"))

    def enforce_credentials(self, enforce: bool) -> None:
        """Make the server check signatures against its IAM users (none: every key refused)."""
        self.enforcing = enforce
        count = b"0" if enforce else b"inf"
        request = urllib.request.Request(
            f"{self.endpoint}/moto-api/reset-auth",
            data=count,
            method="POST",
            headers={"Content-Type": "text/plain"},  # a form body would not reach moto
        )
        with urllib.request.urlopen(request, timeout=10):  # loopback only
            pass


S3_TEST_ENVIRONMENT = {
    "AWS_ACCESS_KEY_ID": "testing-key-id",
    "AWS_SECRET_ACCESS_KEY": "testing-secret-0123456789",
    "AWS_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",  # never ask an instance metadata endpoint
    "AWS_CONFIG_FILE": "/nonexistent/petsync-test-aws-config",
    "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/petsync-test-aws-credentials",
}


@pytest.fixture
def s3(s3_endpoint: str, s3_client: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[S3Bucket]:
    """A new bucket, with the environment pointing every AWS client at the loopback server.

    Fake credentials and the loopback endpoint are always set, the shared AWS files and
    the metadata endpoint are off, so nothing in a test can reach AWS. One server for the
    session, a bucket per test.
    """
    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    for name, value in S3_TEST_ENVIRONMENT.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_endpoint)
    bucket = S3Bucket(f"petsync-{secrets.token_hex(6)}", s3_endpoint, s3_client)
    s3_client.create_bucket(Bucket=bucket.name)
    yield bucket
    if bucket.enforcing:
        bucket.enforce_credentials(False)


@pytest.fixture(scope="session")
def s3_client(s3_endpoint: str) -> Any:
    """One botocore client on the loopback server for the session (its model loads once)."""
    import botocore.session

    return botocore.session.get_session().create_client(
        "s3",
        endpoint_url=s3_endpoint,
        region_name=S3_TEST_ENVIRONMENT["AWS_REGION"],
        aws_access_key_id=S3_TEST_ENVIRONMENT["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=S3_TEST_ENVIRONMENT["AWS_SECRET_ACCESS_KEY"],
    )


@pytest.fixture
def certificate(tmp_path: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key, as PEM files."""
    from cryptography import x509  # imported here: most tests need no certificate
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "petsync test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path
