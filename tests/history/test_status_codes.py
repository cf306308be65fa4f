"""Statuses as codes: one meaning per code across pieces, dictionaries and nights."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from petsync.formats.schema import PET_SCHEMA
from petsync.history.load import load_history, read_history_state
from petsync.history.status_codes import NULL_CODE, StatusCodes, codes
from petsync.history.update import update_history
from petsync.storage.layout import PARQUET_NAME
from tests.export.published import publish_snapshot
from tests.history.nights import START


def test_a_code_keeps_its_status_whatever_dictionary_brought_it() -> None:
    statuses = StatusCodes()
    first = statuses.coded(pa.array(["sold", None, "adopted"]))
    # Another row group's dictionary, in another order, with one more unknown status.
    second = statuses.coded(pc.dictionary_encode(pa.array(["on hold", "adopted", "sold", None])))

    assert codes(first).tolist() == [2, NULL_CODE, 3]
    assert codes(second).tolist() == [4, 3, 2, NULL_CODE]
    assert second.to_pylist() == ["on hold", "adopted", "sold", None]
    assert statuses.values.to_pylist() == ["available", "pending", "sold", "adopted", "on hold"]


def test_statuses_outside_the_interface_are_counted_and_changed_like_any_other(
    tmp_path: Path,
) -> None:
    """Row groups of two pets, each with its own dictionary; a status the interface does
    not name first appears in the last row group of the second night."""
    night1 = [(1, "a", 1, "sold"), (2, "b", 1, None), (3, "c", 1, "pending"), (4, "d", 1, "sold")]
    night2 = [(1, "a", 1, "sold"), (2, "b", 1, "sold"), (3, "c", 1, None), (4, "d", 1, "adopted")]
    for day, rows in enumerate([night1, night2]):
        folder = publish_snapshot(tmp_path, START + dt.timedelta(days=day), rows)
        table = pa.Table.from_pylist(
            [dict(zip(("id", "name", "categoryId", "status"), r, strict=True)) for r in rows],
            schema=PET_SCHEMA,
        )
        pq.write_table(table, folder / PARQUET_NAME, row_group_size=2)
        update_history(tmp_path)

    last = read_history_state(tmp_path).nights[-1]
    assert last.by_status == {"(none)": 1, "adopted": 1, "sold": 2}
    assert last.status_changes == {"(none)→sold": 1, "pending→(none)": 1, "sold→adopted": 1}
    current = load_history(tmp_path, as_of=START + dt.timedelta(days=1))
    assert current["status"].astype(object).where(current["status"].notna(), None).tolist() == [
        "sold",
        "sold",
        None,
        "adopted",
    ]
