"""The run lock's object on S3 and S3-compatible stores, through botocore (``petsync[s3]``).

S3 makes a write conditional with HTTP's own headers: ``If-None-Match: *`` creates only if
absent, ``If-Match: <etag>`` replaces or deletes only that version (``412``; ``409`` when a
concurrent conditional write raced ours). The ETag is the lock's version tag. Credentials,
endpoint and region are the run's (:mod:`petsync.storage.credentials`); every call has the
same timeouts and attempts as the file system's.
"""

from __future__ import annotations

import ctypes
import gc
import logging
from collections.abc import Mapping
from typing import Any, Protocol

from petsync.core.errors import ConfigError
from petsync.storage.credentials import environment_settings
from petsync.storage.filesystem import (
    CONNECT_TIMEOUT_SECONDS,
    REQUEST_TIMEOUT_SECONDS,
    S3_ATTEMPTS,
    store_error,
)
from petsync.storage.location import Location
from petsync.storage.lock import Conflict, Missing, warn_not_released

logger = logging.getLogger("petsync.storage.lock")  # the lock's events, under one name

_CONFLICT_STATUSES = frozenset({409, 412})  # 409: a concurrent conditional write raced ours


class S3Api(Protocol):
    """The four calls of a botocore S3 client the lock uses (tests pass the real one)."""

    def put_object(self, **kwargs: Any) -> dict[str, Any]: ...
    def get_object(self, **kwargs: Any) -> dict[str, Any]: ...
    def delete_object(self, **kwargs: Any) -> dict[str, Any]: ...
    def head_object(self, **kwargs: Any) -> dict[str, Any]: ...


def s3_client(environ: Mapping[str, str] | None = None) -> S3Api:
    """A botocore S3 client with the credentials chain, endpoint and region of the environment."""
    try:
        import botocore.config
        import botocore.session
    except ImportError as exc:  # pragma: no cover - the s3 extra is missing
        raise ConfigError("the lock on s3:// needs botocore: pip install 'petsync[s3]'") from exc
    settings = environment_settings(environ)
    config = botocore.config.Config(
        connect_timeout=CONNECT_TIMEOUT_SECONDS,
        read_timeout=REQUEST_TIMEOUT_SECONDS,
        retries={"max_attempts": S3_ATTEMPTS, "mode": "standard"},
    )
    client: S3Api = botocore.session.get_session().create_client(
        "s3",
        endpoint_url=settings.get("endpoint_override"),
        region_name=settings.get("region"),
        config=config,
    )
    return client


class S3LockObject:
    """The lock object on S3, through botocore (``If-None-Match: *``, ``If-Match``)."""

    def __init__(
        self,
        location: Location,
        key: str,
        *,
        client: S3Api | None = None,
        markers: tuple[str, ...] = (),
    ) -> None:
        self.location = location
        self.key = key
        # Empty folder markers pyarrow writes on S3 (``prefix/.petsync-tmp/``): objects of
        # their own, deleted with the lock; deleting one leaves every other object in place.
        self._markers = [f"{location.prefix}/{n}/" if location.prefix else f"{n}/" for n in markers]
        self._given = client
        self._client: S3Api | None = None

    @property
    def client(self) -> S3Api:
        if self._given is not None:
            return self._given
        if self._client is None:
            self._client = s3_client()
        return self._client

    def close(self) -> None:
        """botocore's S3 client holds ~12 MiB of service model; drop it before the fetch.
        A new client confirms and releases the lock later, after the peak."""
        self._client = None
        _give_back_memory()

    def create(self, body: bytes, *, doing: str, before_fetch: bool) -> str:
        return self._put(body, doing=doing, before_fetch=before_fetch, IfNoneMatch="*")

    def read(self, *, doing: str, before_fetch: bool) -> tuple[bytes, str]:
        answer = self._call("get_object", doing, before_fetch=before_fetch)
        return answer["Body"].read(), str(answer["ETag"])

    def replace(self, body: bytes, tag: str, *, doing: str, before_fetch: bool) -> str:
        return self._put(body, doing=doing, before_fetch=before_fetch, IfMatch=tag)

    def delete(self, tag: str) -> None:
        import botocore.exceptions

        for marker in self._markers:  # first, while the lock is still held
            try:
                self.client.delete_object(Bucket=self.location.bucket, Key=marker)
            except (botocore.exceptions.ClientError, botocore.exceptions.BotoCoreError):
                logger.warning("export.marker_not_removed", extra={"fields": {"key": marker}})
        try:
            self.client.delete_object(Bucket=self.location.bucket, Key=self.key, IfMatch=tag)
        except botocore.exceptions.ClientError as exc:
            if _status(exc) in _CONFLICT_STATUSES:
                return  # not ours any more
            self._release_unconditionally(tag)
        except botocore.exceptions.BotoCoreError:
            warn_not_released(self.location, self.key)

    def _release_unconditionally(self, etag: str) -> None:
        """For stores that refuse conditional deletes: delete only if the ETag is still ours."""
        import botocore.exceptions

        try:
            head = self.client.head_object(Bucket=self.location.bucket, Key=self.key)
            if head.get("ETag") == etag:
                self.client.delete_object(Bucket=self.location.bucket, Key=self.key)
        except (botocore.exceptions.ClientError, botocore.exceptions.BotoCoreError):
            warn_not_released(self.location, self.key)

    def _put(self, body: bytes, *, doing: str, before_fetch: bool, **condition: str) -> str:
        answer = self._call(
            "put_object",
            doing,
            before_fetch=before_fetch,
            Body=body,
            ContentType="application/json",
            **condition,
        )
        return str(answer["ETag"])

    def _call(
        self, method: str, doing: str, *, before_fetch: bool, **kwargs: Any
    ) -> dict[str, Any]:
        """One S3 call on the lock object; a refusal or an unreachable store is translated
        (exit 2 with "nothing was fetched" before the first request, else exit 1)."""
        import botocore.exceptions

        try:
            result: dict[str, Any] = getattr(self.client, method)(
                Bucket=self.location.bucket, Key=self.key, **kwargs
            )
            return result
        except botocore.exceptions.ClientError as exc:
            status = _status(exc)
            if status in _CONFLICT_STATUSES:
                raise Conflict from exc
            if status == 404 and _code(exc) in ("NoSuchKey", "404"):
                raise Missing from exc
            raise store_error(self.location, exc, doing=doing, before_fetch=before_fetch) from exc
        except botocore.exceptions.BotoCoreError as exc:
            raise store_error(self.location, exc, doing=doing, before_fetch=before_fetch) from exc


def _give_back_memory() -> None:
    """Collect the dropped client's cycles now and hand glibc's free pages back.

    Measured at 1,000,000 pets (benchmarks/bench_storage.py, medians of 3): without the
    collection the export to S3 peaked about 6 MiB higher (268 against 260-263 MiB), its
    garbage waiting for a late full collection while the fetch grew the heap around it.
    ``malloc_trim`` returns about 2 MiB at once. The rest of botocore's cost (about 20 MiB)
    is its modules and the fragments its freed objects leave.
    """
    gc.collect()
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc (macOS, musl): nothing to trim
        return
    trim(0)


def _status(exc: Any) -> int:
    meta = exc.response.get("ResponseMetadata", {}) if hasattr(exc, "response") else {}
    return int(meta.get("HTTPStatusCode", 0))


def _code(exc: Any) -> str:
    return str(exc.response.get("Error", {}).get("Code", "")) if hasattr(exc, "response") else ""
