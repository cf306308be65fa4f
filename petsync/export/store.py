"""Where a run writes: one interface over a local directory and an object-store prefix.

:func:`open_store` turns the export's ``--out`` into a :class:`SnapshotStore`: its lock,
the clean-up of what killed runs left, a new staged snapshot, pruning and the latest
snapshot. :class:`LocalStore` is the rename recipe of
:mod:`petsync.storage.local_publication` and the flock of :mod:`petsync.export.lock`;
:class:`ObjectStore` the copy recipe and conditional lock of :mod:`petsync.export.objectstore`.
Everything a store does before the first API
request (:meth:`SnapshotStore.prepare`) fails as a usage error (exit 2, nothing fetched).
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

from petsync.core.errors import ConfigError
from petsync.core.stop import StopRequest
from petsync.export.lock import DirectoryLock
from petsync.export.snapshot import latest_snapshot, list_snapshots
from petsync.storage.layout import STAGING_DIR, SnapshotInfo
from petsync.storage.local_publication import StagedSnapshot, clean_staging, prune_snapshots
from petsync.storage.location import Location


class Staged(Protocol):
    """A snapshot being written aside; published whole, or discarded."""

    path: Any

    def scratch(self, suffix: str) -> Path: ...
    def file(self, name: str) -> Path: ...
    def output(self, name: str) -> contextlib.AbstractContextManager[Any]: ...
    def write_text(self, name: str, text: str) -> object: ...
    def publish(self, date: dt.date) -> Path | str: ...
    def discard(self) -> None: ...


class Lock(Protocol):
    def acquire(self) -> None: ...
    def confirm(self) -> None: ...
    def release(self) -> None: ...


class SnapshotStore(Protocol):
    """What a run needs of the place its snapshots live."""

    location: Location

    def prepare(self) -> Lock: ...
    def clean_staging(self) -> list[Path | str]: ...
    def latest(self, before: dt.date) -> SnapshotInfo | None: ...
    def dates_after(self, date: dt.date) -> list[dt.date]: ...
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

    def latest(self, before: dt.date) -> SnapshotInfo | None:
        return latest_snapshot(self.directory, before=before)

    def dates_after(self, date: dt.date) -> list[dt.date]:
        return [s.date for s in list_snapshots(self.directory) if s.date > date]

    def stage(self, run_id: str) -> Staged:
        return StagedSnapshot.create(self.directory)

    def prune(self, keep: int, today: dt.date) -> list[Path | str]:
        return list(prune_snapshots(self.directory, keep, today))


class ObjectStore:
    """An object-store prefix: conditional lock, staging prefix, copies to publish.

    Every store step runs through :class:`~petsync.storage.store_calls.StoreCalls`:
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
        from petsync.storage.filesystem import SETUP_LIMIT_SECONDS, open_filesystem
        from petsync.storage.store_calls import StoreCalls

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
        from petsync.export.objectstore.lock import ObjectLock, StoppableLock
        from petsync.storage.filesystem import SETUP_LIMIT_SECONDS, check_reachable

        def take() -> ObjectLock:
            check_reachable(self.location, self.filesystem)
            markers = (STAGING_DIR,) if self.location.kind == "s3" else ()
            lock = ObjectLock(self.location, now=self._now, markers=markers)
            lock.acquire()
            return lock

        taken = self.calls.run(
            take, doing="taking the lock", limit=SETUP_LIMIT_SECONDS, before_fetch=True
        )
        return StoppableLock(taken, self.calls)

    def clean_staging(self) -> list[Path | str]:
        from petsync.storage.filesystem import STEP_LIMIT_SECONDS
        from petsync.storage.object_publication import recover_staging

        with self._writing("cleaning the staging area", before=True):
            return self.calls.run(
                lambda: list(recover_staging(self.location, self.filesystem)),
                doing="cleaning the staging area",
                limit=STEP_LIMIT_SECONDS,
            )

    def latest(self, before: dt.date) -> SnapshotInfo | None:
        from petsync.storage.filesystem import STEP_LIMIT_SECONDS

        return self.calls.run(
            lambda: latest_snapshot(self.location.uri, before=before),
            doing="listing snapshots",
            limit=STEP_LIMIT_SECONDS,
        )

    def dates_after(self, date: dt.date) -> list[dt.date]:
        from petsync.storage.filesystem import STEP_LIMIT_SECONDS

        return self.calls.run(
            lambda: [s.date for s in list_snapshots(self.location.uri) if s.date > date],
            doing="listing snapshots",
            limit=STEP_LIMIT_SECONDS,
        )

    def stage(self, run_id: str) -> Staged:
        from petsync.storage.object_publication import ObjectStagedSnapshot

        return ObjectStagedSnapshot.create(self.location, self.filesystem, run_id, calls=self.calls)

    def prune(self, keep: int, today: dt.date) -> list[Path | str]:
        from petsync.storage.filesystem import STEP_LIMIT_SECONDS
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
            f"cannot write to --out {location}: {exc.strerror or exc} ({where}). Nothing "
            "was fetched. Fix the permissions or free space, or choose another --out."
        ) from exc
