"""Reading the history: the whole table, the catalogue on a date, the status transitions."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import TYPE_CHECKING

from petsync.core.errors import InputError
from petsync.history.table import HistoryFiles, HistoryState

if TYPE_CHECKING:
    import pandas as pd


def read_history_state(directory: Path | str) -> HistoryState:
    """The state of the history under ``directory`` (the export's --out); InputError if none."""
    return _read_state(HistoryFiles.open(directory))


def _read_state(files: HistoryFiles) -> HistoryState:
    state = files.read_state()
    if state is None:
        raise InputError(
            f"no history at {files.shown()}; `petsync history {files.location.uri}` builds it "
            "from the snapshots"
        )
    return state


def load_history(directory: Path | str, as_of: str | dt.date | None = None) -> pd.DataFrame:
    """The history under ``directory`` (the export's --out: a path or a URI) as a DataFrame.

    Without ``as_of``: every version, one row each, ordered by ``id`` and ``valid_from``:
    ``id``, ``name``, ``categoryId``, ``status``, ``hash``, ``valid_from``, ``valid_to``
    (dates as ``datetime64[ns]``, ``valid_to`` NaT while current). With ``as_of`` (a date):
    the catalogue as it stood that day, from the history alone: the versions valid then,
    with the columns of :func:`petsync.load_snapshot`. ``frame.attrs["last_night"]`` is the
    history's last night.

    >>> versions = load_history("petsync-demo")                      # doctest: +SKIP
    >>> catalogue = load_history("petsync-demo", as_of="2026-11-22")  # doctest: +SKIP
    >>> versions = load_history("s3://archive/petsync")              # doctest: +SKIP
    """
    import pandas as pd
    import pyarrow.compute as pc

    from petsync.formats.schema import status_categories

    files = HistoryFiles.open(directory)
    state = _read_state(files)
    table = files.read_files(state.files)
    day: dt.date | None = None
    if as_of is not None:
        day = _as_date(as_of)
        first = state.nights[0].date if state.nights else None
        if first is None or day < first:
            raise InputError(
                f"the history under {directory} starts on {first or 'no night yet'}; "
                f"as_of={day} is before it"
            )
        valid = pc.and_(
            pc.less_equal(table.column("valid_from"), day),
            pc.fill_null(pc.greater(table.column("valid_to"), day), True),
        )
        table = table.filter(valid).select(["id", "name", "categoryId", "status"])
    table = table.sort_by([("id", "ascending")] + ([] if day else [("valid_from", "ascending")]))
    frame: pd.DataFrame = table.to_pandas()
    frame["id"] = frame["id"].astype("Int64")
    frame["categoryId"] = frame["categoryId"].astype("Int64")
    frame["name"] = frame["name"].astype("string")
    frame["status"] = pd.Categorical(
        frame["status"], categories=status_categories(frame["status"].dropna().unique())
    )
    for column in ("valid_from", "valid_to"):
        if column in frame:
            frame[column] = pd.to_datetime(frame[column]).astype("datetime64[ns]")
    frame.attrs["last_night"] = state.last_date.isoformat() if state.last_date else None
    if day is not None:
        frame.attrs["as_of"] = day.isoformat()
    return frame


def transitions(history: pd.DataFrame) -> pd.DataFrame:
    """One row per change of a pet's status, with the days it spent in the previous status.

    ``history`` is :func:`load_history`'s whole table. A change is two versions of one pet,
    the second starting the day the first ended, whose statuses differ (null counts as a
    status). Columns: ``id``, ``name`` (after the change), ``from_status``, ``to_status``,
    ``since`` (the first night of the previous status, across renames), ``changed_on`` and
    ``days`` (``changed_on - since``). A pet that left and came back starts afresh: its
    return is not a change, and its ``since`` is the night it came back.

    >>> moves = transitions(load_history("petsync-demo"))            # doctest: +SKIP
    >>> moves[(moves.from_status == "available") & (moves.to_status == "sold")].days.median()
    ... # doctest: +SKIP
    """
    import pandas as pd

    frame = history.sort_values(["id", "valid_from"], kind="stable").reset_index(drop=True)
    status = frame["status"].astype("string").fillna("\0none")
    same_pet = frame["id"].eq(frame["id"].shift()).fillna(False).astype(bool)
    contiguous = same_pet & frame["valid_from"].eq(frame["valid_to"].shift()).fillna(False)
    contiguous = contiguous.astype(bool)
    same_status = status.eq(status.shift()).fillna(False).astype(bool)
    run_start = ~(contiguous & same_status)
    since = frame["valid_from"].where(run_start).ffill()
    change = contiguous & ~same_status
    previous_status = frame["status"].astype("string").shift()
    previous_since = since.shift()
    out = pd.DataFrame(
        {
            "id": frame["id"][change],
            "name": frame["name"][change],
            "from_status": previous_status[change],
            "to_status": frame["status"].astype("string")[change],
            "since": previous_since[change],
            "changed_on": frame["valid_from"][change],
        }
    )
    out["days"] = (out["changed_on"] - out["since"]).dt.days.astype("Int64")
    return out.sort_values(["changed_on", "id"], kind="stable").reset_index(drop=True)


def load_transitions(directory: Path | str) -> pd.DataFrame:
    """:func:`transitions` of the history under ``directory``."""
    return transitions(load_history(directory))


def _as_date(value: str | dt.date) -> dt.date:
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    try:
        return dt.date.fromisoformat(str(value))
    except ValueError as exc:
        raise InputError(f"as_of must be a date (YYYY-MM-DD), got {value!r}") from exc
