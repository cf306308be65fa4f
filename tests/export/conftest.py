"""The export tests' own fixtures: an S3-like store in memory (tests/export/memstore.py).

The buckets on the GCS and Azure emulators (``gcs``, ``azure``, ``emulated``) are fixtures of
tests/export/emulators.py, a plugin of every test (tests/conftest.py), so that the history's
tests use the same emulator processes; :class:`EmulatedBucket` and
:func:`clear_store_environment` are imported from there.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from typing import Any

import pyarrow.fs as pafs
import pytest

import petsync.storage.filesystem as store_filesystem
import petsync.storage.s3_lock_object as s3_lock_object
from petsync.storage.location import Location
from tests.export.emulators import EmulatedBucket, clear_store_environment
from tests.export.memstore import MemoryBucket, MemoryFileSystem, MemoryObjects, MemoryS3Api

__all__ = ["EmulatedBucket", "clear_store_environment"]  # the export tests import them here


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
    real = store_filesystem.open_filesystem

    def open_filesystem(location: Location, environ: Mapping[str, str] | None = None) -> Any:
        return bucket.filesystem if location.kind == "s3" else real(location, environ)

    monkeypatch.setattr(store_filesystem, "open_filesystem", open_filesystem)
    monkeypatch.setattr(s3_lock_object, "s3_client", lambda environ=None: MemoryS3Api(store))
    # No botocore client is made, so none is dropped: nothing to collect (a full gc.collect
    # costs a tenth of a second per export in a test process this size).
    monkeypatch.setattr(s3_lock_object, "_give_back_memory", lambda: None)
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
    monkeypatch.setattr(s3_lock_object, "s3_client", lambda environ=None: client)
    monkeypatch.setattr(s3_lock_object, "_give_back_memory", lambda: None)  # never dropped
