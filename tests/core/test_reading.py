"""Reading a local file: a regular file within its bound, checked before a byte is read."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from petsync.core.apikey import read_key_file
from petsync.core.errors import ConfigError, ExitCode, InputError, StoppedError
from petsync.core.interface import KEY_FILE_LIMIT
from petsync.core.reading import check_regular, open_regular, read_regular
from petsync.core.stop import StopRequest


def test_a_regular_file_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"abc")

    assert read_regular(path, "file", limit=3) == b"abc"


def test_a_fifo_is_refused_at_once_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "key"
    os.mkfifo(fifo)  # no writer: a plain open() would block here forever

    with pytest.raises(ConfigError) as err:
        read_regular(fifo, "API key file", limit=100, error=ConfigError)

    assert err.value.exit_code == ExitCode.USAGE
    assert str(err.value).startswith(
        f"API key file {fifo} is a FIFO (named pipe), not a regular file; petsync reads only "
        "regular files"
    )


@pytest.mark.parametrize(
    ("path", "kind"),
    [("/dev/zero", "a character device"), ("/", "a directory")],
    ids=["device", "directory"],
)
def test_devices_and_directories_are_refused(path: str, kind: str) -> None:
    with pytest.raises(InputError, match=f"^spreadsheet {path} is {kind}, not a regular file"):
        read_regular(Path(path), "spreadsheet", limit=1 << 30)


def test_a_file_over_its_bound_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "big"
    path.write_bytes(b"x" * 11)

    with pytest.raises(InputError) as err:
        check_regular(path, "config file", limit=10)

    assert str(err.value) == (
        f"config file {path} is over 10 bytes, the most petsync reads from such a file "
        "(docs/limits.md): is it the right file?"
    )


def test_a_file_that_grows_past_its_bound_while_read_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "growing"
    path.write_bytes(b"x" * 10)
    with open_regular(path, "file", limit=10) as handle:
        path.write_bytes(b"x" * 50)  # same inode, longer now than fstat said

        with pytest.raises(InputError, match="is over 10 bytes"):
            handle.read()


def test_a_missing_file_names_the_file_and_the_reason(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        read_regular(tmp_path / "nope", "job file", limit=10, error=ConfigError)

    assert str(err.value) == f"cannot read job file {tmp_path / 'nope'}: No such file or directory"
    assert isinstance(err.value.__cause__, FileNotFoundError)


def test_a_read_after_a_stop_request_ends_with_the_stop(tmp_path: Path) -> None:
    path = tmp_path / "pets.csv"
    path.write_bytes(b"x" * 1_000_000)
    stop = StopRequest()
    with open_regular(path, "spreadsheet", limit=1 << 30, stop=stop) as handle:
        handle.read(10)
        stop.request("SIGTERM received", signal_number=15)

        with pytest.raises(StoppedError) as err:
            while handle.read(65_536):
                pass

    assert err.value.exit_code == ExitCode.TERMINATED
    assert str(err.value) == f"reading spreadsheet {path} was stopped by SIGTERM"


def test_a_fifo_as_key_file_is_a_setting_error(tmp_path: Path) -> None:
    fifo = tmp_path / "key"
    os.mkfifo(fifo, 0o600)

    with pytest.raises(ConfigError, match=f"^API key file {fifo} is a FIFO"):
        read_key_file(fifo)


def test_dev_zero_as_key_file_is_refused_before_reading() -> None:
    with pytest.raises(ConfigError, match="^API key file /dev/zero is a character device"):
        read_key_file(Path("/dev/zero"))


def test_a_key_file_over_its_bound_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "key"
    path.write_bytes(b"k" * (KEY_FILE_LIMIT + 1))
    path.chmod(0o600)

    with pytest.raises(ConfigError, match=f"is over {KEY_FILE_LIMIT} bytes"):
        read_key_file(path)


def test_a_key_file_not_utf8_is_named_not_shown(tmp_path: Path) -> None:
    path = tmp_path / "key"
    path.write_bytes(b"\xffsecret")
    path.chmod(0o600)

    with pytest.raises(ConfigError) as err:
        read_key_file(path)

    assert str(err.value) == f"API key file {path} is not UTF-8 text; keep just the key in it"
