"""The run lock on an object store: a conditional create with an expiry, fenced at publication.

Object stores have no ``flock``; what they have is a write that succeeds only if the object
is absent or unchanged: S3 ``PutObject`` with ``If-None-Match: *`` / ``If-Match: <etag>``,
GCS ``ifGenerationMatch=0`` / ``ifGenerationMatch=<generation>``, Azure ``If-None-Match: *``
/ ``If-Match: <etag>``. pyarrow does not expose these, so the lock speaks each store's
protocol through the provider's own Python library (an extra each: botocore for
``petsync[s3]``, google-cloud-storage for ``petsync[gcs]``, azure-storage-blob for
``petsync[azure]``), with the same credentials and endpoint as the run's file system. The
algorithm below is one; :class:`LockObject` is what each store provides (the version tag
is the ETag, or the GCS generation).

* **Acquire**: create ``OUT/.petsync.lock`` with ``If-None-Match: *``. The body names the
  holder (host, pid, a random owner id) and when the lock expires. If the object exists and
  has not expired, the run stops with :class:`~petsync.core.errors.LockedError` naming the
  holder and the expiry. If it has expired (its run was killed), it is taken over with
  ``If-Match`` on the stale object's ETag, so of two runs taking over at once one wins.
* **Confirm** (just before publishing): rewrite the lock with ``If-Match`` on our own ETag,
  pushing the expiry forward. If that fails, the lock expired during a very long run and
  another run took it: this run publishes nothing. This fencing is what makes the expiry
  safe: a run can lose the lock, but never publish after losing it.
* **Release**: delete the object with ``If-Match`` on our ETag (a store that does not take
  conditions on deletes gets a read-compare-delete).

Expiry uses the wall clock of the machines involved (the injected ``now``), so their clocks
should agree within minutes (NTP). Stores that ignore the conditions (some older
S3-compatible servers) cannot support two runs at once: run one export per location there.
"""

from __future__ import annotations

import ctypes
import datetime as dt
import gc
import json
import logging
import os
import socket
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from petsync.core.errors import LockedError, PetsyncError
from petsync.core.locking import Lock
from petsync.export.lock import LOCK_NAME
from petsync.export.objectstore.lockobject import (
    Conflict,
    LockObject,
    Missing,
    warn_not_released,
)
from petsync.storage.credentials import environment_settings
from petsync.storage.filesystem import (
    CLEANUP_LIMIT_SECONDS,
    CONNECT_TIMEOUT_SECONDS,
    REQUEST_TIMEOUT_SECONDS,
    S3_ATTEMPTS,
    STEP_LIMIT_SECONDS,
    store_error,
)
from petsync.storage.location import Location
from petsync.storage.store_calls import StoreCalls

logger = logging.getLogger(__name__)

DEFAULT_LOCK_EXPIRY = dt.timedelta(hours=6)  # far beyond a nightly run; a killed run frees it
_CONFLICT_STATUSES = frozenset({409, 412})  # 409: a concurrent conditional write raced ours


class S3Api(Protocol):
    """The four calls of a botocore S3 client the lock uses (tests pass the real one)."""

    def put_object(self, **kwargs: Any) -> dict[str, Any]: ...
    def get_object(self, **kwargs: Any) -> dict[str, Any]: ...
    def delete_object(self, **kwargs: Any) -> dict[str, Any]: ...
    def head_object(self, **kwargs: Any) -> dict[str, Any]: ...


class RunLock(Protocol):
    """What a run needs of its lock: taken, confirmed before publishing, released."""

    def acquire(self) -> None: ...
    def confirm(self) -> None: ...
    def release(self) -> None: ...


@dataclass(frozen=True)
class Holder:
    """Who holds a lock and until when, as its object says."""

    owner: str
    host: str
    pid: int
    acquired_at: str
    expires_at: dt.datetime | None

    @classmethod
    def parse(cls, body: bytes) -> Holder:
        try:
            data = json.loads(body.decode("utf-8"))
            expires = dt.datetime.fromisoformat(str(data["expires_at"]))
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            return cls("", "?", 0, "?", None)  # unreadable: treated as held, never expired
        return cls(
            str(data.get("owner", "")),
            str(data.get("host", "?")),
            int(data.get("pid", 0)),
            str(data.get("acquired_at", "?")),
            expires if expires.tzinfo else expires.replace(tzinfo=dt.UTC),
        )

    def describe(self) -> str:
        return f"host {self.host}, pid {self.pid}, since {self.acquired_at}"


def s3_client(environ: Mapping[str, str] | None = None) -> S3Api:
    """A botocore S3 client with the credentials chain, endpoint and region of the environment."""
    try:
        import botocore.config
        import botocore.session
    except ImportError as exc:  # pragma: no cover - the s3 extra is missing
        from petsync.core.errors import ConfigError

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


class ObjectLock(Lock):
    """The lock of an object-store location, taken for the duration of a ``with`` block.

    ``backend`` is the store's :class:`LockObject`; by default the one of the location's
    store (``client`` is the botocore S3 client to use on S3; ``markers`` names folders under
    the location whose empty S3 folder-marker object goes with the lock, so a successful run
    leaves nothing behind).

    >>> with ObjectLock(parse_location("s3://archive/petsync")) as lock:  # doctest: +SKIP
    ...     ...              # fetch and stage
    ...     lock.confirm()   # still ours: publish
    """

    def __init__(
        self,
        location: Location,
        *,
        client: S3Api | None = None,
        now: Callable[[], dt.datetime] | None = None,
        expiry: dt.timedelta = DEFAULT_LOCK_EXPIRY,
        backend: LockObject | None = None,
        markers: tuple[str, ...] = (),
    ) -> None:
        self.location = location
        self.key = f"{location.prefix}/{LOCK_NAME}" if location.prefix else LOCK_NAME
        self.uri = location.child(LOCK_NAME)
        self.backend = backend or lock_object(location, self.key, client=client, markers=markers)
        self._now = now or (lambda: dt.datetime.now(dt.UTC))
        self.expiry = expiry
        self.owner = uuid.uuid4().hex
        self._etag: str | None = None

    def acquire(self) -> None:
        """Take the lock, or take over an expired one; :class:`LockedError` if held."""
        try:
            self._take()
        finally:
            self.backend.close()

    def _take(self) -> None:
        try:
            self._etag = self.backend.create(
                self._body(), doing="taking the lock", before_fetch=True
            )
            return
        except Conflict:
            pass
        for _ in range(3):  # bounded: the holder may release it while we look
            try:
                body, tag = self.backend.read(doing="reading the lock", before_fetch=True)
            except Missing:
                try:
                    self._etag = self.backend.create(
                        self._body(), doing="taking the lock", before_fetch=True
                    )
                    return
                except Conflict:
                    continue
            holder = Holder.parse(body)
            if holder.owner == self.owner:  # our own create, retried after its answer was lost
                self._etag = tag
                return
            if holder.expires_at is None or holder.expires_at > self._now():
                raise self._held(holder)
            try:
                self._etag = self.backend.replace(
                    self._body(), tag, doing="taking over the lock", before_fetch=True
                )
            except (Conflict, Missing):
                continue  # another run took it over, or its holder released it: look again
            logger.warning(
                "export.lock_taken_over",
                extra={"fields": {"lock": self.uri, "expired_holder": holder.describe()}},
            )
            return
        raise LockedError(
            f"another petsync run keeps taking the lock {self.uri}; wait for it to finish "
            "and run again"
        )

    def confirm(self) -> None:
        """Prove the lock is still ours (and extend it) right before publishing."""
        if self._etag is None:
            raise LockedError(f"this run does not hold the lock {self.uri}; nothing published")
        try:
            self._etag = self.backend.replace(
                self._body(), self._etag, doing="confirming the lock", before_fetch=False
            )
        except (Conflict, Missing) as exc:
            self._etag = None
            raise LockedError(
                f"this run lost the lock {self.uri}: it ran longer than the lock's expiry "
                f"({_hours(self.expiry)}) and another run took the lock over. Nothing was "
                "published; earlier snapshots are untouched."
            ) from exc

    def release(self) -> None:
        """Delete the lock if it is still ours; never raises (the expiry frees it anyway)."""
        etag, self._etag = self._etag, None
        if etag is not None:
            self.backend.delete(etag)

    def _body(self) -> bytes:
        now = self._now()
        return json.dumps(
            {
                "owner": self.owner,
                "host": socket.gethostname(),
                "pid": os.getpid(),
                "acquired_at": now.isoformat(),
                "expires_at": (now + self.expiry).isoformat(),
            }
        ).encode()

    def _held(self, holder: Holder) -> LockedError:
        until = (
            f"; it expires at {holder.expires_at.isoformat()}"
            if holder.expires_at is not None
            else "; it is unreadable, so it never expires"
        )
        return LockedError(
            f"another petsync run is writing to {self.location} (it holds the lock "
            f"{self.uri}: {holder.describe()}{until}). Wait for it to finish and run again; "
            "if that run was killed, the lock frees itself when it expires, or delete "
            f"{self.uri} once you are sure no run is writing."
        )


class StoppableLock(Lock):
    """An :class:`ObjectLock` whose store calls run through the run's :class:`StoreCalls`.

    Confirming is stoppable like any store step. Releasing is bounded by
    :data:`CLEANUP_LIMIT_SECONDS` and never raises; after a step was abandoned (a stop or
    a timeout while it still wrote) the lock is kept, so no other run starts while that
    step may still write: it expires, or the lock object can be deleted by hand.
    """

    def __init__(self, lock: ObjectLock, calls: StoreCalls) -> None:
        self.lock = lock
        self.calls = calls

    def acquire(self) -> None:
        self.calls.run(self.lock.acquire, doing="taking the lock", limit=STEP_LIMIT_SECONDS)

    def confirm(self) -> None:
        self.calls.run(self.lock.confirm, doing="confirming the lock", limit=STEP_LIMIT_SECONDS)

    def release(self) -> None:
        if self.calls.abandoned is not None:
            logger.warning(
                "export.lock_kept",
                extra={
                    "fields": {
                        "lock": self.lock.uri,
                        "reason": f"a store step was left running ({self.calls.abandoned})",
                        "expires_in": _hours(self.lock.expiry),
                    }
                },
            )
            return
        try:
            self.calls.run(
                self.lock.release,
                doing="releasing the lock",
                limit=CLEANUP_LIMIT_SECONDS,
                stoppable=False,
            )
        except PetsyncError:
            warn_not_released(self.lock.location, self.lock.key)


def lock_object(
    location: Location, key: str, *, client: S3Api | None = None, markers: tuple[str, ...] = ()
) -> LockObject:
    """The :class:`LockObject` of ``location``'s store (S3, GCS or Azure)."""
    if location.kind == "gcs":
        from petsync.export.objectstore.gcslock import GcsLockObject

        return GcsLockObject(location, key)
    if location.kind == "azure":
        from petsync.export.objectstore.azurelock import AzureLockObject

        return AzureLockObject(location, key)
    return S3LockObject(location, key, client=client, markers=markers)


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


def _hours(delta: dt.timedelta) -> str:
    hours = delta.total_seconds() / 3600
    return f"{hours:g} h"
