"""The stages after the check take its checked rows: none of them opens the input again."""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path

import openpyxl
import pytest

from petsync.core.models import NewPet
from petsync.importer.checked_rows import CheckedRows
from petsync.importer.config import ImportConfig
from petsync.importer.duplicates import RepeatedRows
from petsync.importer.outcome import ImportReport
from petsync.importer.run import run_import
from petsync.importer.validation import ErrorCode, FieldError
from tests.importer.doubles import InstantClient


def write_csv(path: Path) -> None:
    path.write_text("name,categoryId\nRex,1\nBad,x\nTom,2\n")


def write_xlsx(path: Path) -> None:
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    for row in (["name", "categoryId"], ["Rex", 1], ["Bad", "x"], ["Tom", 2]):
        sheet.append(row)
    workbook.save(path)


@pytest.mark.parametrize(
    ("name", "write"), [("pets.csv", write_csv), ("pets.xlsx", write_xlsx)], ids=["csv", "xlsx"]
)
def test_an_input_removed_after_its_check_is_still_sent_and_written(
    tmp_path: Path, name: str, write: Callable[[Path], None]
) -> None:
    path = tmp_path / name
    write(path)

    def remove_the_input(report: ImportReport) -> None:
        path.unlink()  # from here on, only what the check handed on is there

    client = InstantClient()
    report = run_import(ImportConfig(path), client, on_checked=remove_the_input)
    assert (report.created, report.rejected_local, client.calls) == (2, 1, 2)
    with (tmp_path / "pets.accepted.csv").open(encoding="utf-8-sig", newline="") as handle:
        assert [(r["name"], r["petsync_row"]) for r in csv.DictReader(handle)] == [
            ("Rex", "2"),
            ("Tom", "4"),
        ]
    with (tmp_path / "pets.rejects.csv").open(encoding="utf-8-sig", newline="") as handle:
        assert [r["petsync_row"] for r in csv.DictReader(handle)] == ["3"]


def test_rows_read_by_identity_take_their_number_and_refusal_at_the_end() -> None:
    refused = (FieldError(ErrorCode.ROW_REPEATED, None, "a copy"),)
    spool = CheckedRows()
    try:
        spool.add(7, 2, 2, None, (), (), False, None, ("Rex",))
        spool.add(7, 3, 3, None, (), (), False, refused, ("Rex",))
        spool.finish(by_identity=True, repeats=None)
        rows = list(spool)
        assert [(r.number, r.line, r.original, r.whole) for r in rows] == [
            (7, 2, 7, False),
            (7, 3, 7, True),
        ]
        assert rows[1].errors == refused
        spool.finish(by_identity=False, repeats=None)  # no row named its first file
        assert [(r.number, r.original, r.errors) for r in spool] == [(2, 2, ()), (3, 3, ())]
    finally:
        spool.close()


def test_a_repeated_row_names_the_row_it_repeats() -> None:
    repeats = RepeatedRows()
    spool = CheckedRows()
    try:
        for line in (2, 3):
            repeats.see(line, ["Rex", "1"])
            spool.add(line, line, line, NewPet("Rex", 1), (), (), False, None, ("Rex", "1"))
        repeats.finish()
        spool.finish(by_identity=False, repeats=repeats)
        assert [(r.line, r.repeat_of) for r in spool] == [(2, None), (3, 2)]
    finally:
        spool.close()
        repeats.close()
