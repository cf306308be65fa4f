"""A FIFO or device planted inside ``--out`` where a file is read: exit 2 naming it.

Snapshots, manifests and the history are read through the local store's file system
(:class:`~petsync.storage.filesystem.CheckedLocalFiles`). A FIFO there used to
block ``petsync snapshots``, ``history`` and ``report`` for ever, and a manifest linked to
``/dev/zero`` made its night silently unpublished (``history --rebuild`` then replaced the
history by one without it). Every read now opens without blocking and looks at what it
opened first, so none of these tests can hang (pytest-timeout ends the run besides).
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from petsync.cli import cli
from petsync.core.errors import ExitCode, InputError
from petsync.formats.snapshots import list_snapshots
from petsync.history.table import HISTORY_DIR, STATE_NAME
from petsync.storage.layout import MANIFEST_NAME, PARQUET_NAME
from tests.export.published import publish_snapshot

DAY1, DAY2 = dt.date(2026, 11, 21), dt.date(2026, 11, 22)
ROWS = [(1, "Rex", 1, "available"), (2, "Tom", 2, "sold")]

# Without the checks these tests block in a C open() that SIGALRM does not end: the thread
# method then stops the whole run rather than let it hang.
pytestmark = pytest.mark.timeout(30, method="thread")


def _run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def _plant_fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def test_a_fifo_at_a_manifest_stops_snapshots_naming_it(tmp_path: Path) -> None:
    publish_snapshot(tmp_path, DAY1, ROWS)
    manifest = publish_snapshot(tmp_path, DAY2, ROWS) / MANIFEST_NAME
    _plant_fifo(manifest)

    result = _run("snapshots", str(tmp_path))
    with pytest.raises(InputError, match="is a FIFO"):
        list_snapshots(tmp_path)

    assert result.exit_code == ExitCode.USAGE, result.output
    assert f"{manifest} is a FIFO (named pipe), not a regular file" in result.stderr


def test_a_fifo_at_the_history_state_stops_history_naming_it(tmp_path: Path) -> None:
    publish_snapshot(tmp_path, DAY1, ROWS)
    assert _run("history", str(tmp_path)).exit_code == 0
    state = tmp_path / HISTORY_DIR / STATE_NAME
    _plant_fifo(state)
    publish_snapshot(tmp_path, DAY2, ROWS)

    result = _run("history", str(tmp_path))

    assert result.exit_code == ExitCode.USAGE, result.output
    assert f"{state} is a FIFO (named pipe), not a regular file" in result.stderr


def test_a_manifest_linked_to_dev_zero_stops_a_rebuild_and_keeps_the_history(
    tmp_path: Path,
) -> None:
    publish_snapshot(tmp_path, DAY1, ROWS)
    manifest = publish_snapshot(tmp_path, DAY2, ROWS) / MANIFEST_NAME
    assert _run("history", str(tmp_path)).exit_code == 0
    history = tmp_path / HISTORY_DIR
    before = {p.name: p.read_bytes() for p in history.iterdir()}
    manifest.unlink()
    manifest.symlink_to("/dev/zero")

    result = _run("history", str(tmp_path), "--rebuild")

    assert result.exit_code == ExitCode.USAGE, result.output
    assert f"{manifest} is a character device, not a regular file" in result.stderr
    assert {p.name: p.read_bytes() for p in history.iterdir()} == before


def test_a_folder_or_fifo_where_the_data_belongs_is_named_too(tmp_path: Path) -> None:
    data = publish_snapshot(tmp_path, DAY1, ROWS) / PARQUET_NAME
    _plant_fifo(data)
    assert f"{data} is a FIFO" in _run("history", str(tmp_path)).stderr
    data.unlink()
    data.mkdir()

    result = _run("history", str(tmp_path))

    assert result.exit_code == ExitCode.USAGE, result.output
    assert f"{data} is a directory, not a regular file" in result.stderr
