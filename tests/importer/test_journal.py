"""The journal: durable states, last line wins, torn lines, changed input refused, one run."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from petsync.core.errors import InputError, LockedError
from petsync.importer.journal import Journal, RowRecord, RowState

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


def test_sending_is_on_disk_before_mark_sending_returns(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    journal = open_journal(path)
    journal.mark_sending([7])
    # Read through another descriptor while the journal is still open (no close, no sync).
    assert lines(path)[-1] == {"row": 7, "state": "sending"}
    assert journal.fsyncs == 1
    journal.close()


def test_a_batch_of_sending_marks_costs_one_sync(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    with open_journal(path) as journal:
        journal.mark_sending([2, 3, 5])
        assert journal.fsyncs == 1
        assert lines(path)[1:] == [
            {"row": 2, "state": "sending"},
            {"row": 3, "state": "sending"},
            {"row": 5, "state": "sending"},
        ]


def test_outcomes_ride_on_the_next_fsync(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    with open_journal(path) as journal:
        journal.mark_sending([2])
        journal.record(RowRecord(2, RowState.CREATED, id=1))
        assert journal.fsyncs == 1  # the outcome did not cost an fsync of its own
        journal.mark_sending([3])
        assert journal.fsyncs == 2
    assert journal.fsyncs == 2  # close found nothing left to sync


def test_concurrent_sending_marks_share_fsyncs(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    with open_journal(path) as journal:
        barrier = threading.Barrier(8)

        def mark(start: int) -> None:
            barrier.wait(timeout=10)
            for row in range(start, start + 50):
                journal.mark_sending([row])

        threads = [threading.Thread(target=mark, args=(i * 100,)) for i in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        assert len(journal.states) == 400
        assert journal.fsyncs <= 400
    assert len(lines(path)) == 401


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
        "j.jsonl away or pass --journal NEW_PATH: rows already created would then be "
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
