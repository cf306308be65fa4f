"""The fix loop through every editor's save: a reject file fixed in place in any encoding.

Excel saves a CSV as "CSV" (cp1252), "CSV UTF-8" (with a BOM) or "Unicode Text" (UTF-16
LE with a BOM, tab-separated); LibreOffice as UTF-8 without a BOM. Whatever comes back,
the fixed rows are created once, the outputs are rewritten, and the next run's advice is
right. After the first POST nothing ends in an internal error.
"""

from __future__ import annotations

import csv
import io
import shutil
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from petsync.cli import cli
from tests.importer.office import convert, needs_soffice


def run(srv: Any, *args: str) -> Result:
    env = {"PETSYNC_API_KEY": srv.api_key.reveal(), "PETSYNC_BASE_URL": srv.base_url}
    return CliRunner().invoke(cli, ["import", *args], env=env, catch_exceptions=False)


def read_rows(path: Path) -> list[dict[str, str]]:
    """An output file (petsync writes UTF-8 with a BOM, in the input's delimiter)."""
    with path.open(encoding="utf-8-sig", newline="") as handle:
        delimiter = max((",", ";", "\t"), key=handle.readline().count)
        handle.seek(0)
        return list(csv.DictReader(handle, delimiter=delimiter))


def csv_text(rows: list[dict[str, str]], delimiter: str = ",") -> str:
    out = io.StringIO()
    writer = csv.DictWriter(
        out, fieldnames=list(rows[0]), delimiter=delimiter, lineterminator="\r\n"
    )
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


# How each editor saves a CSV: (text of the rows) -> bytes on disk.
SAVES: dict[str, Callable[[list[dict[str, str]]], bytes]] = {
    "excel-csv-cp1252": lambda rows: csv_text(rows).encode("cp1252"),
    "excel-csv-utf8-bom": lambda rows: csv_text(rows).encode("utf-8-sig"),
    "excel-unicode-text": lambda rows: csv_text(rows, "\t").encode("utf-16"),  # LE + BOM here
    "libreoffice-default": lambda rows: csv_text(rows).replace("\r\n", "\n").encode("utf-8"),
    "utf-16-le-no-bom": lambda rows: csv_text(rows, "\t").encode("utf-16-le"),
}


def first_round(srv: Any) -> list[dict[str, str]]:
    Path("donations.csv").write_text("name,categoryId,notes\nRex,1,\nCafé,x,crème\nZoë,y,\n")
    first = run(srv, "donations.csv")
    assert first.exit_code == 4, first.output
    rejects = read_rows(Path("donations.rejects.csv"))
    assert [row["name"] for row in rejects] == ["Café", "Zoë"]
    return rejects


def fixed(rejects: list[dict[str, str]]) -> list[dict[str, str]]:
    return [{**row, "categoryId": str(3 + i)} for i, row in enumerate(rejects)]


def names(srv: Any) -> Counter[str]:
    return Counter(pet.name for pet in srv.store.all())


@pytest.mark.parametrize("save", sorted(SAVES))
def test_a_reject_file_fixed_in_place_in_any_editor_is_created_once(
    petstore_server: Any, isolated: Path, save: str
) -> None:
    srv = petstore_server()
    rejects = first_round(srv)
    Path("donations.rejects.csv").write_bytes(SAVES[save](fixed(rejects)))

    result = run(srv, "donations.rejects.csv")
    assert result.exit_code == 0, result.output
    assert "internal error" not in result.output
    assert names(srv) == Counter({"Rex": 1, "Café": 1, "Zoë": 1})
    accepted = read_rows(Path("donations.accepted.csv"))
    assert sorted((r["name"], r["categoryId"], r["notes"]) for r in accepted) == [
        ("Café", "3", "crème"),
        ("Rex", "1", ""),
        ("Zoë", "4", ""),
    ]
    assert not Path("donations.rejects.csv").exists()

    # The next run of either file sends nothing and gives no wrong advice.
    again = run(srv, "donations.csv")
    assert again.exit_code == 0, again.output
    assert "stopped mid-run" not in again.output
    assert names(srv) == Counter({"Rex": 1, "Café": 1, "Zoë": 1})


def test_excels_cp1252_save_with_encoding_named(petstore_server: Any, isolated: Path) -> None:
    srv = petstore_server()
    rejects = first_round(srv)
    # Excel's "CSV" of the accepted file too (a person opened it and saved): its rows stay.
    accepted = read_rows(Path("donations.accepted.csv"))
    Path("donations.accepted.csv").write_bytes(csv_text(accepted, ";").encode("cp1252"))
    Path("donations.rejects.csv").write_bytes(SAVES["excel-csv-cp1252"](fixed(rejects)))

    result = run(srv, "donations.rejects.csv", "--encoding", "cp1252")
    assert result.exit_code == 0, result.output
    assert names(srv) == Counter({"Rex": 1, "Café": 1, "Zoë": 1})
    assert sorted(r["name"] for r in read_rows(Path("donations.accepted.csv"))) == [
        "Café",
        "Rex",
        "Zoë",
    ]


def test_an_earlier_output_that_cannot_be_read_is_kept_aside_and_named(
    petstore_server: Any, isolated: Path
) -> None:
    srv = petstore_server()
    rejects = first_round(srv)
    # Bytes neither UTF-8 nor cp1252 can read (0x81 is undefined in cp1252).
    broken = b"name,categoryId,petsync_row\r\nRex,1,2\r\n\x81\x8d,1,9\r\n"
    Path("donations.accepted.csv").write_bytes(broken)
    Path("donations.rejects.csv").write_bytes(SAVES["excel-csv-utf8-bom"](fixed(rejects)))

    result = run(srv, "donations.rejects.csv")
    assert result.exit_code == 0, result.output
    assert names(srv) == Counter({"Rex": 1, "Café": 1, "Zoë": 1})
    notes = [line for line in result.output.splitlines() if "could not read" in line]
    assert len(notes) == 1, result.output
    assert "donations.accepted.csv" in notes[0] and "donations.accepted.unread-1.csv" in notes[0]
    assert "not valid utf-8 nor cp1252" in notes[0]
    assert Path("donations.accepted.unread-1.csv").read_bytes() == broken
    assert sorted(r["name"] for r in read_rows(Path("donations.accepted.csv"))) == ["Café", "Zoë"]


@needs_soffice
def test_libreoffice_saves_the_fixed_reject_file_and_it_imports(
    petstore_server: Any, isolated: Path
) -> None:
    srv = petstore_server()
    rejects = first_round(srv)
    # The fix as LibreOffice writes it: its own CSV writer with its default options.
    Path("edit").mkdir()
    Path("edit/donations.rejects.csv").write_bytes(SAVES["libreoffice-default"](fixed(rejects)))
    saved = convert(
        Path("edit/donations.rejects.csv"), "ods", Path("edit"), infilter="CSV:44,34,76"
    )
    Path("out").mkdir()
    again = convert(saved, "csv", Path("out"))
    shutil.copy(again, "donations.rejects.csv")

    result = run(srv, "donations.rejects.csv")
    assert result.exit_code == 0, result.output
    assert names(srv) == Counter({"Rex": 1, "Café": 1, "Zoë": 1})


def test_excels_unicode_text_saved_beside_as_txt_is_a_fix_too(
    petstore_server: Any, isolated: Path
) -> None:
    srv = petstore_server()
    rejects = first_round(srv)
    # Excel's "Unicode Text" names the file .txt: the fix sits beside the old reject file.
    Path("donations.rejects.txt").write_bytes(SAVES["excel-unicode-text"](fixed(rejects)))
    result = run(srv, "donations.rejects.txt")
    assert result.exit_code == 0, result.output
    assert "encoding utf-16 (BOM), delimiter tab" in result.output
    assert names(srv) == Counter({"Rex": 1, "Café": 1, "Zoë": 1})
    assert not Path("donations.rejects.csv").exists()  # every reject fixed: the loop closed
    assert len(read_rows(Path("donations.accepted.csv"))) == 3
