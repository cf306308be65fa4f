"""One night folded into the history: the rules of the table, in one function.

Given the versions open before a snapshot (sorted by id) and the snapshot's pets:

- a pet whose content (name, categoryId, status) is unchanged keeps its open version;
- a pet whose content changed closes its version (``valid_to`` = the snapshot's date) and
  opens a new one (``valid_from`` = that date);
- a pet with no open version (new, or back after it was closed) opens one;
- a pet the snapshot lacks is closed only when the snapshot is trusted (the export's exit 0:
  complete, no suspicious drop); an untrusted night (exit 4) never ends a pet's history.

A status-less pet is a version like any other, its status null.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from petsync.core.errors import InputError
from petsync.history.table import HISTORY_SCHEMA, Night, content_hash

NO_STATUS = "(none)"  # how a null status is counted in a night's by_status and transitions
ARROW = "→"


@dataclass(frozen=True)
class FoldedNight:
    """The open versions after a night, the versions it closed, and its counts."""

    open: pa.Table
    closed: pa.Table
    night: Night


def fold_night(
    open_versions: pa.Table,
    snapshot: pa.Table,
    *,
    date: dt.date,
    trusted: bool,
    run_id: str | None = None,
    complete: bool = True,
    quarantined: int = 0,
    drop_flagged: bool = False,
) -> FoldedNight:
    """Apply one snapshot (the snapshot schema, any order) to the open versions."""
    snapshot = snapshot.sort_by("id")
    ids = snapshot.column("id").to_numpy()
    if len(ids) > 1 and bool(np.any(ids[1:] == ids[:-1])):
        duplicate = int(ids[1:][ids[1:] == ids[:-1]][0])
        raise InputError(
            f"the snapshot of {date} holds pet id {duplicate} twice; a petsync snapshot "
            "holds each id once: export it again"
        )
    hashes = content_hash(snapshot)
    open_ids = open_versions.column("id").to_numpy()
    open_hashes = open_versions.column("hash").to_numpy()

    if len(open_ids):
        pos = np.minimum(np.searchsorted(open_ids, ids), len(open_ids) - 1)
        found = open_ids[pos] == ids
        same = found & (open_hashes[pos] == hashes)
    else:
        pos = np.zeros(len(ids), dtype=np.int64)
        found = np.zeros(len(ids), dtype=bool)
        same = found
    changed = found & ~same
    present = np.zeros(len(open_ids), dtype=bool)
    present[pos[found]] = True
    changed_open = np.zeros(len(open_ids), dtype=bool)
    changed_open[pos[changed]] = True
    absent = ~present
    close = changed_open | absent if trusted else changed_open

    date_scalar = pa.scalar(date, pa.date32())
    closed = open_versions.filter(pa.array(close)).set_column(
        6, HISTORY_SCHEMA.field("valid_to"), pa.array([date] * int(close.sum()), pa.date32())
    )
    kept = open_versions.filter(pa.array(~close))
    opening = pa.array(~same)
    opened = snapshot.filter(opening)
    n_opened = opened.num_rows
    new_rows = pa.table(
        {
            "id": opened.column("id"),
            "name": opened.column("name"),
            "categoryId": opened.column("categoryId"),
            "status": opened.column("status"),
            "hash": pa.array(hashes[~same], pa.int64()),
            "valid_from": pa.repeat(date_scalar, n_opened),
            "valid_to": pa.nulls(n_opened, pa.date32()),
        },
        schema=HISTORY_SCHEMA,
    )
    merged = pa.concat_tables([kept, new_rows])
    # Two runs each sorted by id: a stable sort merges them in linear time.
    order = np.argsort(merged.column("id").to_numpy(), kind="stable")
    new_open = merged.take(pa.array(order))

    status = snapshot.column("status")
    by_status = {
        (NO_STATUS if value is None else str(value)): int(count)
        for value, count in (
            (row["values"], row["counts"]) for row in pc.value_counts(status).to_pylist()
        )
    }
    old_status = open_versions.column("status").take(pa.array(pos[changed])).to_pylist()
    new_status = status.filter(pa.array(changed)).to_pylist()
    status_changes = Counter(
        f"{old or NO_STATUS}{ARROW}{new or NO_STATUS}"
        for old, new in zip(old_status, new_status, strict=True)
        if old != new
    )
    night = Night(
        date=date,
        run_id=run_id,
        complete=complete,
        trusted=trusted,
        pets=len(ids),
        quarantined=quarantined,
        drop_flagged=drop_flagged,
        by_status=dict(sorted(by_status.items())),
        added=int((~found).sum()),
        changed=int(changed.sum()),
        removed=int(absent.sum()) if trusted else 0,
        kept=0 if trusted else int(absent.sum()),
        status_changes=dict(sorted(status_changes.items())),
    )
    return FoldedNight(open=new_open, closed=closed, night=night)
