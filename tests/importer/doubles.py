"""Test doubles of the import tests: an instant in-memory client, its POSTs in flight, and a
recorder of syncs.

Plain classes, not fixtures: a test builds the one it needs.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from petsync.client.creations import Creation
from petsync.client.listing import Page
from petsync.client.records import PetColumns
from petsync.core.models import NewPet, Pet, PetStatus
from petsync.importer.journal_home import journal_home, state_root


def journal_of(source: Path, out_dir: Path | None = None, *, api: str | None = None) -> Path:
    """Where an import keeps the journal of ``source``: by the sha256 of its bytes, in the
    output folder (an older petsync's, a dry run without a client) or the API's journal
    home under the state directory, whichever holds it. ``api`` (a base URL) names the
    home's, before it exists."""
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    if api is not None:
        return journal_home(api, None, os.environ, Path.home()) / f"{digest}.jsonl"
    legacy = (out_dir or source.parent) / ".petsync" / "journals" / f"{digest}.jsonl"
    if legacy.exists():
        return legacy
    homes = state_root(None, os.environ, Path.home()) / "journals"
    found = sorted(homes.glob(f"*/{digest}.jsonl"))
    return found[0] if len(found) == 1 else legacy


class EmptyListing:
    """A listPets sweep that proves at once there is nothing (a ListingView)."""

    style = "none"
    pages = 1
    requests = 1
    retries = 0
    complete: bool | None = True
    incomplete_reason: str | None = None
    duplicates = 0

    def __iter__(self) -> Iterator[Page]:
        yield Page(PetColumns.empty(), invalid=[], url="memory:")


class OneAfterAnother:
    """A double's POSTs in flight (a :class:`~petsync.client.api.PetCreations`): each
    started one is sent by ``create`` when outcomes are waited for, in the order started;
    what ``create`` raises is that POST's error."""

    def __init__(self, create: Callable[[NewPet], Pet]) -> None:
        self.create = create
        self.started: deque[tuple[int, NewPet]] = deque()

    @property
    def in_flight(self) -> int:
        return len(self.started)

    def start(self, key: int, pet: NewPet) -> None:
        self.started.append((key, pet))

    def wait(self, timeout: float) -> list[Creation]:
        done = []
        while self.started:
            key, pet = self.started.popleft()
            try:
                done.append(Creation(key, self.create(pet), None, retried=False))
            except Exception as exc:
                done.append(Creation(key, None, exc, retried=False))
        return done

    def close(self) -> None:
        self.started.clear()

    def __enter__(self) -> OneAfterAnother:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class InstantClient:
    """Creates pets in memory, instantly (an :class:`~petsync.importer.run.ImportClient`):
    :meth:`create_pet` makes each POST's pet; a test overrides it to vary that."""

    base_url = "https://pets.invalid/v1"  # names its journals' home; never connected to
    requests = 0
    retries = 0

    def __init__(self) -> None:
        self.calls = 0
        self.lock = threading.Lock()

    def create_pet(self, pet: NewPet) -> Pet:
        with self.lock:
            self.calls += 1
            return Pet(id=self.calls, name=pet.name, categoryId=pet.categoryId)

    def creations(self) -> OneAfterAnother:
        return OneAfterAnother(self.create_pet)

    def list_pets(self, status: PetStatus | None = None, *, limit: int = 20) -> EmptyListing:
        return EmptyListing()


@dataclass(frozen=True)
class Sync:
    """One ``fsync``/``fdatasync`` that returned: the file synced and its size when asked."""

    device: int
    inode: int
    size: int


class SyncRecorder:
    """Wraps ``os.fsync`` and ``os.fdatasync``: each call goes through, then is recorded.

    A sync is recorded only once the real call returned, with the file its descriptor is
    open on (device and inode, so a reused descriptor number cannot fool it) and the
    file's size just before the call: the bytes that sync made durable.
    """

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.syncs: list[Sync] = []
        self._lock = threading.Lock()
        for name in ("fsync", "fdatasync"):
            if hasattr(os, name):
                monkeypatch.setattr(os, name, self._through(getattr(os, name)))

    def _through(self, real: Callable[[int], None]) -> Callable[[int], None]:
        def sync(fd: int) -> None:
            stat = os.fstat(fd)
            real(fd)
            with self._lock:
                self.syncs.append(Sync(stat.st_dev, stat.st_ino, stat.st_size))

        return sync

    def of(self, path: Path) -> list[Sync]:
        """The syncs of the file at ``path``, oldest first."""
        stat = path.stat()
        with self._lock:
            return [s for s in self.syncs if (s.device, s.inode) == (stat.st_dev, stat.st_ino)]

    def durable_bytes(self, path: Path) -> int:
        """How many leading bytes of ``path`` some sync has made durable (0 if none)."""
        return max((s.size for s in self.of(path)), default=0)
