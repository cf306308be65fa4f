"""The run lock's local forms: one writer per directory or history, released however it ends."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from petsync.core.errors import InputError, LockedError
from petsync.storage.lock import LOCK_NAME, DirectoryLock, FileLock


def test_a_second_holder_is_refused_with_the_holders_pid(tmp_path: Path) -> None:
    with DirectoryLock(tmp_path), pytest.raises(LockedError) as caught:
        DirectoryLock(tmp_path).acquire()

    assert str(caught.value) == (
        f"another petsync run is writing to {tmp_path} (it holds the lock "
        f"{tmp_path / LOCK_NAME}, pid {os.getpid()}). Wait for it to finish and run again; "
        "the lock is released automatically when that process exits."
    )


def test_a_released_lock_can_be_taken_again_and_its_file_stays(tmp_path: Path) -> None:
    with DirectoryLock(tmp_path):
        pass

    with DirectoryLock(tmp_path) as again:
        assert again.path.read_text() == f"{os.getpid()}\n"
    assert (tmp_path / LOCK_NAME).exists()


def test_the_lock_creates_a_missing_directory(tmp_path: Path) -> None:
    with DirectoryLock(tmp_path / "new" / "out") as lock:
        assert lock.path == tmp_path / "new" / "out" / LOCK_NAME
        assert lock.path.is_file()


def test_a_file_lock_refuses_a_second_holder_with_its_message_until_released(
    tmp_path: Path,
) -> None:
    path = tmp_path / ".history.lock"
    first = FileLock(path, what="history lock file", busy="another update holds it")
    with first, pytest.raises(LockedError, match="^another update holds it$"):
        FileLock(path, what="history lock file", busy="another update holds it").acquire()

    with FileLock(path, what="history lock file", busy="another update holds it") as again:
        again.confirm()  # a flock cannot be lost: nothing to prove
    assert path.is_file()


def test_a_file_lock_never_opens_through_a_link(tmp_path: Path) -> None:
    path = tmp_path / ".history.lock"
    path.symlink_to(tmp_path / "elsewhere")

    with pytest.raises(InputError, match="history lock file .* is a symbolic link"):
        FileLock(path, what="history lock file", busy="busy").acquire()
    assert not (tmp_path / "elsewhere").exists()
