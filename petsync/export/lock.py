"""An exclusive lock on an output directory that a killed run cannot leave stuck.

The lock is a ``flock`` on ``DIR/.petsync.lock``, taken with
:func:`petsync.core.files.try_lock`. The kernel drops a flock when the holding process exits
for any reason (SIGKILL and power loss included), so there is never a stale lock to clean up
by hand; the file itself stays, holding the pid of the last holder for whoever
investigates. Deleting the file on release is avoided on purpose: a run that opened the old
file and one that created a new one could then both think they hold it.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from petsync.core.errors import ConfigError, LockedError
from petsync.core.files import try_lock, unlock
from petsync.core.locking import Lock

LOCK_NAME = ".petsync.lock"


class DirectoryLock(Lock):
    """Hold the petsync lock of ``directory`` for the duration of a ``with`` block.

    >>> with DirectoryLock(Path("out")):                 # doctest: +SKIP
    ...     ...  # nobody else writes snapshots under out/ meanwhile

    A second holder (in this or another process) gets :class:`LockedError` at once rather
    than waiting: a nightly job that overlaps the previous night's should say so, not queue.
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
