"""Local files are checked for what they are before petsync reads or writes them (issue 29).

Inputs: a FIFO or a device given as the spreadsheet or the key file is exit 2 naming it, at
once (a FIFO without a writer would block a plain ``open`` forever; ``/dev/zero`` never
ends). Outputs: a symbolic link (dangling or not) or a FIFO planted at an output's name in a
shared inbox or ``--out-dir`` is exit 2 naming it, before a row is sent, and the link's
target is never touched. Each runs the real command against the reference server.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from petsync.cli import cli
from petsync.core.errors import ConfigError
from petsync.storage.layout import partition_path
from petsync.storage.local_publication import StagedSnapshot

ROWS = "name,categoryId\nRex,1\n"


def run(srv: Any, *args: str, key: bool = True) -> Result:
    env = {"PETSYNC_BASE_URL": srv.base_url, "PETSYNC_API_KEY": None}
    if key:
        env["PETSYNC_API_KEY"] = srv.api_key.reveal()
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


def test_a_fifo_as_the_input_is_refused_at_once(petstore_server: Any, isolated: Path) -> None:
    srv = petstore_server()
    os.mkfifo("pets.csv")  # nobody writes to it: reading it would block forever

    result = run(srv, "import", "pets.csv")

    assert result.exit_code == 2, result.output
    assert (
        "spreadsheet pets.csv is a FIFO (named pipe), not a regular file; petsync reads only "
        "regular files (a pipe or device could block or never end): save the content to a "
        "file and name that file"
    ) in result.stderr
    assert srv.store.all() == []


def test_dev_zero_as_the_input_is_refused_before_it_is_hashed(
    petstore_server: Any, isolated: Path
) -> None:
    srv = petstore_server()

    result = run(srv, "import", "/dev/zero", "--dry-run")

    assert result.exit_code == 2, result.output
    assert "spreadsheet /dev/zero is a character device, not a regular file" in result.stderr


def test_a_glob_passes_over_a_fifo_and_imports_the_files(
    petstore_server: Any, isolated: Path
) -> None:
    srv = petstore_server()
    Path("inbox").mkdir()
    os.mkfifo("inbox/a.csv")
    Path("inbox/b.csv").write_text(ROWS)

    result = run(srv, "import", "inbox/*.csv")

    assert result.exit_code == 0, result.output
    assert "1 files (0 not imported)" in result.stdout
    assert [p.name for p in srv.store.all()] == ["Rex"]
    assert Path("inbox/a.csv").is_fifo()


@pytest.mark.parametrize("where", ["inbox", "out-dir"])
@pytest.mark.parametrize("dangling", [False, True], ids=["link", "dangling-link"])
def test_a_link_planted_at_the_reject_name_is_refused_before_sending(
    petstore_server: Any, isolated: Path, where: str, dangling: bool
) -> None:
    srv = petstore_server()
    Path("inbox").mkdir()
    Path("out").mkdir()
    Path("inbox/drop.csv").write_text("name,categoryId\nRex,1\n=evil,x\n")
    victim = isolated / "authorized_keys"
    if not dangling:
        victim.write_text("ssh-ed25519 AAAA me\n")
    folder = Path("inbox" if where == "inbox" else "out")
    (folder / "drop.rejects.csv").symlink_to(victim)
    extra = ["--out-dir", "out"] if where == "out-dir" else []

    result = run(srv, "import", "inbox/drop.csv", *extra)

    assert result.exit_code == 2, result.output
    assert (
        f"reject file {folder / 'drop.rejects.csv'} is a symbolic link to {victim}"
    ) in result.stderr
    assert "petsync never writes through a link" in result.stderr
    assert srv.store.all() == []  # refused before the first row was sent
    if dangling:
        assert not victim.exists()
    else:
        assert victim.read_text() == "ssh-ed25519 AAAA me\n"
    assert (folder / "drop.rejects.csv").is_symlink()


def test_a_fifo_planted_at_an_output_name_is_refused_without_blocking(
    petstore_server: Any, isolated: Path
) -> None:
    srv = petstore_server()
    Path("pets.csv").write_text(ROWS)
    os.mkfifo("pets.uncertain.csv")

    result = run(srv, "import", "pets.csv")

    assert result.exit_code == 2, result.output
    assert "uncertain file pets.uncertain.csv is a FIFO (named pipe), not a regular file" in (
        result.stderr
    )
    assert srv.store.all() == []


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_a_key_file_that_is_no_regular_file_is_refused_at_once(
    petstore_server: Any, isolated: Path, kind: str
) -> None:
    srv = petstore_server()
    Path("pets.csv").write_text(ROWS)
    key = Path("/dev/zero")
    if kind == "fifo":
        key = isolated / "key"
        os.mkfifo(key, 0o600)

    result = run(srv, "import", "pets.csv", "--api-key-file", str(key), key=False)

    assert result.exit_code == 2, result.output
    what = "a FIFO (named pipe)" if kind == "fifo" else "a character device"
    assert f"API key file {key} is {what}, not a regular file" in result.stderr
    assert "internal error" not in result.stderr


def test_a_key_file_of_dev_zero_in_the_config_file_is_refused(
    petstore_server: Any, isolated: Path
) -> None:
    srv = petstore_server()
    Path("pets.csv").write_text(ROWS)
    Path("petsync.toml").write_text(
        f'[environments.night]\nbase_url = "{srv.base_url}"\napi_key_file = "/dev/zero"\n'
    )

    result = run(srv, "import", "pets.csv", "--env", "night", key=False)

    assert result.exit_code == 2, result.output
    assert "API key file /dev/zero is a character device, not a regular file" in result.stderr


def test_a_fifo_as_the_config_file_is_refused_at_once(petstore_server: Any, isolated: Path) -> None:
    srv = petstore_server()
    os.mkfifo("petsync.toml")

    result = run(srv, "check", "--config", "petsync.toml")

    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(
        f"Error: config file {isolated / 'petsync.toml'} is a FIFO (named pipe), not a regular file"
    )


@pytest.mark.parametrize("dangling", [False, True], ids=["link", "dangling-link"])
def test_a_link_planted_at_a_snapshot_folder_is_refused(tmp_path: Path, dangling: bool) -> None:
    day = dt.date(2026, 11, 27)
    elsewhere = tmp_path / "elsewhere"
    if not dangling:
        elsewhere.mkdir()
        (elsewhere / "keep.txt").write_text("keep me")
    staged = StagedSnapshot.create(tmp_path / "out")
    staged.file("pets.parquet").write_bytes(b"data")
    target = partition_path(tmp_path / "out", day)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.symlink_to(elsewhere)

    with pytest.raises(ConfigError, match=f"^snapshot folder {target} is a symbolic link;"):
        staged.publish(day)

    assert target.is_symlink()
    if not dangling:
        assert sorted(p.name for p in elsewhere.iterdir()) == ["keep.txt"]
    else:
        assert not elsewhere.exists()


def test_a_link_planted_at_the_metrics_file_is_refused_before_the_export(
    petstore_server: Any, isolated: Path
) -> None:
    srv = petstore_server()
    victim = isolated / "victim"
    victim.write_text("keep me")
    Path("metrics.prom").symlink_to(victim)

    result = run(srv, "export", "--out", "out", "--metrics-file", "metrics.prom")

    assert result.exit_code == 2, result.output
    assert "metrics file metrics.prom is a symbolic link to " in result.stderr
    assert victim.read_text() == "keep me"
    assert not Path("out").exists()


@pytest.mark.parametrize("planted", ["folder", "dangling-name"])
def test_the_archive_never_moves_a_file_through_a_planted_link(
    petstore_server: Any, isolated: Path, planted: str
) -> None:
    srv = petstore_server()
    Path("inbox").mkdir()
    Path("inbox/done.csv").write_text(ROWS)
    elsewhere = isolated / "elsewhere"
    elsewhere.mkdir()
    today = dt.date.today().isoformat()
    Path("archive").mkdir()
    if planted == "folder":  # archive/<today> -> a folder of someone else's choosing
        Path("archive", today).symlink_to(elsewhere)
    else:  # archive/<today>/done.csv -> nowhere: a move through it would create the target
        Path("archive", today).mkdir()
        Path("archive", today, "done.csv").symlink_to(elsewhere / "planted.csv")

    result = run(srv, "import", "inbox/*.csv", "--archive", "archive")

    assert result.exit_code == 0, result.output
    assert f"archived:  archive/{today}_2/ (done.csv, done.accepted.csv moved there)" in (
        result.stdout
    )
    assert Path("archive", f"{today}_2", "done.csv").read_text() == ROWS
    assert list(elsewhere.iterdir()) == []


def test_a_glob_passes_over_a_planted_link_and_copies_nothing_of_its_target(
    petstore_server: Any, isolated: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # `evil.csv -> a file only petsync's user may read`, planted in a shared inbox: read, its
    # rows landed in a reject file the inbox's users can read (issue 29 item 6).
    srv = petstore_server()
    secret = isolated / "secret"
    secret.write_text("name,categoryId\nTOPSECRET-token,not-a-number\nLeak,1\n")
    secret.chmod(0o600)
    Path("inbox").mkdir()
    Path("inbox/evil.csv").symlink_to(secret)
    Path("inbox/ok.csv").write_text(ROWS)

    result = run(srv, "import", "inbox/*")

    assert result.exit_code == 0, result.output
    assert "1 files (0 not imported)" in result.stdout
    assert [p.name for p in srv.store.all()] == ["Rex"]
    assert sorted(p.name for p in Path("inbox").iterdir()) == [
        "evil.csv",
        "ok.accepted.csv",
        "ok.csv",
    ]
    assert "Warning: inbox/evil.csv is a symbolic link: a glob passes over links" in result.stderr


def test_a_link_named_on_the_command_line_is_the_users_own_and_is_read(
    petstore_server: Any, isolated: Path
) -> None:
    srv = petstore_server()
    (isolated / "real.csv").write_text(ROWS)
    Path("named.csv").symlink_to(isolated / "real.csv")

    result = run(srv, "import", "named.csv")

    assert result.exit_code == 0, result.output
    assert [p.name for p in srv.store.all()] == ["Rex"]
