"""The one file-writing recipe: what is replaced by rename, what is written through, and the
checks that prove an output location writable before a job starts."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from petsync.core.errors import ConfigError, ExitCode, InputError
from petsync.core.files import (
    atomic_write_text,
    atomic_writer,
    check_writable_dir,
    check_writable_file,
    open_locked,
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


@pytest.mark.parametrize(
    "target",
    ["/dev/null", "victim.txt", "nowhere.txt"],
    ids=["to-a-device", "to-a-regular-file", "dangling"],
)
def test_a_link_at_the_name_is_refused_and_never_followed(tmp_path: Path, target: str) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    link = tmp_path / "drop.rejects.csv"
    link.symlink_to(target if target.startswith("/") else tmp_path / target)

    with pytest.raises(ConfigError) as err:
        atomic_write_text(link, "attacker,cell\n", what="reject file")

    assert err.value.exit_code == ExitCode.USAGE
    assert str(err.value).startswith(f"reject file {link} is a symbolic link to ")
    assert "petsync never writes through a link" in str(err.value)
    assert victim.read_text() == "keep me"
    assert not (tmp_path / "nowhere.txt").exists()
    assert link.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["drop.rejects.csv", "victim.txt"]


def test_a_dangling_link_is_named_as_pointing_nowhere(tmp_path: Path) -> None:
    link = tmp_path / "report.html"
    link.symlink_to(tmp_path / "gone")

    with pytest.raises(ConfigError, match=r"is a symbolic link to .*gone, which points nowhere,"):
        check_writable_file(link, "report file")


def test_a_fifo_at_the_name_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "metrics.prom"
    os.mkfifo(fifo)  # nobody reads it: writing through it would block forever

    with pytest.raises(ConfigError) as err:
        atomic_write_text(fifo, "x 1\n", what="metrics file")

    assert str(err.value) == (
        f"metrics file {fifo} is a FIFO (named pipe), not a regular file; petsync writes "
        "outputs only as regular files: remove it, or choose another location"
    )
    assert fifo.is_fifo()


def test_a_device_fails_the_file_check() -> None:
    with pytest.raises(ConfigError, match="^report file /dev/null is a character device"):
        check_writable_file(Path("/dev/null"), "report file")


def test_a_new_file_gets_the_umask_mode_not_0600(tmp_path: Path) -> None:
    previous = os.umask(0o022)
    try:
        atomic_write_text(tmp_path / "_history.json", "{}")
        atomic_write_text(tmp_path / "shared.prom", "", mode=0o640)
    finally:
        os.umask(previous)

    assert (tmp_path / "_history.json").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "shared.prom").stat().st_mode & 0o777 == 0o640


def test_a_link_planted_between_check_and_rename_is_replaced_not_followed(
    tmp_path: Path,
) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    path = tmp_path / "out.csv"
    with atomic_writer(path) as handle:
        path.symlink_to(victim)  # planted after the check, before the rename
        handle.write("rows\n")

    assert not path.is_symlink() and path.read_text() == "rows\n"
    assert victim.read_text() == "keep me"


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


def test_a_journal_behind_a_link_or_fifo_is_refused(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    (tmp_path / "a.jsonl").symlink_to(victim)
    os.mkfifo(tmp_path / "b.jsonl")

    with pytest.raises(InputError, match=r"^journal .*a\.jsonl is a symbolic link to "):
        open_locked(tmp_path / "a.jsonl", "busy")
    with pytest.raises(InputError, match=r"^journal .*b\.jsonl is a FIFO \(named pipe\)"):
        open_locked(tmp_path / "b.jsonl", "busy")
    assert victim.read_text() == "keep me"


def test_a_link_to_the_own_stdout_swapped_before_the_write_never_reaches_the_new_target(
    tmp_path: Path,
) -> None:
    # A link planted at an output's name as `-> /proc/self/fd/1` passes the check as the
    # own stdout; swapped for `-> ~/.ssh/authorized_keys` before the write, an open by name
    # would append the rows there (issue 29 item 6). The swap is made inside the check.
    log = tmp_path / "job.log"
    victim = tmp_path / "authorized_keys"
    victim.write_text("ssh-ed25519 AAAA owner\n")
    link = tmp_path / "drop.rejects.csv"
    link.symlink_to("/proc/self/fd/1")
    code = (
        "import os, sys; from pathlib import Path; import petsync.core.files as files\n"
        "link, victim = Path(sys.argv[1]), sys.argv[2]\n"
        "checked = files.write_kind\n"
        "def swapped(path, what='output file'):\n"
        "    kind = checked(path, what)\n"
        "    os.symlink(victim, str(link) + '.new'); os.replace(str(link) + '.new', link)\n"
        "    return kind\n"
        "files.write_kind = swapped\n"
        "try:\n"
        "    files.atomic_write_text(link, 'ssh-ed25519 EVIL attacker\\n')\n"
        "except files.ConfigError as exc:\n"
        "    print('refused:', exc)\n"
    )
    with log.open("a") as appended:
        done = subprocess.run(
            [sys.executable, "-c", code, str(link), str(victim)],
            stdout=appended,
            timeout=TIMEOUT,
            check=False,
        )

    assert done.returncode == 0
    assert victim.read_text() == "ssh-ed25519 AAAA owner\n"
    assert "EVIL" not in victim.read_text()
