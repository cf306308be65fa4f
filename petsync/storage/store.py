"""Where a run writes: one interface over a local directory and an object-store prefix.

:func:`open_store` turns a location into a :class:`SnapshotStore`: its lock, the clean-up of
what killed runs left, a new staged snapshot, pruning, and reads of what is published
(:meth:`SnapshotStore.read`, run as a store step). :class:`LocalStore` is the rename recipe of
:mod:`.local_publication` and the flock of :mod:`.lock`; :class:`ObjectStore` the copy
recipe of :mod:`.object_publication` and the conditional lock of :mod:`.lock`, on the lock
object :func:`object_lock` chooses for the store. Everything a store does before the first
API request (:meth:`SnapshotStore.prepare`) fails as a usage error (exit 2, nothing fetched).
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from petsync.core.errors import ConfigError
from petsync.core.settings_table import OUT
from petsync.core.stop import StopRequest
from petsync.storage.layout import STAGING_DIR
from petsync.storage.local_publication import StagedSnapshot, clean_staging, prune_snapshots
from petsync.storage.location import Location
from petsync.storage.lock import (
    DEFAULT_LOCK_EXPIRY,
    DirectoryLock,
    Lock,
    ObjectLock,
    StoppableLock,
    lock_key,
)
from petsync.storage.store_calls import SETUP_LIMIT_SECONDS, STEP_LIMIT_SECONDS, StoreCalls

if TYPE_CHECKING:
    from petsync.storage.lock import LockObject
    from petsync.storage.s3_lock_object import S3Api

T = TypeVar("T")


class Staged(Protocol):
    """A snapshot being written aside; published whole, or discarded."""

    path: Any

    def scratch(self, suffix: str) -> Path: ...
    def file(self, name: str) -> Path: ...
    def output(self, name: str) -> contextlib.AbstractContextManager[Any]: ...
    def write_text(self, name: str, text: str) -> object: ...
    def publish(self, date: dt.date) -> Path | str: ...
    def discard(self) -> None: ...


class SnapshotStore(Protocol):
    """What a run needs of the place its snapshots live."""

    location: Location

    def prepare(self) -> Lock: ...
    def clean_staging(self) -> list[Path | str]: ...
    def read(self, step: Callable[[Path | str], T], *, doing: str) -> T: ...
    def stage(self, run_id: str) -> Staged: ...
    def prune(self, keep: int, today: dt.date) -> list[Path | str]: ...


class LocalStore:
    """A local directory: flock, staging folder, one rename to publish."""

    def __init__(self, location: Location) -> None:
        assert location.local is not None
        self.location = location
        self.directory = location.local

    def prepare(self) -> Lock:
        with before_fetch(self.location):
            lock = DirectoryLock(self.directory)
            lock.acquire()
        return lock

    def clean_staging(self) -> list[Path | str]:
        return list(clean_staging(self.directory))

    def read(self, step: Callable[[Path | str], T], *, doing: str) -> T:
        """``step`` on the directory: a local read needs no limit."""
        return step(self.directory)

    def stage(self, run_id: str) -> Staged:
        return StagedSnapshot.create(self.directory)

    def prune(self, keep: int, today: dt.date) -> list[Path | str]:
        return list(prune_snapshots(self.directory, keep, today))


class ObjectStore:
    """An object-store prefix: conditional lock, staging prefix, copies to publish.

    Every store step runs through :class:`~.store_calls.StoreCalls`:
    in a worker thread, so SIGTERM and Ctrl-C act within the grace period even while a
    store client blocks, and the steps before the first API request within a limit.
    """

    def __init__(
        self,
        location: Location,
        *,
        now: Callable[[], dt.datetime],
        stop: StopRequest | None = None,
    ) -> None:
        from petsync.storage.filesystem import open_filesystem

        self.location = location
        self._now = now
        self.calls = StoreCalls(stop, location=str(location))
        self.filesystem = self.calls.run(
            lambda: open_filesystem(location),
            doing="opening the store",
            limit=SETUP_LIMIT_SECONDS,
            before_fetch=True,
        )

    def prepare(self) -> Lock:
        from petsync.storage.filesystem import check_reachable

        def take() -> ObjectLock:
            check_reachable(self.location, self.filesystem)
            markers = (STAGING_DIR,) if self.location.kind == "s3" else ()
            lock = object_lock(self.location, now=self._now, markers=markers)
            lock.acquire()
            return lock

        taken = self.calls.run(
            take, doing="taking the lock", limit=SETUP_LIMIT_SECONDS, before_fetch=True
        )
        return StoppableLock(taken, self.calls)

    def clean_staging(self) -> list[Path | str]:
        from petsync.storage.object_publication import recover_staging

        with self._writing("cleaning the staging area", before=True):
            return self.calls.run(
                lambda: list(recover_staging(self.location, self.filesystem)),
                doing="cleaning the staging area",
                limit=STEP_LIMIT_SECONDS,
            )

    def read(self, step: Callable[[Path | str], T], *, doing: str) -> T:
        """``step`` on the location's URI, as a stoppable store step within its limit."""
        return self.calls.run(
            lambda: step(self.location.uri), doing=doing, limit=STEP_LIMIT_SECONDS
        )

    def stage(self, run_id: str) -> Staged:
        from petsync.storage.object_publication import ObjectStagedSnapshot

        return ObjectStagedSnapshot.create(self.location, self.filesystem, run_id, calls=self.calls)

    def prune(self, keep: int, today: dt.date) -> list[Path | str]:
        from petsync.storage.object_publication import prune_objects

        with self._writing("pruning old snapshots", before=False):
            return self.calls.run(
                lambda: list(prune_objects(self.location, self.filesystem, keep, today)),
                doing="pruning old snapshots",
                limit=STEP_LIMIT_SECONDS,
            )

    @contextlib.contextmanager
    def _writing(self, doing: str, *, before: bool) -> Iterator[None]:
        from petsync.storage.filesystem import store_error

        try:
            yield
        except OSError as exc:
            raise store_error(self.location, exc, doing=doing, before_fetch=before) from exc


def open_store(
    location: Location, *, now: Callable[[], dt.datetime], stop: StopRequest | None = None
) -> SnapshotStore:
    """The store of ``location``: a local directory or an object-store prefix.

    ``stop`` lets SIGTERM and Ctrl-C end a run while an object store's call blocks.
    """
    if location.is_local:
        return LocalStore(location)
    with before_fetch(location):
        return ObjectStore(location, now=now, stop=stop)


@contextlib.contextmanager
def before_fetch(location: Location) -> Iterator[None]:
    """Turn an ``OSError`` of the set-up into a usage error: nothing was fetched yet."""
    try:
        yield
    except OSError as exc:
        where = exc.filename or location
        raise ConfigError(
            "cannot write to "
            + OUT.given(str(location))
            + f": {exc.strerror or exc} ({where}). Nothing was fetched. Fix the permissions "
            "or free space, or choose another " + OUT + "."
        ) from exc


def object_lock(
    location: Location,
    *,
    now: Callable[[], dt.datetime] | None = None,
    expiry: dt.timedelta = DEFAULT_LOCK_EXPIRY,
    client: S3Api | None = None,
    markers: tuple[str, ...] = (),
) -> ObjectLock:
    """The run lock of an object-store location, on its store's :class:`LockObject`.

    On S3, ``client`` is the botocore client to use (by default one from the environment)
    and ``markers`` names folders under the location whose empty folder-marker object goes
    with the lock, so a successful run leaves nothing behind.

    >>> with object_lock(parse_location("s3://archive/petsync")) as lock:  # doctest: +SKIP
    ...     lock.confirm()   # still ours: publish
    """
    return ObjectLock(
        location, _lock_object(location, client=client, markers=markers), now=now, expiry=expiry
    )


def _lock_object(
    location: Location, *, client: S3Api | None, markers: tuple[str, ...]
) -> LockObject:
    """The :class:`LockObject` of ``location``'s store (S3, GCS or Azure)."""
    key = lock_key(location)
    if location.kind == "gcs":
        from petsync.storage.gcs_lock_object import GcsLockObject

        return GcsLockObject(location, key)
    if location.kind == "azure":
        from petsync.storage.azure_lock_object import AzureLockObject

        return AzureLockObject(location, key)
    from petsync.storage.s3_lock_object import S3LockObject

    return S3LockObject(location, key, client=client, markers=markers)
