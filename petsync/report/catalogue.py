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
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

TOP_CATEGORIES = 8
NO_STATUS = "(none)"
KNOWN_STATUSES = ("available", "pending", "sold")
CHANGES = ("added", "changed", "removed")
FROM_STATUS = "available"
TO_STATUS = "sold"


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


def day_numbers(dates: pd.Series, first: dt.date) -> pd.Series:
    """Days since ``first`` for datetime64 ``dates`` (NaT stays missing), as Int64."""
    import pandas as pd

    days = (dates - pd.Timestamp(first)).dt.days
    return days.astype("Int64")


def count_catalogue(
    versions: pd.DataFrame, moves: pd.DataFrame, nights: list[dt.date]
) -> Catalogue:
    """The tables of :class:`Catalogue` from :func:`~petsync.history.load.load_history`'s
    whole table, its :func:`~petsync.history.load.transitions`, and the nights folded in."""
    import pandas as pd

    first = nights[0] if nights else dt.date(1970, 1, 1)
    status_text = versions["status"].astype("string").fillna(NO_STATUS)
    statuses = _status_order(status_text.unique().tolist())
    status_code = {label: code for code, label in enumerate(statuses)}
    current = versions["valid_to"].isna()
    largest = versions.loc[current, "categoryId"].value_counts(sort=True)
    largest = largest.sort_index(kind="stable").sort_values(ascending=False, kind="stable")
    top = [int(c) for c in largest.index[:TOP_CATEGORIES]]
    group = {category: code for code, category in enumerate(top)}
    category = versions["categoryId"].map(group).fillna(len(top)).astype("int64")
    categories = [str(c) for c in top]
    category_ids: list[int | None] = list(top)
    if bool((category == len(top)).any()):
        categories.append("other categories")
        category_ids.append(None)

    frame = pd.DataFrame(
        {
            "id": versions["id"].astype("int64"),
            "c": category,
            "s": status_text.map(status_code).astype("int64"),
            "start": day_numbers(versions["valid_from"], first),
            "end": day_numbers(versions["valid_to"], first),
        }
    )
    night_days = [(night - first).days for night in nights]
    return Catalogue(
        statuses=tuple(statuses),
        categories=tuple(categories),
        category_ids=tuple(category_ids),
        counts=_counts(frame, night_days),
        churn=_churn(frame),
        moves=_moves(versions, moves, category, status_code),
        sold=_sold(versions, moves, category),
    )


def _status_order(present: list[str]) -> list[str]:
    known = [s for s in KNOWN_STATUSES if s in present]
    rest = sorted(s for s in present if s not in KNOWN_STATUSES and s != NO_STATUS)
    return known + rest + ([NO_STATUS] if NO_STATUS in present else [])


def _counts(frame: pd.DataFrame, night_days: list[int]) -> pd.DataFrame:
    """Pets valid on each night: +1 where a version starts, -1 where it ends, summed up.

    Versions start and end only on nights with a snapshot, so the running sum over those
    nights is exact (what ``load_history(as_of=night)`` counts)."""
    import pandas as pd

    columns = ["n", "c", "s", "p"]
    if not night_days or frame.empty:
        return pd.DataFrame({c: pd.Series([], dtype="int64") for c in columns})
    starts = frame[["start", "c", "s"]].rename(columns={"start": "n"}).assign(p=1)
    ended = frame[frame["end"].notna()]
    ends = ended[["end", "c", "s"]].rename(columns={"end": "n"}).assign(p=-1)
    events = pd.concat([starts, ends], ignore_index=True).astype("int64")
    deltas = events.groupby(["n", "c", "s"])["p"].sum()
    wide = deltas.unstack(["c", "s"], fill_value=0).reindex(night_days, fill_value=0).cumsum()
    wide.index.name = "n"
    long = wide.melt(ignore_index=False, value_name="p").reset_index()
    return long[columns].astype("int64").sort_values(["n", "c", "s"]).reset_index(drop=True)


def _churn(frame: pd.DataFrame) -> pd.DataFrame:
    """Added (a version with no version just before it: new, or back), changed (one that
    follows another of the same pet), removed (one closed with none after it)."""
    import pandas as pd

    columns = ["n", "c", "s", "k", "p"]
    ordered = frame.sort_values(["id", "start"], kind="stable")
    same_pet_before = ordered["id"].eq(ordered["id"].shift())
    follows = (same_pet_before & ordered["start"].eq(ordered["end"].shift())).fillna(False)
    same_pet_after = ordered["id"].eq(ordered["id"].shift(-1))
    followed = (same_pet_after & ordered["end"].eq(ordered["start"].shift(-1))).fillna(False)
    opened = ordered[["start", "c", "s"]].rename(columns={"start": "n"})
    opened = opened.assign(k=follows.astype("int64"))  # 0 added, 1 changed
    removed = ordered[ordered["end"].notna() & ~followed.astype(bool)]
    closed = removed[["end", "c", "s"]].rename(columns={"end": "n"}).assign(k=2)
    events = pd.concat([opened, closed], ignore_index=True).astype("int64")
    if events.empty:
        return pd.DataFrame({c: pd.Series([], dtype="int64") for c in columns})
    table = events.groupby(["n", "c", "s", "k"]).size().rename("p").reset_index()
    return table[columns].astype("int64")


def _with_category(
    versions: pd.DataFrame, moves: pd.DataFrame, category: pd.Series
) -> pd.DataFrame:
    """Each status change with the category group of the version it opened."""
    keys = versions[["id", "valid_from"]].assign(c=category.to_numpy())
    return moves.merge(
        keys, left_on=["id", "changed_on"], right_on=["id", "valid_from"], how="left"
    )


def _moves(
    versions: pd.DataFrame, moves: pd.DataFrame, category: pd.Series, code: dict[str, int]
) -> pd.DataFrame:
    import pandas as pd

    columns = ["c", "f", "t", "p"]
    if moves.empty:
        return pd.DataFrame({c: pd.Series([], dtype="int64") for c in columns})
    joined = _with_category(versions, moves, category)
    joined["f"] = joined["from_status"].astype("string").fillna(NO_STATUS).map(code)
    joined["t"] = joined["to_status"].astype("string").fillna(NO_STATUS).map(code)
    table = joined.groupby(["c", "f", "t"]).size().rename("p").reset_index()
    return table[columns].astype("int64")


def _sold(versions: pd.DataFrame, moves: pd.DataFrame, category: pd.Series) -> pd.DataFrame:
    import pandas as pd

    columns = ["c", "d", "p"]
    chosen = moves[(moves["from_status"] == FROM_STATUS) & (moves["to_status"] == TO_STATUS)]
    if chosen.empty:
        return pd.DataFrame({c: pd.Series([], dtype="int64") for c in columns})
    joined = _with_category(versions, chosen, category).rename(columns={"days": "d"})
    table = joined.groupby(["c", "d"]).size().rename("p").reset_index()
    return table[columns].astype("int64")
