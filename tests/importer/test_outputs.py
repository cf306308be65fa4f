"""The output files: where they go, which outcome lands in which file, written atomically."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from petsync.core.errors import PetsyncError
from petsync.importer.output_csv import AtomicCsv, write_text_atomic
from petsync.importer.output_paths import OutputPaths
from petsync.importer.output_rows import SENDING_REASON, Outcome, OutputRow, classify
from petsync.importer.outputs import OutputFiles
from petsync.importer.row_states import RowRecord, RowState
from petsync.importer.validation import FieldError


def read_rows(path: Path) -> list[list[str]]:
    with path.open(encoding="utf-8-sig", newline="") as handle:
        return list(csv.reader(handle))


SHA = "ab" * 32


def test_files_go_beside_the_input_or_into_out_dir(tmp_path: Path) -> None:
    beside = OutputPaths.for_input(tmp_path / "pets.csv", None, sha256=SHA)
    assert beside == OutputPaths(
        rejects=tmp_path / "pets.rejects.csv",
        accepted=tmp_path / "pets.accepted.csv",
        uncertain=tmp_path / "pets.uncertain.csv",
        journal=tmp_path / ".petsync" / "journals" / f"{SHA}.jsonl",
    )
    moved = OutputPaths.for_input(
        tmp_path / "pets.csv", tmp_path / "out", sha256=SHA, journal=tmp_path / "j.jsonl"
    )
    assert (moved.rejects, moved.journal) == (
        tmp_path / "out/pets.rejects.csv",
        tmp_path / "j.jsonl",
    )


@pytest.mark.parametrize(
    "name",
    ["pets.rejects.csv", "pets.uncertain.csv", "pets.csv"],
    ids=["rejects", "uncertain", "first"],
)
def test_a_fed_back_file_writes_under_the_first_files_stem(tmp_path: Path, name: str) -> None:
    paths = OutputPaths.for_input(tmp_path / name, None, sha256=SHA)
    assert (paths.rejects.name, paths.accepted.name) == ("pets.rejects.csv", "pets.accepted.csv")


def test_report_lists_only_the_files_with_rows(tmp_path: Path) -> None:
    paths = OutputPaths.for_input(tmp_path / "pets.csv", None, sha256=SHA)
    with OutputFiles(paths, ["name"], dry_run=False) as outputs:
        outputs.write(OutputRow(2, ["x"], errors=(FieldError("c", None, "m"),)))
    assert outputs.written() == {"rejects": str(paths.rejects)}


CASES = [
    (None, False, False, Outcome.REJECTED_LOCAL),
    (None, False, True, Outcome.REJECTED_LOCAL),
    (None, True, True, Outcome.WOULD_SEND),
    (None, True, False, Outcome.PENDING),
    (RowState.UNSENT, True, False, Outcome.PENDING),
    (RowState.CREATED, True, False, Outcome.CREATED),
    (RowState.REJECTED, True, False, Outcome.REJECTED_API),
    (RowState.UNCERTAIN, True, False, Outcome.UNCERTAIN),
    (RowState.SENDING, True, False, Outcome.UNCERTAIN),
]


@pytest.mark.parametrize(
    ("state", "valid", "dry_run", "outcome"),
    CASES,
    ids=[
        "invalid",
        "invalid-dry-run",
        "valid-dry-run",
        "never-journaled",
        "unsent",
        "created",
        "api-rejected",
        "uncertain",
        "sending-at-a-crash",
    ],
)
def test_each_row_has_one_outcome(
    state: RowState | None, valid: bool, dry_run: bool, outcome: Outcome
) -> None:
    record = None if state is None else RowRecord(2, state)
    assert classify(record, valid=valid, dry_run=dry_run) is outcome


def test_each_outcome_lands_in_its_file_and_is_counted(tmp_path: Path) -> None:
    paths = OutputPaths.for_input(tmp_path / "pets.csv", None, sha256=SHA)
    error = FieldError("name_missing", "name", "name is blank")
    rows = [
        OutputRow(2, ["", "1"], errors=(error,), origin="ab"),
        OutputRow(3, ["Rex", "1"], record=RowRecord(3, RowState.CREATED, id=7)),
        OutputRow(
            4,
            ["Tom", "2"],
            record=RowRecord(4, RowState.REJECTED, code="taken", message="no", http_status=400),
        ),
        OutputRow(5, ["Mia", "3"], record=RowRecord(5, RowState.SENDING)),
        OutputRow(6, ["Bo", "4"], record=RowRecord(6, RowState.UNSENT)),
    ]
    with OutputFiles(paths, ["name", "categoryId"], dry_run=False) as outputs:
        for row in rows:
            outputs.write(row)
    assert outputs.counts == {
        Outcome.REJECTED_LOCAL: 1,
        Outcome.CREATED: 1,
        Outcome.REJECTED_API: 1,
        Outcome.UNCERTAIN: 1,
        Outcome.PENDING: 1,
    }
    assert read_rows(paths.rejects)[1:] == [
        ["", "1", "2", "local", "name_missing", "name", "name is blank", "", "ab"],
        ["Tom", "2", "4", "api", "taken", "", "no", "400", ""],
    ]
    assert read_rows(paths.accepted)[1:] == [["Rex", "1", "3", "7", "", ""]]
    assert read_rows(paths.uncertain)[1:] == [["Mia", "3", "5", SENDING_REASON, "", "", ""]]


def test_no_empty_file_and_a_stale_one_is_removed(tmp_path: Path) -> None:
    paths = OutputPaths.for_input(tmp_path / "pets.csv", None, sha256=SHA)
    paths.uncertain.write_text("stale\n")
    with OutputFiles(paths, ["name"], dry_run=False) as outputs:
        outputs.write(OutputRow(3, ["Rex"], record=RowRecord(3, RowState.CREATED, id=7)))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pets.accepted.csv"]


def test_outputs_follow_the_inputs_delimiter(tmp_path: Path) -> None:
    paths = OutputPaths.for_input(tmp_path / "pets.csv", None, sha256=SHA)
    with OutputFiles(paths, ["name", "categoryId"], dry_run=False, delimiter=";") as outputs:
        outputs.write(OutputRow(3, ["Rex", "1"], record=RowRecord(3, RowState.CREATED, id=7)))
    text = paths.accepted.read_bytes().decode("utf-8-sig")
    assert text == (
        "name;categoryId;petsync_row;petsync_id;petsync_origin;petsync_fixed_in\r\nRex;1;3;7;;\r\n"
    )


def test_a_round_keeps_the_earlier_rounds_rows_it_does_not_replace(tmp_path: Path) -> None:
    paths = OutputPaths.for_input(tmp_path / "pets.rejects.csv", None, sha256=SHA)
    with OutputFiles(paths, ["name"], dry_run=False) as first:
        first.write(OutputRow(2, ["Rex"], record=RowRecord(2, RowState.CREATED, id=7)))
        first.write(OutputRow(3, ["=Bad"], errors=(FieldError("c", None, "m"),)))
    with OutputFiles(paths, ["name"], dry_run=False, replaced_rows=frozenset({3})) as again:
        again.write(OutputRow(3, ["Fixed"], record=RowRecord(2, RowState.CREATED, id=9)))
    assert read_rows(paths.accepted)[1:] == [["Rex", "2", "7", "", ""], ["Fixed", "3", "9", "", ""]]
    assert not paths.rejects.exists()  # the one reject was fixed


def test_a_failed_pass_keeps_the_old_files_and_leaves_no_temporary_ones(tmp_path: Path) -> None:
    paths = OutputPaths.for_input(tmp_path / "pets.csv", None, sha256=SHA)
    paths.rejects.write_text("old\n")
    with pytest.raises(KeyboardInterrupt), OutputFiles(paths, ["name"], dry_run=False) as outputs:
        outputs.write(OutputRow(2, ["x"], errors=(FieldError("c", None, "m"),)))
        raise KeyboardInterrupt
    assert paths.rejects.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pets.rejects.csv"]


def test_a_dry_run_writes_the_reject_file_only(tmp_path: Path) -> None:
    paths = OutputPaths.for_input(tmp_path / "pets.csv", None, sha256=SHA)
    with OutputFiles(paths, ["name"], dry_run=True) as outputs:
        assert outputs.write(OutputRow(2, ["Rex"])) is Outcome.WOULD_SEND
        outputs.write(OutputRow(3, [""], errors=(FieldError("c", None, "m"),)))
        outputs.write(OutputRow(4, ["Tom"], record=RowRecord(4, RowState.CREATED, id=1)))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pets.rejects.csv"]


def test_files_are_utf8_with_bom_crlf_and_excel_safe(tmp_path: Path) -> None:
    path = tmp_path / "out.csv"
    output = AtomicCsv(path, ["name"])
    output.write(["=cmd"])
    output.commit()
    assert path.read_bytes() == b"\xef\xbb\xbfname\r\n'=cmd\r\n"


def test_a_file_that_cannot_be_written_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-dir" / "pets.rejects.csv"
    with pytest.raises(PetsyncError) as info:
        AtomicCsv(missing, ["name"])
    assert str(info.value) == f"cannot write {missing}: No such file or directory"
    with pytest.raises(PetsyncError) as info:
        write_text_atomic(missing, "{}")
    assert str(info.value) == f"cannot write {missing}: No such file or directory"
