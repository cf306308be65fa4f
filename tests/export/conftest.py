"""The export tests' own fixtures: an S3-like store in memory (tests/export/memstore.py), and
buckets on the GCS and Azure emulators (tests/export/emulators.py)."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow.fs as pafs
import pytest

import petsync.export.objectstore.filesystem as objectstore_filesystem
import petsync.export.objectstore.lock as objectstore_lock
from petsync.export.location import Location
from petsync.export.objectstore.credentials import AZURITE_ACCOUNT, AZURITE_KEY
from tests.export.emulators import Emulator, run_azurite, run_fake_gcs
from tests.export.memstore import MemoryBucket, MemoryFileSystem, MemoryObjects, MemoryS3Api


@pytest.fixture
def memory_s3(monkeypatch: pytest.MonkeyPatch) -> MemoryBucket:
    """A bucket of an in-memory store that every ``s3://`` location of petsync opens.

    ``open_filesystem`` gives the memory file system for ``s3://`` (any other scheme as
    before) and the run lock gets the memory store's S3 calls; nothing leaves the process.
    """
    store = MemoryObjects()
    bucket = MemoryBucket(
        f"mem-{secrets.token_hex(4)}", store, pafs.PyFileSystem(MemoryFileSystem(store))
    )
    store.buckets.add(bucket.name)
    real = objectstore_filesystem.open_filesystem

    def open_filesystem(location: Location, environ: Mapping[str, str] | None = None) -> Any:
        return bucket.filesystem if location.kind == "s3" else real(location, environ)

    monkeypatch.setattr(objectstore_filesystem, "open_filesystem", open_filesystem)
    monkeypatch.setattr(objectstore_lock, "s3_client", lambda environ=None: MemoryS3Api(store))
    # No botocore client is made, so none is dropped: nothing to collect (a full gc.collect
    # costs a tenth of a second per export in a test process this size).
    monkeypatch.setattr(objectstore_lock, "_give_back_memory", lambda: None)
    return bucket


@pytest.fixture(autouse=True)
def _one_lock_client_per_session(request: pytest.FixtureRequest) -> None:
    """On moto, the run lock uses the session's botocore client instead of a new one per
    call: the same requests reach the same server, without loading botocore's S3 model
    twice per export (about a second per test on a loaded machine); that client is never
    dropped, so there is no garbage to collect after taking the lock. The CLI tests keep
    the lock's own client, made from the environment, and its clean-up.
    """
    if "s3" not in request.fixturenames:
        return
    client = request.getfixturevalue("s3_client")
    monkeypatch = request.getfixturevalue("monkeypatch")
    monkeypatch.setattr(objectstore_lock, "s3_client", lambda environ=None: client)
    monkeypatch.setattr(objectstore_lock, "_give_back_memory", lambda: None)  # never dropped


# -- GCS and Azure emulators (tests/export/emulators.py) -----------------------------------

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
        from petsync.export.location import parse_location
        from petsync.export.objectstore.filesystem import open_filesystem

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


@pytest.fixture(params=["gcs", "azure"])
def emulated(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> EmulatedBucket:
    """Each test once on GCS (fake-gcs-server) and once on Azure (Azurite)."""
    if request.param == "gcs":
        return gcs_bucket(request.getfixturevalue("gcs_emulator"), monkeypatch)
    return azure_container(request.getfixturevalue("azurite"), monkeypatch)
