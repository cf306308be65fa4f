"""The run lock: one shape (acquire, confirm, release, ``with``), a local and an object form.

Two runs must never write one location at once, and a killed run must never leave a lock
behind that needs a person. Every lock here takes itself on entering a ``with`` and gives
itself back on leaving it, whatever happened inside; :meth:`Lock.confirm` proves, right
before a run publishes, that the lock is still its own.

**Locally** the lock is a ``flock`` (:func:`petsync.core.files.try_lock`): the kernel drops
it when the holding process exits for any reason (SIGKILL and power loss included), so there
is never a stale lock to clean up, and it cannot be lost while the process lives.
:class:`DirectoryLock` is the export's, on ``DIR/.petsync.lock``; :class:`FileLock` the
history's, on a file opened as a journal is. The file stays on release: deleting it would
let a run that opened the old file and one that created a new one both think they hold it.

**On an object store** there is no ``flock``; what there is, is a write that succeeds only
if the object is absent or unchanged: S3 ``PutObject`` with ``If-None-Match: *`` /
``If-Match: <etag>``, GCS ``ifGenerationMatch=0`` / ``ifGenerationMatch=<generation>``,
Azure ``If-None-Match: *`` / ``If-Match: <etag>``. pyarrow does not expose these, so each
store's :class:`LockObject` speaks its protocol through the provider's own library
(:mod:`.s3_lock_object`, :mod:`.gcs_lock_object`, :mod:`.azure_lock_object`), and
:class:`ObjectLock` is the one algorithm over any of them (the version tag is the ETag, or
the GCS generation):

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

import datetime as dt
import errno
import json
import logging
import os
import socket
import stat
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Protocol, Self

from petsync.core.errors import ConfigError, LockedError, PetsyncError
from petsync.core.files import open_append, try_lock, unlock
from petsync.storage.location import Location
from petsync.storage.store_calls import CLEANUP_LIMIT_SECONDS, STEP_LIMIT_SECONDS, StoreCalls

logger = logging.getLogger(__name__)

LOCK_NAME = ".petsync.lock"
DEFAULT_LOCK_EXPIRY = dt.timedelta(hours=6)  # far beyond a nightly run; a killed run frees it


class Lock:
    """A lock taken by :meth:`acquire`, proven still held by :meth:`confirm` right before
    publishing, and given back by :meth:`release` (each overridden by a form below)."""

    def acquire(self) -> None:
        raise NotImplementedError

    def confirm(self) -> None:
        raise NotImplementedError

    def release(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


class DirectoryLock(Lock):
    """Hold the petsync lock of ``directory`` for the duration of a ``with`` block.

    >>> with DirectoryLock(Path("out")):                 # doctest: +SKIP
    ...     ...  # nobody else writes snapshots under out/ meanwhile

    A second holder (in this or another process) gets :class:`LockedError` at once rather
    than waiting: a nightly job that overlaps the previous night's should say so, not queue.
    The file holds the pid of the last holder, for whoever investigates.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.path = directory / LOCK_NAME
        self._fd: int | None = None

    def acquire(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        try:
            # Never through a link: it would truncate and overwrite whatever it points to.
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise ConfigError(
                    f"the lock file {self.path} is a symbolic link; petsync writes its pid "
                    "there and never follows a link. Remove the link and run again."
                ) from exc
            raise
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise ConfigError(
                f"the lock file {self.path} is not a regular file; remove it and run again."
            )
        try:
            locked = try_lock(fd)
        except BaseException:
            os.close(fd)
            raise
        if not locked:
            holder = _read_holder(fd)
            os.close(fd)
            raise LockedError(
                f"another petsync run is writing to {self.directory} (it holds the lock "
                f"{self.path}{holder}). Wait for it to finish and run again; the lock is "
                "released automatically when that process exits."
            )
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd

    def confirm(self) -> None:
        """Nothing to prove: a flock cannot be lost while the process lives."""

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            unlock(fd)
            os.close(fd)


def _read_holder(fd: int) -> str:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return ""
    return f", pid {text}" if text.isdigit() else ""


class FileLock(Lock):
    """A ``flock`` on ``path``, opened as a journal is (:func:`petsync.core.files.open_append`):
    never through a link, never blocked by a FIFO (either is exit 2 naming ``what``). A
    second holder gets :class:`LockedError` with ``busy`` at once."""

    def __init__(self, path: Path, *, what: str, busy: str) -> None:
        self.path = path
        self.what = what
        self.busy = busy
        self._fd: int | None = None

    def acquire(self) -> None:
        fd = open_append(self.path, self.what)
        try:
            if not try_lock(fd):
                raise LockedError(self.busy)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def confirm(self) -> None:
        """Nothing to prove: a flock cannot be lost while the process lives."""

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)  # closing the file gives the flock back


class LockObject(Protocol):
    """The lock object on one store, written only under the store's conditions.

    ``create`` raises :class:`Conflict` if the object exists; ``read`` raises
    :class:`Missing` if it does not; ``replace`` raises either when the object is no
    longer the version ``tag`` names; ``delete`` never raises (the expiry frees a lock).
    Any other failure is translated by :func:`~petsync.storage.filesystem.store_error`
    (``doing``, ``before_fetch``).
    """

    def create(self, body: bytes, *, doing: str, before_fetch: bool) -> str: ...
    def read(self, *, doing: str, before_fetch: bool) -> tuple[bytes, str]: ...
    def replace(self, body: bytes, tag: str, *, doing: str, before_fetch: bool) -> str: ...
    def delete(self, tag: str) -> None: ...
    def close(self) -> None: ...


class Conflict(Exception):
    """A conditional write lost: the object exists, or changed."""


class Missing(Exception):
    """The lock object is not there."""


def lock_key(location: Location) -> str:
    """The key of ``location``'s lock object: ``PREFIX/.petsync.lock``."""
    return f"{location.prefix}/{LOCK_NAME}" if location.prefix else LOCK_NAME


def warn_not_released(location: Location, key: str) -> None:
    logger.warning(
        "export.lock_not_released", extra={"fields": {"lock": f"{location.bucket}/{key}"}}
    )


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


class ObjectLock(Lock):
    """The lock of an object-store location, taken for the duration of a ``with`` block.

    ``backend`` is the :class:`LockObject` of the location's store, at :func:`lock_key`
    (:func:`petsync.storage.store.object_lock` chooses it by the location's kind).

    >>> with object_lock(parse_location("s3://archive/petsync")) as lock:  # doctest: +SKIP
    ...     ...              # fetch and stage
    ...     lock.confirm()   # still ours: publish
    """

    def __init__(
        self,
        location: Location,
        backend: LockObject,
        *,
        now: Callable[[], dt.datetime] | None = None,
        expiry: dt.timedelta = DEFAULT_LOCK_EXPIRY,
    ) -> None:
        self.location = location
        self.key = lock_key(location)
        self.uri = location.child(LOCK_NAME)
        self.backend = backend
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


def _hours(delta: dt.timedelta) -> str:
    hours = delta.total_seconds() / 3600
    return f"{hours:g} h"
