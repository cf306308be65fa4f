"""The one file-writing recipe: what is replaced by rename, what is written through, and the
checks that prove an output location writable before a job starts."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from petsync.core.errors import ConfigError, ExitCode
from petsync.core.files import (
    atomic_write_text,
    check_writable_dir,
    check_writable_file,
    write_kind,
)

TIMEOUT = 30.0


def read_only_under(monkeypatch: pytest.MonkeyPatch, directory: Path) -> None:
    """Make creating files in ``directory`` fail as a read-only file system does (EROFS).

    As root, permission bits refuse nothing, so the refusal is injected where the kernel
    would give it: creating the file.
    """
    real = tempfile.mkstemp

    def mkstemp(*args: object, dir: str | Path | None = None, **kwargs: object) -> object:
        if dir is not None and Path(dir) == directory:
            raise OSError(errno.EROFS, "Read-only file system")
        return real(*args, dir=dir, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)


def test_a_regular_file_is_replaced_by_rename(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    path.write_text("old")
    inode = path.stat().st_ino

    atomic_write_text(path, "new")

    assert path.read_text() == "new"
    assert path.stat().st_ino != inode  # a new file renamed over the old one
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]


def test_a_link_to_a_device_is_written_through_and_stays_a_link(tmp_path: Path) -> None:
    link = tmp_path / "report.json"
    link.symlink_to("/dev/null")

    atomic_write_text(link, "{}\n")

    assert link.is_symlink() and os.readlink(link) == "/dev/null"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]  # no temp left
    assert write_kind(link) == ("direct", link)


def test_a_fifo_is_written_to_not_replaced(tmp_path: Path) -> None:
    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    received: list[str] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()), daemon=True)
    reader.start()

    atomic_write_text(fifo, "through the pipe\n")

    reader.join(TIMEOUT)
    assert received == ["through the pipe\n"]
    assert fifo.is_fifo()


def test_a_link_to_a_regular_file_keeps_the_link_and_replaces_its_file(tmp_path: Path) -> None:
    (tmp_path / "reports").mkdir()
    real = tmp_path / "reports" / "today.json"
    real.write_text("old")
    link = tmp_path / "report.json"
    link.symlink_to(real)

    atomic_write_text(link, "new")

    assert link.is_symlink() and link.resolve() == real
    assert real.read_text() == "new"


def test_the_own_stdout_behind_a_link_is_appended_to_not_replaced(tmp_path: Path) -> None:
    # cron: `petsync ... --report /dev/stdout >>log`. The link stands in for /dev/stdout,
    # which the old recipe replaced with a regular file when run as root.
    log = tmp_path / "job.log"
    log.write_text("earlier line\n")
    link = tmp_path / "stdout"
    link.symlink_to("/proc/self/fd/1")
    code = (
        "import sys; from pathlib import Path; from petsync.core.files import atomic_write_text; "
        "print('summary', flush=True); atomic_write_text(Path(sys.argv[1]), 'report\\n')"
    )
    with log.open("a") as appended:
        done = subprocess.run(
            [sys.executable, "-c", code, str(link)], stdout=appended, timeout=TIMEOUT, check=False
        )

    assert done.returncode == 0
    assert log.read_text() == "earlier line\nsummary\nreport\n"
    assert link.is_symlink()


def test_a_missing_directory_under_a_writable_one_passes(tmp_path: Path) -> None:
    check_writable_dir(tmp_path / "new" / "deeper", "export directory (--out)")

    assert list(tmp_path.iterdir()) == []  # the probe left nothing behind


def test_a_file_in_the_way_of_a_directory_is_named(tmp_path: Path) -> None:
    (tmp_path / "out").write_text("")

    with pytest.raises(ConfigError) as err:
        check_writable_dir(tmp_path / "out" / "pets", "export directory (--out)")

    assert err.value.exit_code == ExitCode.USAGE
    assert str(err.value) == (
        f"export directory (--out) {tmp_path / 'out' / 'pets'}: {tmp_path / 'out'} is not a "
        "directory; choose another location"
    )


def test_a_read_only_directory_fails_the_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    read_only_under(monkeypatch, tmp_path)

    with pytest.raises(ConfigError) as err:
        check_writable_file(tmp_path / "x.prom", "metrics file (--metrics-file)")

    assert str(err.value) == (
        f"metrics file (--metrics-file) {tmp_path / 'x.prom'}: cannot create files in "
        f"{tmp_path} (Read-only file system); choose a location petsync can write to, or fix "
        "its permissions"
    )


def test_a_directory_is_no_file_to_write(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"is a directory; name a file"):
        check_writable_file(tmp_path, "report file (--report)")


def test_a_file_in_a_missing_directory_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        check_writable_file(tmp_path / "no" / "r.json", "report file (--report)")

    assert str(err.value) == (
        f"report file (--report) {tmp_path / 'no' / 'r.json'}: directory {tmp_path / 'no'} "
        "does not exist; create it first"
    )


def test_a_device_passes_the_file_check(tmp_path: Path) -> None:
    check_writable_file(Path("/dev/null"), "report file (--report)")
