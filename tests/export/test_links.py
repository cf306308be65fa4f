"""Symbolic links where petsync stages and locks: refused before any request, never followed.

A link at ``OUT/.petsync-tmp`` would make the clean-up of killed runs delete the files of
the folder it points to; a link at ``OUT/.petsync.lock`` would have its target truncated and
overwritten with a pid. Either stops the run with exit 2 and a message, nothing fetched,
and the link's target exactly as it was.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from petsync.client.config import ClientConfig
from petsync.core.apikey import ApiKey
from petsync.core.errors import ConfigError, ExitCode
from petsync.core.models import Pet
from petsync.export.config import ExportConfig
from petsync.export.run import run_export
from petsync.storage.layout import STAGING_DIR
from petsync.storage.lock import LOCK_NAME
from tests.export.scripted import BASE, ScriptedClient

DAY = dt.date(2026, 11, 22)
PETS = [Pet(1, "Rex", 1, "available"), Pet(2, "Tom", 2, "sold")]


def export(out: Path, client: ScriptedClient) -> None:
    config = ExportConfig(client=ClientConfig(BASE, ApiKey("k")), out_dir=out)
    run_export(config, client=client, today=DAY)


def precious_folder(tmp_path: Path) -> Path:
    """A folder someone cares about, with a file, a subfolder and a hidden file."""
    folder = tmp_path / "precious"
    (folder / "sub").mkdir(parents=True)
    (folder / "thesis.txt").write_text("years of work\n")
    (folder / "sub" / "data.csv").write_text("a,b\n1,2\n")
    (folder / ".hidden").write_text("x")
    return folder


def contents(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): p.read_text() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def test_a_link_at_the_staging_folder_stops_the_run_and_its_target_keeps_every_file(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    target = precious_folder(tmp_path)
    before = contents(target)
    (out / STAGING_DIR).symlink_to(target, target_is_directory=True)
    client = ScriptedClient(PETS)

    with pytest.raises(ConfigError) as caught:
        export(out, client)

    assert caught.value.exit_code is ExitCode.USAGE
    assert str(caught.value) == (
        f"{out / STAGING_DIR} is a symbolic link; petsync stages snapshots there and deletes "
        "what it finds, so it never follows a link there. Remove it (a run re-creates the "
        "folder) and run again."
    )
    assert client.requests == 0 and client.listed == []
    assert contents(target) == before
    assert (out / STAGING_DIR).is_symlink()
    assert not (out / "pets").exists()


def test_a_link_at_the_lock_file_stops_the_run_and_its_target_is_not_touched(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    target = tmp_path / "passwd-like"
    target.write_text("root:x:0:0:root:/root:/bin/bash\n")
    mtime = target.stat().st_mtime_ns
    (out / LOCK_NAME).symlink_to(target)
    client = ScriptedClient(PETS)

    with pytest.raises(ConfigError) as caught:
        export(out, client)

    assert caught.value.exit_code is ExitCode.USAGE
    assert str(caught.value) == (
        f"the lock file {out / LOCK_NAME} is a symbolic link; petsync writes its pid there "
        "and never follows a link. Remove the link and run again."
    )
    assert client.requests == 0 and client.listed == []
    assert target.read_text() == "root:x:0:0:root:/root:/bin/bash\n"
    assert target.stat().st_mtime_ns == mtime
    assert not (out / STAGING_DIR).exists() and not (out / "pets").exists()


def test_a_dangling_link_at_the_lock_file_creates_nothing_where_it_points(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / LOCK_NAME).symlink_to(tmp_path / "created-through-the-link")
    client = ScriptedClient(PETS)

    with pytest.raises(ConfigError, match="is a symbolic link"):
        export(out, client)

    assert not (tmp_path / "created-through-the-link").exists()
    assert client.requests == 0


def test_a_file_at_the_staging_folder_stops_the_run_and_stays(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / STAGING_DIR).write_text("not a folder")
    client = ScriptedClient(PETS)

    with pytest.raises(ConfigError, match=r"\.petsync-tmp is not a folder; "):
        export(out, client)

    assert (out / STAGING_DIR).read_text() == "not a folder"
    assert client.requests == 0


def test_the_staging_folder_is_made_for_this_user_only(tmp_path: Path) -> None:
    # Snapshot files are written by name inside it: no one else may plant a link there.
    out, earlier = tmp_path / "out", tmp_path / "earlier"
    (earlier / STAGING_DIR).mkdir(parents=True, mode=0o777)  # as an earlier petsync left it
    (earlier / STAGING_DIR).chmod(0o777)
    export(out, ScriptedClient(PETS))
    export(earlier, ScriptedClient(PETS))

    assert (out / STAGING_DIR).stat().st_mode & 0o777 == 0o700
    assert (earlier / STAGING_DIR).stat().st_mode & 0o777 == 0o700


@pytest.mark.parametrize("dangling", [False, True])
def test_a_link_at_the_snapshots_folder_publishes_nothing_where_it_points(
    tmp_path: Path, dangling: bool
) -> None:
    # OUT/pets as a link would put each night's snapshot, and --keep's removals, in the
    # folder it points to (issue 29 item 6).
    out = tmp_path / "out"
    out.mkdir()
    target = tmp_path / "elsewhere"
    if not dangling:
        target = precious_folder(tmp_path)
    before = contents(target) if not dangling else {}
    (out / "pets").symlink_to(target, target_is_directory=True)

    with pytest.raises(ConfigError) as caught:
        export(out, ScriptedClient(PETS))

    assert caught.value.exit_code is ExitCode.USAGE
    assert str(caught.value).startswith(
        f"snapshots folder {out / 'pets'} is a symbolic link, not a folder; petsync "
    )
    assert (out / "pets").is_symlink()
    if dangling:
        assert not target.exists()
    else:
        assert contents(target) == before
        assert sorted(p.name for p in target.iterdir()) == [".hidden", "sub", "thesis.txt"]
