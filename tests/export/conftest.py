"""The export tests' own fixture: an S3-like store in memory (see tests/export/memstore.py)."""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from typing import Any

import pyarrow.fs as pafs
import pytest

import petsync.export.objectstore.filesystem as objectstore_filesystem
import petsync.export.objectstore.lock as objectstore_lock
from petsync.export.location import Location
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
    return bucket
