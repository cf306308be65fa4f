"""One night folded into the history: the rules of the table, in one function.

Given the versions open before a snapshot (sorted by id) and the snapshot's pets:

- a pet whose content (name, categoryId, status) is unchanged keeps its open version;
- a pet whose content changed closes its version (``valid_to`` = the snapshot's date) and
  opens a new one (``valid_from`` = that date);
- a pet with no open version (new, or back after it was closed) opens one;
- a pet the snapshot lacks is closed only when the snapshot is trusted (the export's exit 0:
  complete, no suspicious drop); an untrusted night (exit 4) never ends a pet's history.

A status-less pet is a version like any other, its status null.

The open versions stream through in pieces (sorted by id, as the history's open file holds
them) and the new open versions leave in pieces, in id order, to a sink: memory holds the
snapshot and one piece, never the whole table twice.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from petsync.core.errors import InputError
from petsync.history.table import (
    CONTENT_COLUMNS,
    HISTORY_SCHEMA,
    PIECE_ROWS,
    Night,
    content_hash,
)

NO_STATUS = "(none)"  # how a null status is counted in a night's by_status and transitions
ARROW = "→"


@dataclass(frozen=True)
class FoldedNight:
    """The versions a night closed, and its counts (the open versions went to the sink)."""

    closed: pa.Table
    night: Night
    open_rows: int


def fold_night(
    open_pieces: Iterable[pa.Table],
    snapshot: pa.Table,
    sink: Callable[[pa.Table], None],
    *,
    date: dt.date,
    trusted: bool,
    run_id: str | None = None,
    complete: bool = True,
    quarantined: int = 0,
    drop_flagged: bool = False,
) -> FoldedNight:
    """Apply one snapshot (the snapshot schema, any order) to the open versions.

    ``open_pieces`` are the open versions in id order (tables of the history schema);
    ``sink`` receives the open versions after the night, in id order, piece by piece.
    """
    snapshot = _sorted_unique(snapshot, date)
    ids = snapshot.column("id").to_numpy()
    same = np.zeros(len(ids), dtype=bool)  # snapshot rows whose open version stays
    matched = np.zeros(len(ids), dtype=bool)  # snapshot rows that had an open version
    closed: list[pa.Table] = []
    changes: Counter[str] = Counter()
    removed = kept_absent = changed = open_rows = 0
    done = 0  # snapshot rows [0, done) are placed: kept, opened or written
    for piece in open_pieces:
        if not piece.num_rows:
            continue
        open_ids = piece.column("id").to_numpy()
        pos = np.minimum(np.searchsorted(ids, open_ids), max(len(ids) - 1, 0))
        present = ids[pos] == open_ids if len(ids) else np.zeros(len(open_ids), dtype=bool)
        equal = np.zeros(len(open_ids), dtype=bool)
        equal[present] = _same_content(snapshot, pos[present], piece, np.nonzero(present)[0])
        same[pos[present & equal]] = True
        matched[pos[present]] = True
        differ = present & ~equal
        absent = ~present
        close = differ | absent if trusted else differ
        changed += int(differ.sum())
        if trusted:
            removed += int(absent.sum())
        else:
            kept_absent += int(absent.sum())
        if differ.any():
            old = piece.column("status").filter(pa.array(differ)).to_pylist()
            new = snapshot.column("status").take(pa.array(pos[differ])).to_pylist()
            changes.update(
                f"{a or NO_STATUS}{ARROW}{b or NO_STATUS}"
                for a, b in zip(old, new, strict=True)
                if a != b
            )
        if close.any():
            ending = piece.filter(pa.array(close))
            closed.append(
                ending.set_column(
                    6, HISTORY_SCHEMA.field("valid_to"), pa.repeat(pa.scalar(date), len(ending))
                ).cast(HISTORY_SCHEMA)
            )
        # New versions of the pets up to this piece's last id go out with its kept rows.
        upto = int(np.searchsorted(ids, open_ids[-1], side="right"))
        out = _merge(piece.filter(pa.array(~close)), _opened(snapshot, same, done, upto, date))
        done = upto
        open_rows += out.num_rows
        sink(out)
    for start in range(done, len(ids), PIECE_ROWS):  # pets past the last open one
        tail = _opened(snapshot, same, start, min(start + PIECE_ROWS, len(ids)), date)
        open_rows += tail.num_rows
        sink(tail)

    status = snapshot.column("status")
    by_status = {
        (NO_STATUS if row["values"] is None else str(row["values"])): int(row["counts"])
        for row in pc.value_counts(status).to_pylist()
    }
    night = Night(
        date=date,
        run_id=run_id,
        complete=complete,
        trusted=trusted,
        pets=len(ids),
        quarantined=quarantined,
        drop_flagged=drop_flagged,
        by_status=dict(sorted(by_status.items())),
        added=int((~matched).sum()),
        changed=changed,
        removed=removed,
        kept=kept_absent,
        status_changes=dict(sorted(changes.items())),
    )
    closed_table = pa.concat_tables(closed) if closed else HISTORY_SCHEMA.empty_table()
    return FoldedNight(closed=closed_table, night=night, open_rows=open_rows)


def _sorted_unique(snapshot: pa.Table, date: dt.date) -> pa.Table:
    ids = snapshot.column("id").to_numpy()
    if len(ids) > 1 and not bool(np.all(ids[1:] >= ids[:-1])):
        snapshot = snapshot.sort_by("id")
        ids = snapshot.column("id").to_numpy()
    if len(ids) > 1 and bool(np.any(ids[1:] == ids[:-1])):
        duplicate = int(ids[1:][ids[1:] == ids[:-1]][0])
        raise InputError(
            f"the snapshot of {date} holds pet id {duplicate} twice; a petsync snapshot "
            "holds each id once: export it again"
        )
    return snapshot.combine_chunks()


def _opened(snapshot: pa.Table, same: np.ndarray, start: int, stop: int, date: dt.date) -> pa.Table:
    """New versions of the snapshot's rows [start, stop) whose open version does not stay."""
    rows = start + np.nonzero(~same[start:stop])[0]
    if not len(rows):
        return HISTORY_SCHEMA.empty_table()
    opened = snapshot.take(pa.array(rows))
    return pa.table(
        {
            "id": opened.column("id"),
            "name": opened.column("name"),
            "categoryId": opened.column("categoryId"),
            "status": opened.column("status"),
            "hash": content_hash(opened),
            "valid_from": pa.repeat(pa.scalar(date, pa.date32()), opened.num_rows),
            "valid_to": pa.nulls(opened.num_rows, pa.date32()),
        },
        schema=HISTORY_SCHEMA,
    )


def _merge(kept: pa.Table, opened: pa.Table) -> pa.Table:
    """Two tables each in id order, as one in id order."""
    if not opened.num_rows:
        return kept.cast(HISTORY_SCHEMA)
    if not kept.num_rows:
        return opened
    merged = pa.concat_tables([kept.cast(HISTORY_SCHEMA), opened])
    order = np.argsort(merged.column("id").to_numpy(), kind="stable")
    return merged.take(pa.array(order))


def _same_content(
    snapshot: pa.Table, rows: np.ndarray, piece: pa.Table, versions: np.ndarray
) -> np.ndarray:
    """Whether each snapshot row in ``rows`` has the content of the version in ``versions``.

    Compared column by column; a null status equals only a null status.
    """
    same = np.ones(len(rows), dtype=bool)
    if not len(rows):
        return same
    take_rows, take_versions = pa.array(rows), pa.array(versions)
    for column in CONTENT_COLUMNS:
        new = snapshot.column(column).take(take_rows)
        old = piece.column(column).take(take_versions)
        equal = pc.fill_null(pc.equal(new, old), False)
        if new.null_count or old.null_count:
            equal = pc.or_(equal, pc.and_(pc.is_null(new), pc.is_null(old)))
        same &= equal.to_numpy(zero_copy_only=False)
    return same
