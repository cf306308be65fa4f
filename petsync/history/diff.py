"""Compare two snapshots: pets added, removed, renamed, recategorised and moved between statuses.

The interface documents no status transitions (States and transitions: "not shown"); a
diff of two nightly snapshots makes the ones that happen visible. Fields the API sends
beyond the interface's are compared too: which appeared or disappeared between the two
nights (from the manifests, whatever ``--extra-fields`` was), and, for fields both
snapshots kept as columns, each pet whose value changed.

>>> d = diff_snapshots("2026-11-21", "2026-11-22", directory=Path("out"))   # doctest: +SKIP
>>> d.added, d.removed, d.status_transitions                                # doctest: +SKIP
(12, 3, {('available', 'sold'): 40, ('sold', None): 1})
>>> d.json_line()                                                           # doctest: +SKIP
'{"old": {"snapshot_date": "2026-11-21", ...}, ..., "status_transitions": [...]}'

A missing status is None in the transitions and the row frames (null in JSON), never a
made-up name that an unknown status could share.

The two nights are read as the history reads a night (:mod:`petsync.history.night_batches`):
in id order, a piece at a time, and compared piece by piece, so memory holds the pieces and
the changes, never a night. Only two snapshots that both kept extra fields as columns are
read whole (those columns are compared too).
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from petsync.core.arrow_arrays import bool_array, to_numpy
from petsync.formats.schema import (
    PET_SCHEMA,
    extra_columns,
    recorded_fields,
    to_dataframe,
)
from petsync.formats.snapshots import find_snapshot, read_table
from petsync.history.fold import aligned, unique_pieces
from petsync.history.night_batches import night_pieces
from petsync.history.status_codes import StatusCodes, codes, status_of
from petsync.storage.layout import SnapshotInfo

if TYPE_CHECKING:
    import pandas as pd

Transition = tuple[str | None, str | None]  # (old status, new status); None: no status


@dataclass(frozen=True)
class SnapshotDiff:
    """Counts of the changes from ``old`` to ``new``, and the changed rows.

    The row frames have the snapshot columns; ``renamed_rows`` has ``id``, ``name_old``,
    ``name_new``; ``transition_rows`` has ``id``, ``name``, ``status_old``, ``status_new``;
    ``field_change_rows`` (kept extra fields) has ``id``, ``name``, ``field``, ``value_old``,
    ``value_new``. ``fields_appeared`` and ``fields_disappeared`` name the extra fields sent
    on one night and not the other.
    """

    old: SnapshotInfo
    new: SnapshotInfo
    added_rows: pd.DataFrame
    removed_rows: pd.DataFrame
    renamed_rows: pd.DataFrame
    recategorised_rows: pd.DataFrame
    transition_rows: pd.DataFrame
    field_change_rows: pd.DataFrame | None = None
    fields_appeared: tuple[str, ...] = field(default=())
    fields_disappeared: tuple[str, ...] = field(default=())

    @property
    def field_changes(self) -> dict[str, int]:
        """How many pets' values changed, per kept extra field, e.g. ``{"tag": 3}``."""
        frame = self.field_change_rows
        if frame is None or not len(frame):
            return {}
        return {str(k): int(v) for k, v in frame["field"].value_counts().sort_index().items()}

    @property
    def added(self) -> int:
        return len(self.added_rows)

    @property
    def removed(self) -> int:
        return len(self.removed_rows)

    @property
    def renamed(self) -> int:
        return len(self.renamed_rows)

    @property
    def recategorised(self) -> int:
        return len(self.recategorised_rows)

    @property
    def status_transitions(self) -> dict[Transition, int]:
        """How many pets went from one status to another, e.g. ``{("available", "sold"): 3}``.

        A missing status is None: ``("sold", None)`` is a pet that lost its status.
        """
        counts: dict[Transition, int] = {}
        for old, new in zip(
            self.transition_rows["status_old"], self.transition_rows["status_new"], strict=True
        ):
            key = (_status(old), _status(new))
            counts[key] = counts.get(key, 0) + 1
        return dict(sorted(counts.items(), key=lambda item: _order(item[0])))

    def to_json(self, *, details: bool = False) -> dict[str, Any]:
        """The summary as a JSON-ready dict, like every ``to_json()`` of petsync (``details``
        adds the changed rows); :meth:`json_line` is the same as one line of JSON text."""
        body: dict[str, Any] = {
            "old": _side(self.old),
            "new": _side(self.new),
            "added": self.added,
            "removed": self.removed,
            "renamed": self.renamed,
            "recategorised": self.recategorised,
            "status_transitions": [
                {"from": old, "to": new, "pets": count}
                for (old, new), count in self.status_transitions.items()
            ],
            "fields_appeared": list(self.fields_appeared),
            "fields_disappeared": list(self.fields_disappeared),
            "field_changes": [
                {"field": name, "pets": count} for name, count in self.field_changes.items()
            ],
        }
        if details:
            body["details"] = {
                "added": _records(self.added_rows),
                "removed": _records(self.removed_rows),
                "renamed": _records(self.renamed_rows),
                "recategorised": _records(self.recategorised_rows),
                "status_transitions": _records(self.transition_rows),
                "field_changes": _records(self.field_change_rows)
                if self.field_change_rows is not None
                else [],
            }
        return body

    def json_line(self, *, details: bool = False) -> str:
        """One line of JSON: what ``petsync diff --json`` prints (non-ASCII kept)."""
        return json.dumps(self.to_json(details=details), ensure_ascii=False, allow_nan=False)


def _side(info: SnapshotInfo) -> dict[str, Any]:
    """One side of the diff: its date, where it is, and whether it is trusted."""
    return {
        "snapshot_date": info.date.isoformat(),
        "path": str(info.path),
        "trusted": info.trusted,
    }


def _status(value: object) -> str | None:
    import pandas as pd

    return None if value is None or value is pd.NA else str(value)


def _order(transition: Transition) -> tuple[tuple[bool, str], tuple[bool, str]]:
    """Sort key: by old, then new status; no status after every named one."""
    old, new = transition
    return (old is None, old or ""), (new is None, new or "")


def diff_snapshots(
    old: str | Path | dt.date,
    new: str | Path | dt.date,
    *,
    directory: Path | str | None = None,
) -> SnapshotDiff:
    """Diff two snapshots given as dates (under ``directory``, a path or a URI) or partitions.

    >>> diff_snapshots("2026-11-21", "2026-11-22", directory="s3://bkt/p")  # doctest: +SKIP
    """

    old_info = find_snapshot(old, directory=directory)
    new_info = find_snapshot(new, directory=directory)
    if _keeps_columns(old_info) and _keeps_columns(new_info):
        old_table, new_table = read_table(old_info), read_table(new_info)
        both = _frame(old_table).merge(
            _frame(new_table), on="id", how="outer", suffixes=("_old", "_new"), indicator=True
        )
        removed = _rows_of(both[both["_merge"] == "left_only"], "_old")
        added = _rows_of(both[both["_merge"] == "right_only"], "_new")
        in_both = both[both["_merge"] == "both"]
        kept = [c for c in extra_columns(old_table.schema) if c in new_table.schema.names]
        old_fields = _extra_field_names(old_info, old_table)
        new_fields = _extra_field_names(new_info, new_table)
    else:
        removed, added, in_both = _streamed(old_info, new_info)
        kept = []  # neither night holds an extra field as a column: only the manifests say
        old_fields = set(recorded_fields(old_info.manifest))
        new_fields = set(recorded_fields(new_info.manifest))
    renamed = in_both[in_both["name_old"] != in_both["name_new"]][["id", "name_old", "name_new"]]
    recategorised = in_both[in_both["categoryId_old"] != in_both["categoryId_new"]][
        ["id", "name_new", "categoryId_old", "categoryId_new"]
    ].rename(columns={"name_new": "name"})
    status_old, status_new = in_both["status_old"], in_both["status_new"]
    # <NA> compares as unknown: a status that appeared or went is a change too.
    differs = (status_old.isna() != status_new.isna()) | (status_old != status_new).fillna(False)
    moved = in_both[differs.astype(bool)][["id", "name_new", "status_old", "status_new"]].rename(
        columns={"name_new": "name"}
    )
    return SnapshotDiff(
        old=old_info,
        new=new_info,
        added_rows=added,
        removed_rows=removed,
        renamed_rows=renamed.sort_values("id").reset_index(drop=True),
        recategorised_rows=recategorised.sort_values("id").reset_index(drop=True),
        transition_rows=moved.sort_values("id").reset_index(drop=True),
        field_change_rows=_field_changes(in_both, kept),
        fields_appeared=tuple(sorted(new_fields - old_fields)),
        fields_disappeared=tuple(sorted(old_fields - new_fields)),
    )


def _keeps_columns(info: SnapshotInfo) -> bool:
    """Whether a snapshot may hold extra fields as columns (its manifest names a column,
    or it has no manifest to say)."""
    if info.manifest is None:
        return True
    return any(entry.get("column") for entry in recorded_fields(info.manifest).values())


def _frame(table: pa.Table) -> pd.DataFrame:
    frame = to_dataframe(table)
    frame["status"] = frame["status"].astype("string")  # a missing status stays <NA>
    return frame


def _rows_of(frame: pd.DataFrame, suffix: str) -> pd.DataFrame:
    """Rows of one side of the merge, under the snapshot's column names, in id order."""
    out = frame[["id", f"name{suffix}", f"categoryId{suffix}", f"status{suffix}"]]
    out = out.set_axis(["id", "name", "categoryId", "status"], axis=1)
    return out.sort_values("id").reset_index(drop=True)


class _Changes:
    """What the pieces compared so far found: rows gone, rows new, and the pets present on
    both nights whose content differs (both sides, in the same order)."""

    def __init__(self) -> None:
        self.removed: list[pa.Table] = []
        self.added: list[pa.Table] = []
        self.changed_old: list[pa.Table] = []
        self.changed_new: list[pa.Table] = []

    def compare(self, old: pa.Table | None, new: pa.Table | None) -> None:
        """One block: both nights' pets with ids in the same range, each in id order."""
        if old is None or not old.num_rows:
            if new is not None and new.num_rows:
                self.added.append(new)
            return
        if new is None or not new.num_rows:
            self.removed.append(old)
            return
        old_ids, new_ids = to_numpy(old.column("id")), to_numpy(new.column("id"))
        at = np.minimum(np.searchsorted(new_ids, old_ids), len(new_ids) - 1)
        present = new_ids[at] == old_ids  # the old night's pets still there
        matched = np.zeros(len(new_ids), dtype=bool)
        matched[at[present]] = True
        if not present.all():
            self.removed.append(old.filter(bool_array(~present)))
        if not matched.all():
            self.added.append(new.filter(bool_array(~matched)))
        before = old.filter(bool_array(present))  # the same pets, in the same (id) order
        after = new.filter(bool_array(matched))
        differs = to_numpy(pc.not_equal(before.column("name"), after.column("name")))
        differs |= to_numpy(before.column("categoryId")) != to_numpy(after.column("categoryId"))
        differs |= codes(status_of(before)) != codes(status_of(after))  # no status: one code
        if differs.any():
            mask = bool_array(differs)
            self.changed_old.append(before.filter(mask))
            self.changed_new.append(after.filter(mask))


def _streamed(
    old_info: SnapshotInfo, new_info: SnapshotInfo
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The removed rows, the added rows and the merged rows of the pets on both nights whose
    content differs, the two nights read a piece at a time in id order."""
    statuses = StatusCodes()  # one coding for both nights: a code is a status on either
    changes = _Changes()
    with (
        night_pieces(old_info, statuses) as olds,
        night_pieces(new_info, statuses) as news,
    ):
        pieces = aligned(
            unique_pieces(olds, old_info.date),
            unique_pieces(news, new_info.date),
        )
        for old, new in pieces:
            changes.compare(old, new)

    def frame(tables: list[pa.Table]) -> pd.DataFrame:
        return _frame(_joined(tables))

    before, after = frame(changes.changed_old), frame(changes.changed_new)
    in_both = before.merge(after, on="id", how="inner", suffixes=("_old", "_new"))
    return frame(changes.removed), frame(changes.added), in_both


def _joined(tables: list[pa.Table]) -> pa.Table:
    """Pieces as one table of the snapshot schema, the status as text again (each piece's
    codes read with its own dictionary: pieces coded before a status was first seen have a
    shorter one)."""
    if not tables:
        return PET_SCHEMA.empty_table()
    return pa.concat_tables(
        table.set_column(
            table.schema.get_field_index("status"),
            "status",
            status_of(table).dictionary_decode(),
        )
        for table in tables
    ).combine_chunks()


def _extra_field_names(info: SnapshotInfo, table: pa.Table) -> set[str]:
    """The extra fields a snapshot saw: its manifest's (kept or not), and its extra columns."""
    return set(recorded_fields(info.manifest)) | set(extra_columns(table.schema))


def _field_changes(in_both: pd.DataFrame, fields: list[str]) -> pd.DataFrame:
    """One row per pet and kept field whose value differs (a null and a value differ too)."""
    import pandas as pd

    parts = []
    for name in fields:
        old, new = in_both[f"{name}_old"].astype(object), in_both[f"{name}_new"].astype(object)
        same = (old.isna() & new.isna()) | (old == new).fillna(False).astype(bool)
        changed = in_both[~same]
        parts.append(
            pd.DataFrame(
                {
                    "id": changed["id"],
                    "name": changed["name_new"],
                    "field": name,
                    "value_old": old[~same],
                    "value_new": new[~same],
                }
            )
        )
    columns = ["id", "name", "field", "value_old", "value_new"]
    if not parts:
        return pd.DataFrame({c: [] for c in columns})
    frame = pd.concat(parts, ignore_index=True)
    return frame.sort_values(["id", "field"]).reset_index(drop=True)[columns]


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for record in frame.astype(object).to_dict(orient="records"):
        rows.append({str(k): _plain(v) for k, v in record.items()})
    return rows


def _plain(value: object) -> object:
    """JSON-ready scalar: pandas NA to None, numpy ints to int (exact, never float)."""
    import pandas as pd

    if value is None or value is pd.NA:
        return None
    if hasattr(value, "item"):
        return value.item()
    return value
