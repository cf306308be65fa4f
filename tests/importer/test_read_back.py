"""Files read back after sending: the same encoding detection as an input, and no crash.

Once pets were created, a failure of the write pass is a stop that says how many were
created and what failed, never an internal error that loses the count.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from petsync.core.errors import ExitCode, InputError
from petsync.importer import run as run_module
from petsync.importer.config import ImportConfig
from petsync.importer.output_csv import earlier_rows
from petsync.importer.run import run_import
from petsync.importer.sheets.opening import open_spreadsheet
from petsync.importer.sheets.sheet import ReadOptions
from tests.importer.doubles import InstantClient


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be"])
def test_utf16_without_a_byte_order_mark_is_detected(tmp_path: Path, codec: str) -> None:
    path = tmp_path / "pets.txt"
    path.write_bytes("name\tcategoryId\r\nZoë\t1\r\n".encode(codec))
    with open_spreadsheet(path, ReadOptions()) as sheet:
        rows = [row.cells for row in sheet.rows()]
        assert (sheet.encoding_label, sheet.delimiter) == (f"{codec} (no BOM)", "\t")
    assert rows == [("Zoë", "1")]


def test_nul_bytes_that_are_no_utf16_still_stop_with_the_option_to_pass(tmp_path: Path) -> None:
    path = tmp_path / "pets.csv"
    path.write_bytes(b"name,categoryId\n\x00\x00\x00Rex,1\n")
    with pytest.raises(Exception, match="encoding='utf-16-le'"):
        open_spreadsheet(path, ReadOptions()).close()


def test_a_write_pass_failing_after_pets_were_created_is_a_stop_with_the_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "pets.csv"
    path.write_text("name,categoryId\nRex,1\nTom,2\n")

    def write_with_a_bug(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug in the write pass")

    monkeypatch.setattr(run_module, "write_outputs", write_with_a_bug)
    client = InstantClient()
    report = run_import(ImportConfig(path), client)
    assert (report.created, client.calls) == (2, 2)
    assert report.stop is not None and report.exit_code == ExitCode.FAILURE
    message = str(report.stop)
    assert message.startswith("2 pets were created (the journal ")
    assert "the output files could not be written" in message
    assert "RuntimeError" in message


def test_a_file_saved_while_the_run_sends_leaves_the_outputs_as_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The write stage takes the checked rows: the accepted file shows what was sent.
    path = tmp_path / "pets.csv"
    path.write_text("name,categoryId\nRex,1\nTom,2\n")
    real = run_module.write_outputs

    def write_after_an_edit(*args: Any, **kwargs: Any) -> Any:
        path.write_text("name,categoryId\nRex,1\nTom,3\n")  # someone saved the file
        return real(*args, **kwargs)

    monkeypatch.setattr(run_module, "write_outputs", write_after_an_edit)
    client = InstantClient()
    report = run_import(ImportConfig(path), client)
    assert (report.created, client.calls, report.stop, report.exit_code) == (2, 2, None, 0)
    accepted = (tmp_path / "pets.accepted.csv").read_text(encoding="utf-8-sig").splitlines()
    assert [line.split(",")[:2] for line in accepted] == [
        ["name", "categoryId"],
        ["Rex", "1"],
        ["Tom", "2"],
    ]


def test_a_link_swapped_in_at_an_earlier_reject_file_is_never_read_back(tmp_path: Path) -> None:
    # Planted after the check before sending: its target's rows must not reach the new file.
    secret = tmp_path / "private" / "notes.csv"
    secret.parent.mkdir()
    secret.write_text("name,categoryId\nsecret,1\n", encoding="utf-8")
    rejects = tmp_path / "pets.rejects.csv"
    rejects.symlink_to(secret)

    with pytest.raises(InputError, match=f"the earlier {rejects} is a symbolic link"):
        list(earlier_rows(rejects, ["name", "categoryId"], frozenset()))
