"""The journal: durable states, last line wins, torn lines, changed input refused, one run.

Durability is checked at the os boundary: :class:`SyncRecorder` records the syncs that
really happened, and of which file.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from petsync.core.errors import InputError, LockedError
from petsync.importer.journal import Journal
from petsync.importer.row_states import RowRecord, RowState
from tests.importer.doubles import SyncRecorder

SOURCE = Path("pets.csv")
SETTINGS = {"columns": {"name": "name", "categoryId": "categoryId"}, "encoding": "utf-8"}


def open_journal(
    path: Path, sha: str = "a" * 64, settings: dict[str, object] | None = None
) -> Journal:
    return Journal.open(path, source=SOURCE, sha256=sha, settings=settings or SETTINGS)


def lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_new_journal_has_a_header_naming_the_input(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    with open_journal(path) as journal:
        assert not journal.resumed
        assert journal.states == {}
    assert lines(path) == [
        {"petsync_journal": 1, "source": "pets.csv", "sha256": "a" * 64, "settings": SETTINGS}
    ]


def test_states_survive_a_reopen_and_the_last_line_wins(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    with open_journal(path) as journal:
        journal.mark_sending([2])
        journal.record(RowRecord(2, RowState.CREATED, id=9223372036854775807))
        journal.mark_sending([3])
        journal.record(RowRecord(3, RowState.REJECTED, code="bad", message="no", http_status=400))
        journal.mark_sending([4])
    with open_journal(path) as journal:
        assert journal.resumed
        assert journal.states == {
            2: RowRecord(2, RowState.CREATED, id=9223372036854775807),
            3: RowRecord(3, RowState.REJECTED, code="bad", message="no", http_status=400),
            4: RowRecord(4, RowState.SENDING),
        }


def test_sending_is_synced_before_mark_sending_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "j.jsonl"
    syncs = SyncRecorder(monkeypatch)
    with open_journal(path) as journal:
        journal.mark_sending([7])
        # Read through another descriptor while the journal is still open (no close yet).
        assert lines(path)[-1] == {"row": 7, "state": "sending"}
        assert syncs.durable_bytes(path) == path.stat().st_size


def test_a_batch_of_sending_marks_costs_one_sync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "j.jsonl"
    syncs = SyncRecorder(monkeypatch)
    with open_journal(path) as journal:
        before = len(syncs.of(path))
        journal.mark_sending([2, 3, 5])
        assert len(syncs.of(path)) == before + 1
        assert syncs.durable_bytes(path) == path.stat().st_size
        assert lines(path)[1:] == [
            {"row": 2, "state": "sending"},
            {"row": 3, "state": "sending"},
            {"row": 5, "state": "sending"},
        ]


def test_outcomes_ride_on_the_next_sync(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "j.jsonl"
    syncs = SyncRecorder(monkeypatch)
    with open_journal(path) as journal:
        journal.mark_sending([2])
        after_sending = len(syncs.of(path))
        journal.record(RowRecord(2, RowState.CREATED, id=1))
        assert len(syncs.of(path)) == after_sending  # the outcome cost no sync of its own
        assert syncs.durable_bytes(path) < path.stat().st_size
        journal.mark_sending([3])  # one sync makes both lines durable
        assert len(syncs.of(path)) == after_sending + 1
        assert syncs.durable_bytes(path) == path.stat().st_size
    assert len(syncs.of(path)) == after_sending + 1  # close found nothing left to sync


def test_an_outcome_is_synced_at_close(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "j.jsonl"
    syncs = SyncRecorder(monkeypatch)
    with open_journal(path) as journal:
        journal.mark_sending([2])
        journal.record(RowRecord(2, RowState.CREATED, id=1))
    assert syncs.durable_bytes(path) == path.stat().st_size


def test_sending_marks_made_during_a_sync_share_the_next_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "j.jsonl"
    syncs = SyncRecorder(monkeypatch)
    journal = open_journal(path)
    before = len(syncs.of(path))
    # Hold the first sync until two more rows are written: both must then wait for, and
    # share, one sync (group commit) rather than sync one after the other.
    sync_started, release = threading.Event(), threading.Event()
    recorded_sync = os.fdatasync

    def held_sync(fd: int) -> None:
        if not sync_started.is_set():
            sync_started.set()
            release.wait(timeout=10)
        recorded_sync(fd)

    monkeypatch.setattr(os, "fdatasync", held_sync)
    appended = threading.Semaphore(0)
    real_write = os.write

    def counted_write(fd: int, data: bytes) -> int:
        written = real_write(fd, data)
        appended.release()
        return written

    monkeypatch.setattr(os, "write", counted_write)
    threads = [threading.Thread(target=journal.mark_sending, args=([row],)) for row in (2, 3, 4)]
    try:
        threads[0].start()
        assert appended.acquire(timeout=10) and sync_started.wait(timeout=10)
        for thread in threads[1:]:
            thread.start()
        assert appended.acquire(timeout=10) and appended.acquire(timeout=10)
    finally:
        release.set()
        for thread in threads:
            thread.join(timeout=10)
    assert not any(thread.is_alive() for thread in threads)
    assert len(syncs.of(path)) == before + 2  # row 2's sync, then one for rows 3 and 4
    assert syncs.durable_bytes(path) == path.stat().st_size
    journal.close()


def test_torn_last_line_is_dropped_and_cut(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    with open_journal(path) as journal:
        journal.mark_sending([2])
    with path.open("a") as handle:
        handle.write('{"row": 2, "state": "crea')
    with open_journal(path) as journal:
        assert journal.states == {2: RowRecord(2, RowState.SENDING)}
        journal.record(RowRecord(2, RowState.UNCERTAIN, message="m"))
    assert lines(path)[-1] == {"row": 2, "state": "uncertain", "message": "m"}


def test_whole_last_line_without_newline_is_kept_and_ended(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    with open_journal(path):
        pass
    with path.open("a") as handle:
        handle.write('{"row": 5, "state": "created", "id": 3}')
    with open_journal(path) as journal:
        assert journal.states[5] == RowRecord(5, RowState.CREATED, id=3)
        journal.mark_sending([6])
    assert lines(path)[-2:] == [
        {"row": 5, "state": "created", "id": 3},
        {"row": 6, "state": "sending"},
    ]


def test_damaged_middle_line_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    with open_journal(path) as journal:
        journal.mark_sending([2])
    text = path.read_text().replace('{"row": 2', "garbage", 1)
    path.write_text(text + '{"row": 3, "state": "sending"}\n')
    with pytest.raises(InputError, match="is damaged at line 2; it cannot be trusted"):
        open_journal(path)


def test_changed_input_is_refused_with_what_to_do(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    with open_journal(path, sha="a" * 64):
        pass
    with pytest.raises(InputError) as info:
        open_journal(path, sha="b" * 64)
    assert str(info.value) == (
        f"pets.csv changed since its import began (journal {path} was made for sha256 "
        "aaaaaaaaaaaa..., the file is now bbbbbbbbbbbb...). Rows already created are in the "
        "journal and must not be sent again. To finish the old import, put the old file "
        "back and re-run. To import corrected rows, fix the reject file "
        "(<name>.rejects.csv) and import that. To treat the changed file as new, move "
        "j.jsonl away or pass journal_path=NEW_PATH: rows already created would then be "
        "created again"
    )


def test_other_reading_options_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    with open_journal(path):
        pass
    with pytest.raises(InputError, match="was started with other reading options"):
        open_journal(path, settings={"columns": {"name": "Pet"}, "encoding": "utf-8"})


def test_not_a_journal(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    path.write_text("name,categoryId\n")
    with pytest.raises(InputError, match="is not a petsync journal"):
        open_journal(path)


def test_second_run_on_one_journal_is_locked_out(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    first = open_journal(path)
    with pytest.raises(LockedError, match="another petsync import is using journal"):
        open_journal(path)
    first.close()
    with open_journal(path):  # released at close
        pass


def test_a_journal_over_a_megabyte_is_read_in_pieces_and_its_torn_end_cut(
    tmp_path: Path,
) -> None:
    path = tmp_path / "j.jsonl"
    rows = range(2, 40_002)  # about 1.5 MB of lines: read in more than one piece
    with open_journal(path) as journal:
        journal.mark_sending(list(rows))
        for row in rows:
            journal.record(RowRecord(row, RowState.CREATED, id=row * 3))
    whole = path.stat().st_size
    assert whole > 1 << 20
    with path.open("a") as handle:
        handle.write('{"row": 40002, "state": "crea')
    with open_journal(path) as journal:
        assert journal.states.get(40_001) == RowRecord(40_001, RowState.CREATED, id=120_003)
        assert sum(1 for r in journal.states.values() if r.state is RowState.CREATED) == 40_000
        assert journal.states.get(40_002) is None
    assert path.stat().st_size == whole  # the torn line cut, nothing else
