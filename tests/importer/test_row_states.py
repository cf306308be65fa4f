"""The on-disk indexes of an import: row states and the file's contents give a dict's answers."""

from __future__ import annotations

import random
from pathlib import Path

from petsync.importer import row_states
from petsync.importer.contents import ContentSet
from petsync.importer.row_states import RowRecord, RowState, RowStates

STATES = list(RowState)


def test_row_states_answer_like_a_dict_across_flushes(tmp_path: Path) -> None:
    rng = random.Random(7)
    states = RowStates(tmp_path / "rows")
    expected: dict[int, RowRecord] = {}
    try:
        for _ in range(3 * row_states._FLUSH_AT + 11):  # several flushes, and a tail in memory
            row = rng.randrange(2, 6_000)
            state = rng.choice(STATES)
            record = (
                RowRecord(row, state, id=rng.randrange(-(2**63), 2**63))
                if state is RowState.CREATED
                else RowRecord(row, state, code="bad", message='Zoë, "quoted"', http_status=400)
                if state is RowState.REJECTED
                else RowRecord(row, state)
            )
            states.update([record])
            expected[row] = record
            if rng.random() < 0.05:  # reads between writes, from memory and from the table
                probe = rng.randrange(2, 6_000)
                assert states.get(probe) == expected.get(probe)
        assert states == expected
        assert [row for row, _ in states.items()] == sorted(expected)
        assert len(states) == len(expected) and bool(states)
        created = {r.id for r in expected.values() if r.state is RowState.CREATED}
        assert all(states.has_created_id(i) for i in created)
        assert not states.has_created_id(next(i for i in range(10**6) if i not in created))
    finally:
        states.close()
    assert not (tmp_path / "rows").exists()


def test_row_states_in_send_order_find_every_stored_row_and_none_past_them(
    tmp_path: Path,
) -> None:
    # The send pass asks after each new row (higher than any journaled) before recording it:
    # those answers come without a look in the table; rows in it are still found.
    states = RowStates(tmp_path / "rows")
    last = 2 * row_states._FLUSH_AT + 5  # two flushes to the table, and a tail in memory
    try:
        for row in range(2, last + 1):
            assert states.get(row) is None
            states.update([RowRecord(row, RowState.SENDING)])
            states.update([RowRecord(row, RowState.CREATED, id=row * 10)])
        states.update([RowRecord(3, RowState.UNCERTAIN, message="timed out")])
        highest_in_table = 2 + 2 * row_states._FLUSH_AT - 1
        for row in (2, 3, highest_in_table, highest_in_table + 1, last):
            found = states.get(row)
            assert found is not None and found.row == row
        assert states.get(3) == RowRecord(3, RowState.UNCERTAIN, message="timed out")
        assert states.get(last + 1) is None and states.get(10**9) is None
    finally:
        states.close()


def test_row_states_start_afresh_over_what_a_killed_run_left(tmp_path: Path) -> None:
    left = tmp_path / "rows"
    left.mkdir()
    (left / "db.sqlite").write_bytes(b"not a database")
    states = RowStates(left)
    try:
        assert not states and states.get(2) is None
    finally:
        states.close()


def test_content_set_matches_exactly_with_and_without_a_status(tmp_path: Path) -> None:
    contents = [("Rex", 1, "sold"), ("Rex", 1, None), ('Zoë, "x"', 2**63 - 1, None)]
    with ContentSet(tmp_path / "contents") as found:
        found.add_all(iter(contents + contents))
        assert len(found) == 3
        assert sorted(found, key=str) == sorted(contents, key=str)
        assert all(c in found for c in contents)
        assert ("Rex", 1, "pending") not in found
        assert ("Rex", 2, None) not in found
        assert ("rex", 1, None) not in found
    assert not (tmp_path / "contents").exists()
