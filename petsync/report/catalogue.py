"""The catalogue's numbers by night, category and status, from the history's versions.

Every table here is small whatever the catalogue: one row per night, category group and
status (``counts``), per night, group, status and kind of change (``churn``, only the
non-zero ones), per group and pair of statuses (``moves``), per group and number of days
(``sold``). Categories are grouped: the :data:`TOP_CATEGORIES` largest on the last night
each have a code, every other category shares the last one ("other categories"); so the
page's size does not grow with the number of categories.

Codes rather than labels fill the tables (``n`` days since the first night, ``c`` a
category group, ``s`` a status, ``k`` a change), which keeps the page's data about a third
of its size as text; the page turns them back into labels.

The versions are counted with NumPy over their columns (:class:`Versions`), not through
pandas: a year of nights at a million pets is some 5 million versions, and the report has
two seconds. The rules are those of the history: a version that starts the night another
version of the same pet ends follows it (a change, and a status change if the statuses
differ); any other is an arrival (new, or back); a version that ends with none after it
is a removal. The tests check these numbers against ``load_history(as_of=...)``,
``transitions()`` and the nights' own counts.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    import pyarrow as pa

TOP_CATEGORIES = 8
NO_STATUS = "(none)"
KNOWN_STATUSES = ("available", "pending", "sold")
CHANGES = ("added", "changed", "removed")
FROM_STATUS = "available"
TO_STATUS = "sold"
PIECE = 1 << 19  # rows counted at a time (see _pieces)
COLUMNS = ["id", "name", "categoryId", "status", "valid_from", "valid_to"]


@dataclass(frozen=True)
class Versions:
    """The history's versions as NumPy columns, ordered by pet and then by start.

    ``start`` and ``end`` are days since the first night (``end`` -1 while current);
    ``status`` indexes ``statuses`` (its order: available, pending, sold, any other, none).
    Names are read only for the versions shown (``names(row[...])``): most never are.
    """

    id: np.ndarray
    category: np.ndarray  # categoryId
    status: np.ndarray
    start: np.ndarray
    end: np.ndarray
    names: Callable[[np.ndarray], list[str]]  # the names of rows of the table read
    row: np.ndarray  # version i's row in the table read
    statuses: tuple[str, ...]
    first: dt.date

    def __len__(self) -> int:
        return len(self.id)


@dataclass
class Columns:
    """The versions of tables read one after the other, as NumPy columns in that order.

    Made with room for every row (:meth:`empty`, from the files' footers) and filled a
    table at a time, each into its own rows (:meth:`fill`, so files can be read on
    threads); then :func:`versions_from_columns` sorts them. One allocation a column, and
    no Arrow table kept: at a million pets the report's memory is mostly these columns,
    and every page of memory first touched costs a fault (the system time of a run).

    ``status`` holds each table's own dictionary indices (``len(words)`` where a version
    has none) until :func:`versions_from_columns` maps them to the statuses; ``start``
    and ``end`` are days since the first night (``end`` -1 while current).
    """

    id: np.ndarray
    category: np.ndarray
    status: np.ndarray
    start: np.ndarray
    end: np.ndarray
    words: list[tuple[int, int, tuple[str, ...], bool]]  # per table: rows, words, none seen

    @classmethod
    def empty(cls, rows: int) -> Columns:
        import numpy as np

        return cls(
            id=np.empty(rows, np.int64),
            category=np.empty(rows, np.int64),
            status=np.empty(rows, np.int16),
            start=np.empty(rows, np.int32),
            end=np.empty(rows, np.int32),
            words=[],
        )

    def fill(self, table: pa.Table, at: int, first: dt.date) -> None:
        """Put ``table`` (the history's columns; ``name`` is not read) in rows ``at`` on."""
        import pyarrow as pa
        import pyarrow.compute as pc

        rows = slice(at, at + table.num_rows)
        epoch = (first - dt.date(1970, 1, 1)).days
        _put(self.id[rows], table.column("id"))
        _put(self.category[rows], table.column("categoryId"))
        _put(self.start[rows], table.column("valid_from").cast(pa.int32()), epoch)
        valid_to = table.column("valid_to")
        if valid_to.null_count == len(valid_to):  # the open file: every version current
            self.end[rows] = -1
        else:
            _put(self.end[rows], pc.fill_null(valid_to.cast(pa.int32()), epoch - 1), epoch)
        status = table.column("status")
        if not pa.types.is_dictionary(status.type):
            status = pc.dictionary_encode(status)
        # One array, one dictionary: combining a column's chunks unifies their dictionaries.
        array = status.chunk(0) if status.num_chunks == 1 else status.combine_chunks()
        words = tuple(str(w) for w in array.dictionary.to_pylist())
        codes = array.indices.fill_null(len(words)) if array.null_count else array.indices
        self.status[rows] = codes.to_numpy()
        self.words.append((at, at + table.num_rows, words, array.null_count > 0))


def _put(out: np.ndarray, column: pa.ChunkedArray, less: int = 0) -> None:
    """Copy a column without nulls into ``out``, ``less`` taken off each value (chunk by
    chunk: ``ChunkedArray.to_numpy`` would copy it whole first, and import pandas)."""
    import numpy as np

    at = 0
    for chunk in column.chunks:
        values = chunk.to_numpy()
        np.subtract(values, less, out=out[at : at + len(values)], casting="unsafe")
        at += len(values)


def versions_from_table(
    table: pa.Table, first: dt.date, names: Callable[[np.ndarray], list[str]] | None = None
) -> Versions:
    """:class:`Versions` from a table with the history's columns (:data:`COLUMNS`; ``name``
    may be left out when ``names`` gives the names of rows of the table)."""
    if names is None:
        column = table.column("name")
        names = lambda rows: column.take(rows).to_pylist()  # noqa: E731
    columns = Columns.empty(table.num_rows)
    columns.fill(table, 0, first)
    return versions_from_columns(columns, first, names)


def versions_from_columns(
    columns: Columns, first: dt.date, names: Callable[[np.ndarray], list[str]]
) -> Versions:
    """:class:`Versions` from the filled ``columns`` (``names`` gives the names of their
    rows). ``columns`` is used up: each column is dropped once it is in pet order."""
    import numpy as np

    present = {w for _, _, words, _ in columns.words for w in words}
    if any(none for *_, none in columns.words):
        present.add(NO_STATUS)
    statuses = _status_order(sorted(present))
    for low, high, words, _ in columns.words:
        # Each word's index (and len(words) for none) to its place in ``statuses``.
        codes = [statuses.index(w) if w in statuses else 0 for w in [*words, NO_STATUS]]
        rows = columns.status[low:high]
        rows[:] = np.array(codes, dtype=np.int16)[rows]

    def taken(name: str) -> np.ndarray:
        values: np.ndarray = getattr(columns, name)[order]
        setattr(columns, name, None)  # dropped as soon as ordered
        return values

    order = np.argsort(columns.id, kind="stable")
    ids, start, end = taken("id"), taken("start"), taken("end")
    status, category = taken("status"), taken("category")
    if not in_pet_order(ids, start):
        again = np.lexsort((start, ids))
        order, ids, start, end, status, category = (
            a[again] for a in (order, ids, start, end, status, category)
        )
    return Versions(
        id=ids,
        category=category,
        status=status,
        start=start,
        end=end,
        names=names,
        row=order,
        statuses=tuple(statuses),
        first=first,
    )


def in_pet_order(ids: np.ndarray, start: np.ndarray) -> bool:
    """Whether versions sorted by id have each pet's versions in order of start.

    The history's files come oldest night first, each in id order, and a pet's versions
    close night after night: a stable sort by id alone (merging sorted runs, several times
    quicker than a sort by both keys) puts them in order. A table laid out otherwise is
    sorted again, by both."""
    import numpy as np

    return bool(np.all((ids[1:] != ids[:-1]) | (start[1:] > start[:-1])))


def _status_order(present: list[str]) -> list[str]:
    known = [s for s in KNOWN_STATUSES if s in present]
    rest = sorted(s for s in present if s not in KNOWN_STATUSES and s != NO_STATUS)
    return known + rest + ([NO_STATUS] if NO_STATUS in present else [])


@dataclass(frozen=True)
class Catalogue:
    """The history's versions counted; see the module's docstring for the codes."""

    statuses: tuple[str, ...]  # code s -> label
    categories: tuple[str, ...]  # code c -> label ("12", ..., "other categories")
    category_ids: tuple[int | None, ...]  # code c -> categoryId (None for "other")
    counts: pd.DataFrame  # n, c, s, p: pets valid that night (dense over nights with a snapshot)
    churn: pd.DataFrame  # n, c, s, k, p: versions opened (added, changed) or closed (removed)
    moves: pd.DataFrame  # c, f, t, p: status changes (f, t status codes) over all nights
    sold: pd.DataFrame  # c, d, p: pets sold after d days available


def count_catalogue(v: Versions, nights: list[dt.date]) -> Catalogue:
    """The tables of :class:`Catalogue` from the versions and the nights folded in."""
    import numpy as np

    current = v.end < 0
    ids, sizes = np.unique(v.category[current], return_counts=True)
    ranked = np.lexsort((ids, -sizes))[:TOP_CATEGORIES]  # largest first, then by id
    top = ids[ranked]
    group = np.full(len(v), len(top), dtype=np.int16)
    for code, category in enumerate(top.tolist()):
        group[v.category == category] = code  # a pass a group: no int64 temporaries
    categories = [str(int(c)) for c in top]
    category_ids: list[int | None] = [int(c) for c in top]
    if bool((group == len(top)).any()):
        categories.append("other categories")
        category_ids.append(None)

    night_days = [(night - v.first).days for night in nights]
    shape = (len(categories), len(v.statuses))
    follows = np.zeros(len(v), dtype=bool)  # the same pet's version ending as it starts
    np.equal(v.id[1:], v.id[:-1], out=follows[1:])
    follows[1:] &= v.start[1:] == v.end[:-1]
    followed = np.zeros(len(v), dtype=bool)
    followed[:-1] = follows[1:]
    change, since = _changes(v, follows)
    return Catalogue(
        statuses=v.statuses,
        categories=tuple(categories),
        category_ids=tuple(category_ids),
        counts=_counts(v, group, night_days, shape),
        churn=_churn(v, group, follows, followed, shape),
        moves=_moves(v, group, change, shape),
        sold=_sold(v, group, change, since),
    )


def _frame(columns: list[str], values: list[np.ndarray]) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame(
        {c: pd.Series(a, dtype="int64") for c, a in zip(columns, values, strict=True)}
    )


def _pieces(rows: int) -> Iterator[slice]:
    """Slices of :data:`PIECE` rows: the keys counted are made a piece at a time, so their
    temporaries (int64, as ``bincount`` wants them) are a few MB reused, not 36 MB each
    of fresh memory at 4.6M versions."""
    return (slice(at, min(at + PIECE, rows)) for at in range(0, rows, PIECE))


def _counts(
    v: Versions, group: np.ndarray, night_days: list[int], shape: tuple[int, int]
) -> pd.DataFrame:
    """Pets valid on each night: +1 where a version starts, -1 where it ends, summed up.

    Versions start and end only on nights with a snapshot, so the running sum over the
    days is exact on those nights (what ``load_history(as_of=night)`` counts)."""
    import numpy as np

    if not night_days:
        return _frame(["n", "c", "s", "p"], [np.zeros(0)] * 4)
    cells = shape[0] * shape[1]
    days = night_days[-1] + 1
    opened = np.zeros(days * cells, dtype=np.int64)
    closed = np.zeros(days * cells, dtype=np.int64)
    for rows in _pieces(len(v)):
        key = group[rows].astype(np.intp) * shape[1] + v.status[rows]
        opened += np.bincount(v.start[rows] * cells + key, minlength=days * cells)
        ended = v.end[rows] >= 0
        closed += np.bincount(v.end[rows][ended] * cells + key[ended], minlength=days * cells)
    running: np.ndarray = np.cumsum((opened - closed).reshape(days, *shape), axis=0)[night_days]
    grid: np.ndarray = np.indices(running.shape)
    used = (running != 0).any(axis=0)  # a category and status seen on some night
    keep = np.broadcast_to(used, running.shape)
    nights: np.ndarray = np.take(np.asarray(night_days), grid[0])
    columns = [nights[keep], grid[1][keep], grid[2][keep], running[keep]]
    return _frame(["n", "c", "s", "p"], columns)


def _churn(
    v: Versions,
    group: np.ndarray,
    follows: np.ndarray,
    followed: np.ndarray,
    shape: tuple[int, int],
) -> pd.DataFrame:
    import numpy as np

    if not len(v):
        return _frame(["n", "c", "s", "k", "p"], [np.zeros(0)] * 5)
    cells = shape[0] * shape[1]
    size = (int(max(v.start.max(), v.end.max())) + 1) * cells * 3
    # Opened (k 0 added, 1 changed) where a version starts; removed (k 2) where one ends
    # with none after it. The key space is small: days x groups x statuses x 3.
    counted = np.zeros(size, dtype=np.int64)
    for rows in _pieces(len(v)):
        cell = group[rows].astype(np.intp) * shape[1] + v.status[rows]  # group and status
        counted += np.bincount((v.start[rows] * cells + cell) * 3 + follows[rows], minlength=size)
        removed = (v.end[rows] >= 0) & ~followed[rows]
        key = (v.end[rows][removed] * cells + cell[removed]) * 3 + 2
        counted += np.bincount(key, minlength=size)
    found = np.flatnonzero(counted)
    pets = counted[found]
    rest, k = np.divmod(found, 3)
    rest, s = np.divmod(rest, shape[1])
    n, c = np.divmod(rest, shape[0])
    return _frame(["n", "c", "s", "k", "p"], [n, c, s, k, pets])


def _changes(v: Versions, follows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The status changes (a version following one of another status) and, for each
    version, the first night of its run of the same status (across renames)."""
    import numpy as np

    same_status = np.zeros(len(v), dtype=bool)
    np.equal(v.status[1:], v.status[:-1], out=same_status[1:])
    # Each version's run's first row: its own index where a run starts, carried forward.
    first = np.arange(len(v), dtype=np.int32 if len(v) < 2**31 else np.int64)
    first[follows & same_status] = 0
    np.maximum.accumulate(first, out=first)
    since = v.start[first]
    same_status &= follows
    return follows ^ same_status, since


def _moves(
    v: Versions, group: np.ndarray, change: np.ndarray, shape: tuple[int, int]
) -> pd.DataFrame:
    import numpy as np

    at = np.flatnonzero(change)
    key = (group[at].astype(np.int64) * shape[1] + v.status[at - 1]) * shape[1] + v.status[at]
    counted = np.bincount(key, minlength=1)
    found = np.flatnonzero(counted)
    pets = counted[found]
    rest, t = np.divmod(found, shape[1])
    c, f = np.divmod(rest, shape[1])
    return _frame(["c", "f", "t", "p"], [c, f, t, pets])


def _sold(v: Versions, group: np.ndarray, change: np.ndarray, since: np.ndarray) -> pd.DataFrame:
    import numpy as np

    if FROM_STATUS not in v.statuses or TO_STATUS not in v.statuses:
        return _frame(["c", "d", "p"], [np.zeros(0)] * 3)
    at = np.flatnonzero(change)
    at = at[
        (v.status[at - 1] == v.statuses.index(FROM_STATUS))
        & (v.status[at] == v.statuses.index(TO_STATUS))
    ]
    days = v.start[at] - since[at - 1]
    span = int(days.max()) + 1 if len(days) else 1
    counted = np.bincount(group[at].astype(np.int64) * span + days, minlength=1)
    found = np.flatnonzero(counted)
    pets = counted[found]
    c, d = np.divmod(found, span)
    return _frame(["c", "d", "p"], [c, d, pets])
