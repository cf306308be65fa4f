"""One night folded into the history: the rules of the table, in one function.

Given the versions open before a night and the night's pets, both in id order:

- a pet whose content (name, categoryId, status) is unchanged keeps its open version;
- a pet whose content changed closes its version (``valid_to`` = the snapshot's date) and
  opens a new one (``valid_from`` = that date);
- a pet with no open version (new, or back after it was closed) opens one;
- a pet the snapshot lacks is closed only when the snapshot is trusted (the export's exit 0:
  complete, no suspicious drop); an untrusted night (exit 4) never ends a pet's history.

A status-less pet is a version like any other, its status null.

Both stream through in pieces (the open versions as the history's open file holds them,
the night's pets as :mod:`petsync.history.night_batches` puts them in id order), merged block by
block, and the new open versions leave in pieces, in id order, to a sink: memory holds a
piece of each, never the night or the table.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from petsync.core.arrow_arrays import (
    bool_array,
    date32_array,
    int64_array,
    to_numpy,
)
from petsync.core.errors import InputError
from petsync.history.content_hash import content_hash
from petsync.history.status_codes import NIGHT_SCHEMA, NULL_CODE, codes, names, status_of
from petsync.history.table import (
    CONTENT_COLUMNS,
    HISTORY_SCHEMA,
    OPEN_SCHEMA,
    Night,
    empty_history,
)

NO_STATUS = "(none)"  # how a null status is counted in a night's by_status and transitions
ARROW = "→"


@dataclass(frozen=True)
class FoldedNight:
    """The versions a night closed, and its counts (the open versions went to the sink)."""

    closed: pa.Table
    night: Night
    open_rows: int


@dataclass
class _Tally:
    """What a night did, counted block by block."""

    pets: int = 0
    added: int = 0
    changed: int = 0
    removed: int = 0
    kept: int = 0
    open_rows: int = 0
    by_status: Counter[str] = field(default_factory=Counter)
    changes: Counter[str] = field(default_factory=Counter)
    closed: list[pa.Table] = field(default_factory=list)


def fold_night(
    open_pieces: Iterable[pa.Table],
    night_pieces: Iterable[pa.Table],
    sink: Callable[[pa.Table], None],
    *,
    date: dt.date,
    trusted: bool,
    run_id: str | None = None,
    complete: bool = True,
    quarantined: int = 0,
    drop_flagged: bool = False,
) -> FoldedNight:
    """Apply one night's pets to the open versions, both streams in id order.

    ``open_pieces`` are the open versions (tables of the history schema) and
    ``night_pieces`` the snapshot's pets (the snapshot schema), each in id order, in pieces
    of any size; ``sink`` receives the open versions after the night, in id order, piece by
    piece. The two streams are merged: memory holds a piece of each, never the night.
    """
    tally = _Tally()
    day = _days(date)
    for old, new in aligned(open_pieces, unique_pieces(night_pieces, date)):
        out = _fold_block(old, new, day, trusted, tally)
        tally.open_rows += out.num_rows
        sink(out)
    night = Night(
        date=date,
        run_id=run_id,
        complete=complete,
        trusted=trusted,
        pets=tally.pets,
        quarantined=quarantined,
        drop_flagged=drop_flagged,
        by_status=dict(sorted(tally.by_status.items())),
        added=tally.added,
        changed=tally.changed,
        removed=tally.removed,
        kept=tally.kept,
        status_changes=dict(sorted(tally.changes.items())),
    )
    closed = pa.concat_tables(tally.closed) if tally.closed else empty_history()
    return FoldedNight(closed=closed, night=night, open_rows=tally.open_rows)


def unique_pieces(pieces: Iterable[pa.Table], date: dt.date) -> Iterator[pa.Table]:
    """The night's pieces (id and content only), checked to hold each id once."""
    last: int | None = None
    for piece in pieces:
        if not piece.num_rows:
            continue
        piece = piece.select(["id", *CONTENT_COLUMNS]).unify_dictionaries().combine_chunks()
        ids = to_numpy(piece.column("id"))
        if len(ids) > 1 and not bool(np.all(ids[1:] >= ids[:-1])):
            raise ValueError("the night's pets must come in id order")  # a caller's bug
        if last is not None and ids[0] <= last:
            if ids[0] < last:
                raise ValueError("the night's pets must come in id order")
            raise _duplicate(date, last)
        if len(ids) > 1 and bool(np.any(ids[1:] == ids[:-1])):
            raise _duplicate(date, int(ids[1:][ids[1:] == ids[:-1]][0]))
        last = int(ids[-1])
        yield piece


def _duplicate(date: dt.date, pet_id: int) -> InputError:
    return InputError(
        f"the snapshot of {date} holds pet id {pet_id} twice; a petsync snapshot "
        "holds each id once: export it again"
    )


def aligned(
    olds: Iterable[pa.Table], news: Iterable[pa.Table]
) -> Iterator[tuple[pa.Table | None, pa.Table | None]]:
    """Pairs of blocks of the open versions and the night, covering the same ids in turn.

    A block ends at the smaller of the two pieces' last ids: no row of either stream still
    to come can have an id up to it. One side is None where its stream has ended.
    """
    old_stream = (p for p in olds if p.num_rows)
    new_stream = iter(news)
    old, new = next(old_stream, None), next(new_stream, None)
    while old is not None or new is not None:
        if old is None or new is None:
            yield old, new
            old = next(old_stream, None) if old is not None else None
            new = next(new_stream, None) if new is not None else None
            continue
        old_ids, new_ids = to_numpy(old.column("id")), to_numpy(new.column("id"))
        bound = min(old_ids[-1], new_ids[-1])
        old_cut = int(np.searchsorted(old_ids, bound, side="right"))
        new_cut = int(np.searchsorted(new_ids, bound, side="right"))
        yield old.slice(0, old_cut), new.slice(0, new_cut)
        old = old.slice(old_cut) if old_cut < len(old_ids) else next(old_stream, None)
        new = new.slice(new_cut) if new_cut < len(new_ids) else next(new_stream, None)


def _fold_block(
    piece: pa.Table | None, snapshot: pa.Table | None, day: int, trusted: bool, tally: _Tally
) -> pa.Table:
    """One block: the open versions ``piece`` and the night's pets ``snapshot`` with ids in
    the same range; returns the block's open versions after the night."""
    if snapshot is None:
        snapshot = _NO_PETS
    new_status = status_of(snapshot)
    new_codes = codes(new_status)
    if snapshot.num_rows:
        tally.pets += snapshot.num_rows
        counts = np.bincount(new_codes - NULL_CODE)
        tally.by_status.update(
            {
                NO_STATUS if name is None else name: int(count)
                for name, count in zip(names(new_status), counts.tolist(), strict=False)
                if count
            }
        )
    if piece is None or not piece.num_rows:
        if not snapshot.num_rows:
            return empty_history()
        tally.added += snapshot.num_rows
        return _open_versions(snapshot, day, _NO_ROWS, _NO_ROWS, _NO_ROWS)
    ids = to_numpy(snapshot.column("id"))
    open_ids = to_numpy(piece.column("id"))
    pos, present = _locate(open_ids, ids)
    matched = np.zeros(len(ids), dtype=bool)  # the night's pets that had an open version
    matched[pos[present]] = True
    old_status = status_of(piece)
    old_codes = codes(old_status)
    equal = np.zeros(len(open_ids), dtype=bool)
    equal[present] = _same_content(snapshot, matched, piece, present, pos, (new_codes, old_codes))
    differ = present & ~equal
    absent = ~present
    close = differ | absent if trusted else differ
    tally.added += int((~matched).sum())
    tally.changed += int(differ.sum())
    if trusted:
        tally.removed += int(absent.sum())
    else:
        tally.kept += int(absent.sum())
    if differ.any():
        old, new = old_codes[differ] - NULL_CODE, new_codes[pos[differ]] - NULL_CODE
        said = names(old_status, new_status)
        moves, counts = np.unique((old * len(said) + new)[old != new], return_counts=True)
        shown = [NO_STATUS if name is None else name for name in said]
        tally.changes.update(
            {
                f"{shown[move // len(said)]}{ARROW}{shown[move % len(said)]}": count
                for move, count in zip(moves.tolist(), counts.tolist(), strict=True)
            }
        )
    if close.any():
        ending = piece.filter(bool_array(close))
        tally.closed.append(
            ending.set_column(
                6,
                HISTORY_SCHEMA.field("valid_to"),
                date32_array(np.full(len(ending), day, dtype=np.int32)),
            ).cast(HISTORY_SCHEMA)
        )
    # Those pets are tonight's open versions: the unchanged keep their hash and first night.
    keep = present & equal
    out = _open_versions(
        snapshot,
        day,
        pos[keep],
        to_numpy(piece.column("valid_from"))[keep],
        to_numpy(piece.column("hash"))[keep],
    )
    if not trusted and absent.any():  # an untrusted night keeps the pets it lacks
        out = _in_id_order(out, piece.filter(bool_array(absent)))
    return out


def _locate(
    open_ids: npt.NDArray[np.int64], ids: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
    """Where each open version's pet is among the night's ``ids`` (both sorted, unique), and
    whether it is there at all (``pos`` means nothing where it is not).

    A block's ids are nearly always dense (a catalogue numbers its pets), so a table over
    their range answers in a few passes; sparse ids are searched, a binary search each.
    """
    if not len(ids) or not len(open_ids):
        return np.zeros(len(open_ids), dtype=np.int64), np.zeros(len(open_ids), dtype=bool)
    low = min(int(ids[0]), int(open_ids[0]))
    span = max(int(ids[-1]), int(open_ids[-1])) - low + 1
    if span > _DENSE * (len(ids) + len(open_ids)):
        pos = np.minimum(np.searchsorted(ids, open_ids), len(ids) - 1)
        return pos, ids[pos] == open_ids
    table = np.full(span, -1, dtype=np.int64)
    table[ids - low] = np.arange(len(ids))
    pos = table[open_ids - low]
    return pos, pos >= 0


_DENSE = 4  # a table over the ids' range at most this many times their count


def _days(date: dt.date) -> int:
    return (date - _EPOCH).days


_EPOCH = dt.date(1970, 1, 1)
_NO_ROWS = np.zeros(0, dtype=np.int64)  # no kept versions
_NO_PETS = pa.Table.from_batches([], schema=NIGHT_SCHEMA)  # (pa.array() would import pandas)


def _open_versions(
    rows: pa.Table,
    day: int,
    kept_at: np.ndarray,
    kept_from: np.ndarray,
    kept_hash: np.ndarray,
) -> pa.Table:
    """The open versions of the night's ``rows``: their content as it is, with the first
    night and hash of the unchanged versions (at ``kept_at``) and new ones for every other
    row."""
    count = rows.num_rows
    valid_from = np.full(count, day, dtype=np.int32)
    hashes = np.zeros(count, dtype=np.int64)
    fresh = np.ones(count, dtype=bool)
    fresh[kept_at] = False
    valid_from[kept_at] = kept_from
    hashes[kept_at] = kept_hash
    if fresh.any():
        new = np.nonzero(fresh)[0]
        hashes[new] = to_numpy(content_hash(rows.take(int64_array(new))))
    return pa.table(
        {
            "id": rows.column("id"),
            "name": rows.column("name"),
            "categoryId": rows.column("categoryId"),
            "status": rows.column("status"),
            "hash": int64_array(hashes),
            "valid_from": date32_array(valid_from),
            "valid_to": pa.nulls(count, pa.date32()),
        },
        schema=OPEN_SCHEMA,
    )


def _in_id_order(versions: pa.Table, others: pa.Table) -> pa.Table:
    """Two tables of the history schema, disjoint in id, as one in id order."""
    merged = pa.concat_tables([versions, others.cast(OPEN_SCHEMA)]).unify_dictionaries()
    return merged.take(int64_array(np.argsort(to_numpy(merged.column("id")), kind="stable")))


def _same_content(
    rows: pa.Table,
    matched: np.ndarray,
    piece: pa.Table,
    present: np.ndarray,
    pos: np.ndarray,
    status_codes: tuple[np.ndarray, np.ndarray],
) -> np.ndarray:
    """Whether each ``matched`` snapshot row has the content of the piece's version at the
    same place among the ``present`` ones (both in id order; ``pos`` maps the piece's rows to
    the snapshot's, ``status_codes`` are both sides' status codes): one answer per match.

    Compared column by column; a null status equals only a null status (its code is
    NULL_CODE on both sides). Names are filtered, not gathered: a mask that keeps nearly
    everything copies in runs, ten times faster than a take.
    """
    count = int(matched.sum())
    same = np.ones(count, dtype=bool)
    if not count:
        return same
    at = pos[present]
    new_codes, old_codes = status_codes
    same &= new_codes[at] == old_codes[present]
    same &= to_numpy(rows.column("categoryId"))[at] == to_numpy(piece.column("categoryId"))[present]
    new = rows.column("name")
    if not matched.all():
        new = new.filter(bool_array(matched))
    old = piece.column("name")
    if not present.all():
        old = old.filter(bool_array(present))
    same &= to_numpy(pc.equal(new, old))  # names are never null
    return same
