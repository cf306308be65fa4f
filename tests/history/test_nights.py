"""The history of one catalogue over a sequence of nights exported from the reference server,
compared with an answer computed here without petsync's code: a dict per night.

The catalogue changes between nights the way the interface cannot (it has no update or
delete), straight in the server's SQLite file: status changes, renames, deletions, a pet
that comes back, status-less pets. One night is exported from an unpaged server that
cannot prove its listing ends (exit 4): it lacks pets and must close none of them.
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from petsync.client.config import ClientConfig
from petsync.export.config import ExportConfig
from petsync.export.run import run_export
from petsync.formats.snapshots import list_snapshots, load_snapshot
from petsync.history.load import load_history, transitions
from petsync.history.update import update_history

Row = tuple[int, str, int, str | None]
Version = tuple[int, str, int, str | None, dt.date, dt.date | None]

NIGHTS = [dt.date(2026, 11, day) for day in range(1, 8)]
STATUSES = (None, "available", "pending", "sold")


def catalogue(db: Path) -> dict[int, Row]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT id, name, category_id, status FROM pets").fetchall()
    return {row[0]: (row[0], row[1], row[2], row[3]) for row in rows}


def execute(db: Path, *statements: tuple[str, tuple[Any, ...]]) -> None:
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        for sql, params in statements:
            conn.execute(sql, params)
    finally:
        conn.close()


def expected_history(nights: list[tuple[dt.date, dict[int, Row], bool]]) -> set[Version]:
    """SCD2 by hand: a version per pet, closed on change or when a trusted night lacks it."""
    open_: dict[int, tuple[Row, dt.date]] = {}
    closed: set[Version] = set()
    for date, pets, trusted in nights:
        for pet_id, (row, since) in list(open_.items()):
            now = pets.get(pet_id)
            if (now is None and trusted) or (now is not None and now != row):
                closed.add((*row, since, date))
                del open_[pet_id]
        for pet_id, row in pets.items():
            if pet_id not in open_:
                open_[pet_id] = (row, date)
    return closed | {(*row, since, None) for row, since in open_.values()}


def table_versions(frame: pd.DataFrame) -> set[Version]:
    out: set[Version] = set()
    for r in frame.astype(object).to_dict(orient="records"):
        status = r["status"] if isinstance(r["status"], str) else None
        valid_to = None if pd.isna(r["valid_to"]) else r["valid_to"].date()
        out.add(
            (
                int(r["id"]),
                r["name"],
                int(r["categoryId"]),
                status,
                r["valid_from"].date(),
                valid_to,
            )
        )
    return out


def frame_rows(frame: pd.DataFrame) -> dict[int, Row]:
    rows: dict[int, Row] = {}
    for r in frame.astype(object).to_dict(orient="records"):
        status = r["status"] if isinstance(r["status"], str) else None
        rows[int(r["id"])] = (int(r["id"]), r["name"], int(r["categoryId"]), status)
    return rows


@pytest.mark.slow
def test_history_over_a_week_of_nights_matches_an_answer_computed_by_hand(
    petstore_server: Any, tmp_path: Path
) -> None:
    db, out, rebuilt = tmp_path / "pets.db", tmp_path / "out", tmp_path / "rebuilt"
    srv = petstore_server(db_path=db)
    execute(
        db,
        *[
            (
                "INSERT INTO pets (id, name, category_id, status) VALUES (?, ?, ?, ?)",
                (i, f"pet {i}", i % 5, STATUSES[i % 4]),
            )
            for i in range(1, 251)
        ],
    )
    changes: dict[dt.date, list[tuple[str, tuple[Any, ...]]]] = {
        NIGHTS[1]: [
            ("UPDATE pets SET status = 'pending' WHERE id = 1", ()),  # available -> pending
            ("UPDATE pets SET name = 'Rex the second' WHERE id = 2", ()),  # a rename
            ("DELETE FROM pets WHERE id IN (3, 200)", ()),  # deletions
            ("UPDATE pets SET status = 'sold' WHERE id = 4", ()),  # no status -> sold
        ],
        NIGHTS[2]: [("UPDATE pets SET status = NULL WHERE id = 5", ())],  # the unpaged night
        NIGHTS[3]: [
            ("UPDATE pets SET status = 'sold' WHERE id = 1", ()),  # pending -> sold
            ("INSERT INTO pets VALUES (3, 'pet 3', 3, 'sold')", ()),  # comes back unchanged
            ("INSERT INTO pets VALUES (251, 'new', 1, NULL)", ()),  # a new status-less pet
        ],
        NIGHTS[4]: [],  # nothing changed
        NIGHTS[5]: [("UPDATE pets SET name = 'renamed' WHERE id = 9", ())],
        NIGHTS[6]: [("DELETE FROM pets WHERE id = 251", ())],
    }
    unpaged = petstore_server(db_path=db, pagination="none")
    model: list[tuple[dt.date, dict[int, Row], bool]] = []
    for date in NIGHTS:
        execute(db, *changes.get(date, []))
        server = unpaged if date == NIGHTS[2] else srv
        config = ExportConfig(client=ClientConfig(server.base_url, server.api_key), out_dir=out)
        report = run_export(config, today=date)
        truth = catalogue(db)
        if date == NIGHTS[2]:
            assert report.complete is False
            held = frame_rows(load_snapshot(out, date, flagged=True))
            assert 0 < len(held) < len(truth)  # the unpaged night lacks pets...
            assert 5 in held  # ...but holds the one whose status changed
            model.append((date, held, False))
        else:
            assert report.complete is True
            model.append((date, truth, True))
        update_history(out)  # incremental, one night at a time as the nightly job does

    expected = expected_history(model)
    history = load_history(out)
    assert table_versions(history) == expected
    # The untrusted night closed nothing: no version ends on it except pet 5's change.
    assert {v[0] for v in expected if v[5] == NIGHTS[2]} == {5}
    # Pet 3 came back: two versions with a gap; pet 251 was status-less and is closed.
    assert sorted((v[4], v[5]) for v in expected if v[0] == 3) == [
        (NIGHTS[0], NIGHTS[1]),
        (NIGHTS[3], None),
    ]
    assert (251, "new", 1, None, NIGHTS[3], NIGHTS[6]) in expected

    # A rebuild from scratch gives the same table; re-running changes nothing.
    snapshots_dir = out
    assert table_versions(load_history(snapshots_dir)) == table_versions(
        load_history(_rebuild_copy(out, rebuilt))
    )
    again = update_history(out)
    assert again.nights == ()
    assert table_versions(load_history(out)) == expected

    # The catalogue as of each trusted night is that night's snapshot, from the history alone.
    for date, pets, trusted in model:
        as_of = frame_rows(load_history(out, as_of=date))
        if trusted:
            assert as_of == pets
        else:
            assert set(as_of) > set(pets)  # pets it lacked are still there

    moves = transitions(history)
    pet1 = moves[moves.id == 1][["from_status", "to_status", "days"]].values.tolist()
    assert pet1 == [["available", "pending", 1], ["pending", "sold", 2]]
    pet4 = moves[moves.id == 4]  # status-less, then sold: a change from null
    assert pet4.to_status.tolist() == ["sold"] and pet4.from_status.isna().all()
    assert 9 not in set(moves.id)  # a rename is a new version, not a status change
    assert [s.date for s in list_snapshots(out)] == NIGHTS


def _rebuild_copy(out: Path, target: Path) -> Path:
    """The snapshots of ``out`` copied to ``target``, its history rebuilt there."""
    import shutil

    shutil.copytree(out / "pets", target / "pets")
    report = update_history(target, rebuild=True)
    assert report.rebuilt
    return target
