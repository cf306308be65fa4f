"""Durability of a local publication, asserted at the os boundary.

The real ``os.fsync``/``os.fdatasync`` calls are recorded with the file each was made on
(device, inode, size: :class:`~tests.importer.doubles.SyncRecorder`). At the moment the
staged snapshot is renamed (or exchanged) into place, every file in it must have been
synced whole, and the staged folder itself; after it, the folder holding the new entry.
Removing any of those syncs makes these tests fail; a counter of calls would not.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Any

import pytest

from petsync.client.config import ClientConfig
from petsync.core.apikey import ApiKey
from petsync.core.models import Pet
from petsync.export.config import ExportConfig
from petsync.export.run import run_export
from petsync.storage import local_publication
from petsync.storage.layout import pets_root
from tests.export.scripted import BASE, ScriptedClient
from tests.importer.doubles import SyncRecorder

DAY = dt.date(2026, 11, 22)
PETS = [Pet(i, f"pet{i}", 1, "available") for i in range(1, 50)]


class RenameWatch:
    """Checks, as each rename into ``pets/`` starts, what the recorder has seen synced."""

    def __init__(self, recorder: SyncRecorder, monkeypatch: pytest.MonkeyPatch) -> None:
        self.recorder = recorder
        self.checked: list[str] = []
        self.root_syncs_before: list[int] = []
        real_rename, real_exchange = os.rename, local_publication._exchange
        monkeypatch.setattr(
            local_publication.os, "rename", lambda a, b: self.check(a, real_rename, a, b)
        )
        monkeypatch.setattr(
            local_publication, "_exchange", lambda a, b: self.check(a, real_exchange, a, b)
        )

    def check(self, source: Any, action: Any, *args: Any) -> None:
        staged = Path(source)
        if staged.is_dir() and staged.parent.name == ".petsync-tmp":
            for entry in sorted(staged.iterdir()):
                assert self.recorder.durable_bytes(entry) == entry.stat().st_size, (
                    f"{entry.name} renamed into place before it was synced whole"
                )
                self.checked.append(entry.name)
            assert self.recorder.of(staged), "the staged folder was not synced before its rename"
            self.checked.append("<staged folder>")
            root = pets_root(staged.parent.parent)
            self.root_syncs_before.append(len(self.recorder.of(root)) if root.exists() else 0)
        action(*args)


def export(out: Path) -> None:
    config = ExportConfig(client=ClientConfig(BASE, ApiKey("k")), out_dir=out, max_drop=1.0)
    run_export(config, client=ScriptedClient(PETS), today=DAY)


@pytest.mark.parametrize("same_day", [False, True], ids=["new-day", "same-day-exchange"])
def test_every_published_file_and_folder_is_synced_before_its_rename(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, same_day: bool
) -> None:
    out = tmp_path / "out"
    if same_day:
        export(out)
    recorder = SyncRecorder(monkeypatch)
    watch = RenameWatch(recorder, monkeypatch)

    export(out)

    assert watch.checked == [
        "_manifest.json",
        "_pets.csv",
        "_quarantine.jsonl",
        "pets.parquet",
        "<staged folder>",
    ]
    # The rename itself is made durable: pets/ is synced after it.
    assert len(recorder.of(pets_root(out))) > watch.root_syncs_before[0]


def test_without_the_file_sync_the_check_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder = SyncRecorder(monkeypatch)
    RenameWatch(recorder, monkeypatch)
    monkeypatch.setattr(local_publication, "fsync_file", lambda path: None)  # the bug this guards

    with pytest.raises(AssertionError, match="renamed into place before it was synced whole"):
        export(tmp_path / "out")
