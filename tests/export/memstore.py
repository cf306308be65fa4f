"""An S3-like object store in memory, for the tests of publication's logic (no server, fast).

:class:`MemoryObjects` holds flat keys (``bucket/key``) with their bytes and ETags, as S3
does: no directories (a "folder" exists while a key lies under it), an object appears whole
when its upload is closed, a copy is one atomic step. Two views share it, the same two
petsync uses on S3:

* :class:`MemoryFileSystem`, a ``pyarrow.fs`` handler (wrapped in ``pafs.PyFileSystem``):
  what :func:`petsync.storage.filesystem.open_filesystem` gives for ``s3://``;
* :class:`MemoryS3Api`, the four botocore calls of the run lock, with ``If-None-Match: *``
  and ``If-Match`` answered 412 as S3 answers them.

moto's S3 server stays the end-to-end check of the real protocol
(tests/export/test_objectstore.py, tests/storage/test_object_lock.py and a few crash
tests); this store runs the many
crash points whose subject is the order of petsync's own steps, not S3's behaviour.
"""

from __future__ import annotations

import hashlib
import io
import threading
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs


@dataclass
class MemoryObjects:
    """The store: ``bucket/key`` -> (bytes, ETag), and the buckets that exist."""

    buckets: set[str] = field(default_factory=set)
    objects: dict[str, tuple[bytes, str]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    writes: int = 0

    def put(self, path: str, data: bytes) -> str:
        with self.lock:
            return self.put_locked(path, data)

    def put_locked(self, path: str, data: bytes) -> str:
        """Write one object (the caller holds :attr:`lock`); return its new ETag."""
        bucket = path.split("/", 1)[0]
        if bucket not in self.buckets:
            raise FileNotFoundError(f"NoSuchBucket: {bucket}")
        self.writes += 1
        etag = '"' + hashlib.md5(data + str(self.writes).encode()).hexdigest() + '"'
        self.objects[path] = (data, etag)
        return etag

    def keys_under(self, prefix: str) -> list[str]:
        start = prefix.rstrip("/") + "/"
        with self.lock:
            return sorted(k for k in self.objects if k.startswith(start))

    def is_dir(self, path: str) -> bool:
        path = path.rstrip("/")
        return path in self.buckets or bool(self.keys_under(path))


class _Upload(io.BytesIO):
    """An upload: the object appears, whole, when the stream is closed (as on S3)."""

    def __init__(self, store: MemoryObjects, path: str) -> None:
        super().__init__()
        self._store, self._path = store, path

    def close(self) -> None:
        if not self.closed:
            self._store.put(self._path, self.getvalue())
        super().close()


class MemoryFileSystem(pafs.FileSystemHandler):
    """The ``pyarrow.fs`` view of :class:`MemoryObjects`, with S3's semantics."""

    def __init__(self, store: MemoryObjects) -> None:
        self.store = store

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MemoryFileSystem) and other.store is self.store

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # type: ignore[assignment]

    def get_type_name(self) -> str:
        return "memory-s3"

    def normalize_path(self, path: str) -> str:
        return path.rstrip("/")

    def _info(self, path: str) -> pafs.FileInfo:
        path = path.rstrip("/")
        with self.store.lock:
            found = self.store.objects.get(path)
        if found is not None:
            return pafs.FileInfo(path, pafs.FileType.File, size=len(found[0]))
        if self.store.is_dir(path):
            return pafs.FileInfo(path, pafs.FileType.Directory)
        return pafs.FileInfo(path, pafs.FileType.NotFound)

    def get_file_info(self, paths: list[str]) -> list[pafs.FileInfo]:
        return [self._info(p) for p in paths]

    def get_file_info_selector(self, selector: pafs.FileSelector) -> list[pafs.FileInfo]:
        base = selector.base_dir.rstrip("/")
        if not self.store.is_dir(base):
            if selector.allow_not_found:
                return []
            raise FileNotFoundError(f"{base}: no such directory")
        found: dict[str, pafs.FileInfo] = {}
        for key in self.store.keys_under(base):
            parts = key[len(base) + 1 :].split("/")
            depth = len(parts) if selector.recursive else 1
            for level in range(1, min(depth, len(parts) - 1) + 1):
                folder = "/".join([base, *parts[:level]])
                found[folder] = pafs.FileInfo(folder, pafs.FileType.Directory)
            if selector.recursive or len(parts) == 1:
                found[key] = self._info(key)
        return [found[p] for p in sorted(found)]

    def create_dir(self, path: str, recursive: bool) -> None:
        return None  # folders are implied by keys, as on S3

    def delete_dir(self, path: str) -> None:
        keys = self.store.keys_under(path)
        if not keys:
            raise FileNotFoundError(f"{path}: no such directory")
        self.delete_dir_contents(path, missing_dir_ok=True)

    def delete_dir_contents(self, path: str, missing_dir_ok: bool = False) -> None:
        with self.store.lock:
            for key in [k for k in self.store.objects if k.startswith(path.rstrip("/") + "/")]:
                del self.store.objects[key]

    def delete_root_dir_contents(self) -> None:
        raise OSError("refusing to delete the whole store")

    def delete_file(self, path: str) -> None:
        with self.store.lock:
            if path not in self.store.objects:
                raise FileNotFoundError(f"{path}: no such object")
            del self.store.objects[path]

    def move(self, src: str, dest: str) -> None:
        raise OSError("S3 has no rename; petsync never moves objects")

    def copy_file(self, src: str, dest: str) -> None:
        with self.store.lock:
            found = self.store.objects.get(src)
        if found is None:
            raise FileNotFoundError(f"{src}: no such object")
        self.store.put(dest, found[0])

    def _read(self, path: str) -> pa.BufferReader:
        with self.store.lock:
            found = self.store.objects.get(path)
        if found is None:
            raise FileNotFoundError(f"{path}: no such object")
        return pa.BufferReader(found[0])

    def open_input_stream(self, path: str) -> pa.NativeFile:
        return self._read(path)

    def open_input_file(self, path: str) -> pa.NativeFile:
        return self._read(path)

    def open_output_stream(self, path: str, metadata: Any) -> pa.NativeFile:
        if path.split("/", 1)[0] not in self.store.buckets:
            raise FileNotFoundError(f"NoSuchBucket: {path}")
        return pa.PythonFile(_Upload(self.store, path), mode="w")

    def open_append_stream(self, path: str, metadata: Any) -> pa.NativeFile:
        raise OSError("S3 has no append")


def client_error(status: int, code: str, operation: str) -> Exception:
    """botocore's ClientError as S3 raises it, so the lock's handling applies unchanged."""
    import botocore.exceptions

    response = {"Error": {"Code": code, "Message": code}, "ResponseMetadata": {}}
    response["ResponseMetadata"] = {"HTTPStatusCode": status}
    return botocore.exceptions.ClientError(response, operation)  # type: ignore[arg-type]


class MemoryS3Api:
    """The run lock's S3 calls on :class:`MemoryObjects`, conditions included."""

    def __init__(self, store: MemoryObjects) -> None:
        self.store = store
        self.calls: list[str] = []

    def _current(self, Bucket: str, Key: str, operation: str) -> tuple[bytes, str] | None:
        self.calls.append(operation)
        if Bucket not in self.store.buckets:
            raise client_error(404, "NoSuchBucket", operation)
        with self.store.lock:
            return self.store.objects.get(f"{Bucket}/{Key}")

    def put_object(
        self,
        *,
        Bucket: str,
        Key: str,
        Body: bytes,
        IfNoneMatch: str | None = None,
        IfMatch: str | None = None,
        **_: Any,
    ) -> dict[str, Any]:
        self._current(Bucket, Key, "PutObject")  # the bucket exists
        with self.store.lock:  # check and write in one step, as S3 does
            current = self.store.objects.get(f"{Bucket}/{Key}")
            if IfNoneMatch == "*" and current is not None:
                raise client_error(412, "PreconditionFailed", "PutObject")
            if IfMatch is not None and current is None:
                raise client_error(404, "NoSuchKey", "PutObject")
            if IfMatch is not None and current is not None and current[1] != IfMatch:
                raise client_error(412, "PreconditionFailed", "PutObject")
            return {"ETag": self.store.put_locked(f"{Bucket}/{Key}", bytes(Body))}

    def get_object(self, *, Bucket: str, Key: str, **_: Any) -> dict[str, Any]:
        current = self._current(Bucket, Key, "GetObject")
        if current is None:
            raise client_error(404, "NoSuchKey", "GetObject")
        return {"Body": io.BytesIO(current[0]), "ETag": current[1]}

    def head_object(self, *, Bucket: str, Key: str, **_: Any) -> dict[str, Any]:
        current = self._current(Bucket, Key, "HeadObject")
        if current is None:
            raise client_error(404, "404", "HeadObject")
        return {"ETag": current[1]}

    def delete_object(
        self, *, Bucket: str, Key: str, IfMatch: str | None = None, **_: Any
    ) -> dict[str, Any]:
        current = self._current(Bucket, Key, "DeleteObject")
        if IfMatch is not None and current is None:
            raise client_error(404, "NoSuchKey", "DeleteObject")
        if IfMatch is not None and current is not None and current[1] != IfMatch:
            raise client_error(412, "PreconditionFailed", "DeleteObject")
        with self.store.lock:
            self.store.objects.pop(f"{Bucket}/{Key}", None)
        return {}


@dataclass(frozen=True)
class MemoryBucket:
    """A bucket of the memory store, with the names tests use of a moto bucket."""

    name: str
    store: MemoryObjects
    filesystem: pafs.FileSystem

    def uri(self, prefix: str = "petsync") -> str:
        return f"s3://{self.name}/{prefix}" if prefix else f"s3://{self.name}"

    def object_keys(self, prefix: str = "") -> list[str]:
        start = f"{self.name}/{prefix}"
        with self.store.lock:
            keys = [k for k in self.store.objects if k.startswith(start)]
        return sorted(k.split("/", 1)[1] for k in keys)
