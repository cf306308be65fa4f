"""Publishing snapshots: staged aside, renamed into place in one step, pruned the same way.

A snapshot is written whole into ``DIR/.petsync-tmp/<unique>/`` (same filesystem as
``DIR/pets``), each file fsynced, and then renamed into ``DIR/pets/`` in one step; replacing
the same day's snapshot swaps the two directories atomically (``renameat2(RENAME_EXCHANGE)``
on Linux). A run that dies at any point leaves the published snapshots as they were, and the
next run removes what it left in the staging area (:func:`clean_staging`).

The files inside a staged snapshot need no atomic rename of their own: nobody reads the
staging area, and the directory rename publishes them all at once. The fsyncs follow the one
recipe of :mod:`petsync.core.files`. Call everything here only while holding the directory's
lock (see :mod:`petsync.storage.lock`). The layout itself is :mod:`petsync.storage.layout`.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import datetime as dt
import os
import shutil
import stat
import uuid
from collections.abc import Iterator
from pathlib import Path

from petsync.core.errors import ConfigError
from petsync.core.files import fsync_dir, fsync_file, own_folder
from petsync.storage.layout import STAGING_DIR, partition_path, pets_root
from petsync.storage.partitions import list_partitions


class LocalFiles:
    """A staged snapshot whose files are written to local paths (:meth:`file`) first."""

    def file(self, name: str) -> Path:
        raise NotImplementedError

    @contextlib.contextmanager
    def output(self, name: str) -> Iterator[str]:
        """Where a writer streams the snapshot file ``name``: its local path."""
        yield str(self.file(name))

    def write_text(self, name: str, text: str) -> Path:
        """Write a small text file into the snapshot (made durable or uploaded on publish)."""
        target = self.file(name)
        target.write_text(text, encoding="utf-8", newline="\n")
        return target


class StagedSnapshot(LocalFiles):
    """A snapshot being written aside, published in one rename or discarded.

    >>> staged = StagedSnapshot.create(Path("out"))                 # doctest: +SKIP
    >>> staged.write_text(MANIFEST_NAME, "{}")                      # doctest: +SKIP
    >>> staged.publish(dt.date(2026, 11, 22))                       # doctest: +SKIP
    """

    def __init__(self, directory: Path, path: Path) -> None:
        self.directory = directory
        self.path = path

    @classmethod
    def create(cls, directory: Path) -> StagedSnapshot:
        """A new, empty staged snapshot under ``directory``'s staging area."""
        staging = staging_dir(directory, create=True)
        path = staging / uuid.uuid4().hex
        path.mkdir()
        return cls(Path(directory), path)

    def file(self, name: str) -> Path:
        """Where the snapshot file ``name`` is written while staged."""
        return self.path / name

    def scratch(self, suffix: str) -> Path:
        """A path beside the staged snapshot for working data that is never published.

        It lies in the staging area, so :func:`clean_staging` removes it if the run dies.
        """
        return self.path.with_name(self.path.name + suffix)

    def publish(self, date: dt.date) -> Path:
        """Move the staged snapshot into place as the snapshot of ``date``; return its path.

        Every file is fsynced first, so the rename never exposes a file that a crash could
        leave empty. An existing snapshot of the same date is swapped out atomically and
        then removed.
        """
        for entry in self.path.iterdir():
            fsync_file(entry)
        fsync_dir(self.path)
        root = pets_root(self.directory)
        own_folder(root, "snapshots folder")
        target = partition_path(self.directory, date)
        if target.is_symlink() or (target.exists() and not target.is_dir()):
            what = "a symbolic link" if target.is_symlink() else "not a folder"
            raise ConfigError(  # swapped with a link, a snapshot would land where it points
                f"snapshot folder {target} is {what}; petsync never publishes through a link "
                "or over a file: remove it and run again"
            )
        if target.exists():
            _exchange(self.path, target)
            # self.path now holds the replaced snapshot: remove it.
            shutil.rmtree(self.path, ignore_errors=True)
        else:
            os.rename(self.path, target)
        fsync_dir(root)
        return target

    def discard(self) -> None:
        """Remove the staged snapshot; nothing was published."""
        shutil.rmtree(self.path, ignore_errors=True)


def staging_dir(directory: Path, *, create: bool = False) -> Path:
    """The staging area ``DIR/.petsync-tmp``, refused if it is a symbolic link or no folder.

    Checked with ``lstat``, never followed: a link there would make the clean-up delete
    the files of whatever folder it points to.
    """
    staging = Path(directory) / STAGING_DIR
    try:
        mode = os.lstat(staging).st_mode
    except FileNotFoundError:
        if create:
            Path(directory).mkdir(parents=True, exist_ok=True)
            # This user's only: the files of a staged snapshot are written by name, and
            # nobody else may plant a link or a FIFO among them.
            staging.mkdir(mode=0o700, exist_ok=True)
            mode = os.lstat(staging).st_mode
        else:
            return staging
    if stat.S_ISLNK(mode) or not stat.S_ISDIR(mode):
        what = "a symbolic link" if stat.S_ISLNK(mode) else "not a folder"
        raise ConfigError(
            f"{staging} is {what}; petsync stages snapshots there and deletes what it finds, "
            "so it never follows a link there. Remove it (a run re-creates the folder) and "
            "run again."
        )
    if create and stat.S_IMODE(mode) != 0o700:
        with contextlib.suppress(OSError, NotImplementedError):  # an earlier petsync's, 0755
            os.chmod(staging, 0o700, follow_symlinks=False)
    return staging


def clean_staging(directory: Path) -> list[Path]:
    """Remove what killed runs left in the staging area; call only while holding the lock."""
    staging = staging_dir(directory)
    removed: list[Path] = []
    if staging.is_dir():
        for entry in staging.iterdir():
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)
            removed.append(entry)
    return removed


def prune_snapshots(directory: Path, keep: int, today: dt.date | None = None) -> list[Path]:
    """Delete all but the newest ``keep`` snapshots; return the removed partitions.

    With ``today`` (the date of the snapshot just published), only snapshots dated up to
    ``today`` count and go: one dated after it (a night whose clock ran ahead) is never
    counted as newer than tonight's, so tonight's is never pruned, and is left for a
    person to remove. Each is first renamed into the staging area (one atomic step out of
    the readers' view) and then deleted, so a reader never sees half a partition.
    """
    if keep < 1:
        raise ValueError("keep must be at least 1")
    snapshots = [s for s in list_partitions(directory) if today is None or s.date <= today]
    removed: list[Path] = []
    for info in snapshots[: max(0, len(snapshots) - keep)]:
        path = Path(info.path)
        aside = StagedSnapshot.create(directory).path
        os.rename(path, aside / path.name)
        shutil.rmtree(aside, ignore_errors=True)
        removed.append(path)
    if removed:
        fsync_dir(pets_root(directory))
    return removed


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> None:
    """Swap two directories in one atomic step, or fall back to two renames.

    ``renameat2(..., RENAME_EXCHANGE)`` exists on Linux 3.15+ and most local filesystems.
    Where it does not, the old directory is renamed aside and the new one into place: a
    crash between the two leaves that day without a snapshot (earlier days untouched).
    """
    libc_name = ctypes.util.find_library("c")
    if libc_name:
        libc = ctypes.CDLL(libc_name, use_errno=True)
        renameat2 = getattr(libc, "renameat2", None)
        if renameat2 is not None:
            result = renameat2(
                _AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE
            )
            if result == 0:
                return
    aside = a.parent / f"{a.name}.old"
    os.rename(b, aside)
    os.rename(a, b)
    os.rename(aside, a)
