"""The journals of one first file read together: what exists or may, through other files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from petsync.core.errors import LockedError
from petsync.importer.duplicates import RepeatedRows
from petsync.importer.provenance import (
    KnownRows,
    Ledger,
    load_ledger,
    origin_journals,
    origin_lock,
    register_fix,
)
from petsync.importer.row_states import RowRecord, RowState, RowStates
from petsync.importer.sheets.sheet import identity_number

ORIGIN = "a" * 64


def journal(directory: Path, name: str, source: str, *records: dict[str, object]) -> Path:
    path = directory / name
    lines = [{"petsync_journal": 1, "source": source, "sha256": name[:-6]}, *records]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_the_ledger_keeps_rows_created_or_maybe_created_elsewhere(tmp_path: Path) -> None:
    first = journal(
        tmp_path,
        f"{ORIGIN}.jsonl",
        "pets.xlsx",
        {"row": 2, "state": "created", "id": 1},
        {"row": 3, "state": "sending"},
        {"row": 4, "state": "rejected", "code": "bad"},
        {"baseline": {"complete": True, "matches": []}},
    )
    fix = journal(
        tmp_path,
        "b" * 64 + ".jsonl",
        "pets.rejects.csv",
        {"row": 4, "state": "sending"},
        {"row": 4, "state": "created", "id": 9, "via": "pets.rejects.csv", "pet": ["Bo", 7, None]},
        {"row": 5, "state": "unsent"},
    )
    register_fix(tmp_path, ORIGIN, fix)
    register_fix(tmp_path, ORIGIN, fix)  # listed once
    assert origin_journals(tmp_path, ORIGIN) == [first, fix]

    seen_from_the_first = load_ledger(tmp_path, ORIGIN, first)
    assert seen_from_the_first.rows == {
        4: RowRecord(4, RowState.CREATED, id=9, via="pets.rejects.csv", pet=("Bo", 7, None))
    }
    seen_from_a_fix = load_ledger(tmp_path, ORIGIN, tmp_path / "other.jsonl", rows={2, 3, 5})
    assert seen_from_a_fix.rows == {
        2: RowRecord(2, RowState.CREATED, id=1, via="pets.xlsx"),
        3: RowRecord(3, RowState.SENDING, via="pets.xlsx"),
    }  # row 5 was never sent: a fix may send it


def test_created_anywhere_wins_then_this_journals_uncertainty() -> None:
    own = RowStates()
    try:
        own.update(
            [
                RowRecord(2, RowState.UNCERTAIN),
                RowRecord(3, RowState.UNCERTAIN),
                RowRecord(4, RowState.REJECTED),
            ]
        )
        ledger = Ledger(
            {
                2: RowRecord(2, RowState.CREATED, id=5, via="fix.csv"),
                3: RowRecord(3, RowState.SENDING, via="fix.csv"),
                4: RowRecord(4, RowState.UNCERTAIN, via="fix.csv"),
            }
        )
        known = KnownRows(own, ledger)
        assert known.get(2) == RowRecord(2, RowState.CREATED, id=5, via="fix.csv")
        assert known.get(3) == RowRecord(3, RowState.UNCERTAIN)
        assert known.get(4) == RowRecord(4, RowState.UNCERTAIN, via="fix.csv")
        assert known.get(6) is None
    finally:
        own.close()


def test_two_imports_of_one_first_files_rows_are_kept_apart(tmp_path: Path) -> None:
    with (
        origin_lock(tmp_path, ORIGIN),
        pytest.raises(LockedError) as info,
        origin_lock(tmp_path, ORIGIN),
    ):
        pass
    assert "another petsync import is importing rows of the same first file" in str(info.value)
    with origin_lock(tmp_path, ORIGIN):  # released
        pass


@pytest.mark.parametrize(
    ("cell", "number"),
    [("7", 7), (" 12 ", 12), ("", -5), ("1", -5), ("x", -5), ("9" * 19, -5)],
    ids=["row", "spaces", "blank", "header-row", "text", "too-long"],
)
def test_a_fed_back_rows_number_is_its_first_files_row_or_none(cell: str, number: int) -> None:
    assert identity_number(["Rex", cell], 1, 5) == number


@pytest.mark.parametrize(
    ("filter_mask", "kept"),
    [((1 << 25) - 1, 65_536), (7, 65_536), (7, 1)],
    ids=["filter", "filter-flags-every-row", "too-many-flagged"],
)
def test_repeats_across_batches_are_found(
    monkeypatch: pytest.MonkeyPatch, filter_mask: int, kept: int
) -> None:
    # Digests the filter flags by chance (a filter of 8 bits flags nearly every row) are
    # compared exactly, as is every digest once too many are flagged.
    monkeypatch.setattr("petsync.importer.duplicates._BATCH", 3)
    monkeypatch.setattr("petsync.importer.duplicates._FILTER_MASK", filter_mask)
    monkeypatch.setattr("petsync.importer.duplicates._FLAGGED_KEPT", kept)
    repeats = RepeatedRows()
    try:
        rows = [["Rex", "1"], ["Tom", "2"], ["Mia", "3"], ["Bo", "4"], ["Rex", "1"], ["Tom", "2 "]]
        for line, cells in enumerate(rows, start=2):
            repeats.see(line, cells)
        repeats.finish()
        assert (repeats.count, repeats.listed) == (2, [(6, 2), (7, 3)])
        assert [repeats.first_of(line) for line in range(2, 8)] == [None] * 4 + [2, 3]
    finally:
        repeats.close()


def test_a_fix_files_rows_name_one_first_file_and_each_of_its_rows_once() -> None:
    from petsync.importer.provenance import FixIdentity
    from petsync.importer.sheets.sheet import SheetRow

    check = FixIdentity()
    other = "b" * 64
    codes = [
        [e.code for e in check.problems(SheetRow(number, ("Rex",), (), line), origin)]
        for number, line, origin in [
            (4, 2, ORIGIN),
            (5, 3, ORIGIN.upper()),  # case does not matter
            (4, 4, ORIGIN),
            (6, 5, other),
            (-6, 6, ORIGIN),
            (7, 7, "not a sha256"),
        ]
    ]
    assert codes == [
        [],
        [],
        ["row_repeated"],
        ["row_origin_other"],
        ["row_origin_missing"],
        ["row_origin_missing"],
    ]
    assert check.origin == ORIGIN
