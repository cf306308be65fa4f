"""Reading snapshots: listing, resolving and loading them, whatever format wrote them.

Every function here takes a local directory or an object-store URI
(:mod:`petsync.storage.location`) and asks the registry (:mod:`petsync.formats.registry`)
which format the place holds, or which wrote a night: dated folders
(:mod:`petsync.formats.folders`, whose partitions are :mod:`petsync.storage.partitions`),
a Delta or an Iceberg table. A flagged snapshot loads only when asked, with a
:class:`FlaggedSnapshotWarning`.
"""

from __future__ import annotations

import datetime as dt
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from petsync.core.errors import InputError
from petsync.core.interface import CLOCK_TOLERANCE
from petsync.core.settings_table import DIFF_DIR, OUT, TABLE_FORMAT
from petsync.core.wording import Placeholder
from petsync.formats.registry import format_of, format_of_manifest
from petsync.storage.layout import (
    DATA_NAMES,
    MANIFEST_NAME,
    PARQUET_NAME,
    PARTITION_KEY,
    PETS_DIR,
    SnapshotInfo,
    partition_date,
    partition_name,
)
from petsync.storage.location import Location, parse_location
from petsync.storage.partitions import Partitions

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa


class FlaggedSnapshotWarning(UserWarning):
    """A snapshot not to be trusted blindly was loaded: incomplete, or a suspicious drop."""


def _location(directory: Path | str) -> Location:
    """The place ``directory`` names (a local path or a URI)."""
    return parse_location(directory, what="directory")


def list_snapshots(directory: Path | str) -> list[SnapshotInfo]:
    """Every published snapshot under ``directory`` (a path or a URI), oldest first.

    A partition without a readable manifest, or whose data another run wrote than its
    manifest says, is not a published snapshot and is skipped.

    >>> [(s.date.isoformat(), s.complete, s.pets) for s in list_snapshots("out")]  # doctest: +SKIP
    [('2026-11-21', True, 10000), ('2026-11-22', True, 10012)]
    >>> list_snapshots("s3://archive/petsync")[-1].path                    # doctest: +SKIP
    's3://archive/petsync/pets/snapshot_date=2026-11-22'
    """
    location = _location(directory)
    return format_of(location).list_nights(location)


def latest_snapshot(
    directory: Path | str, *, complete_only: bool = True, before: dt.date | None = None
) -> SnapshotInfo | None:
    """The newest snapshot (the newest complete one unless ``complete_only`` is False).

    Only snapshots dated before ``before`` count; by default, those not dated in the
    future (after today's UTC date, with :data:`~petsync.core.interface.CLOCK_TOLERANCE`
    of slack): a snapshot a run with a wrong clock dated ahead is never "the latest".
    """
    before = future_horizon() if before is None else before
    snapshots = [
        s
        for s in list_snapshots(directory)
        if (s.complete or not complete_only) and s.date < before
    ]
    return snapshots[-1] if snapshots else None


def future_horizon() -> dt.date:
    """The first date a snapshot counts as dated in the future (a clock that ran ahead):
    such a night is never "the latest", nor folded into the history."""
    slack = dt.timedelta(seconds=CLOCK_TOLERANCE)
    return (dt.datetime.now(dt.UTC) + slack).date() + dt.timedelta(days=1)


def find_snapshot(
    ref: str | Path | dt.date, *, directory: Path | str | None = None
) -> SnapshotInfo:
    """Resolve a snapshot reference: a date (``2026-11-22``) under ``directory``, or a path.

    A path (or URI) may be a partition directory or the ``pets.parquet`` inside one.
    Raises :class:`InputError` naming what was looked for.
    """
    if isinstance(ref, dt.date):
        date: dt.date | None = ref
    else:
        try:
            date = dt.date.fromisoformat(str(ref))
        except ValueError:
            date = None
    if date is not None:
        store = Partitions.open(directory if directory is not None else Path("."), DIFF_DIR)
        kind = format_of(store.location)
        if kind.reads_whole:  # a table: its nights are rows of one table
            match = [s for s in kind.list_nights(store.location) if s.date == date]
            if not match:
                raise _not_a_snapshot(f"{store.shown(PETS_DIR)} ({PARTITION_KEY}={date})")
            return match[0]
        info = store.info(date)
        if info is None:
            raise _not_a_snapshot(str(store.shown(*partition_name(date))))
        return info
    location = parse_location(ref if isinstance(ref, Path) else str(ref), what="snapshot")
    if location.local is not None:
        path = location.local.parent if location.local.is_file() else location.local
        location = parse_location(path)
    elif location.prefix.split("/")[-1] in DATA_NAMES:
        location = parse_location(location.uri.rsplit("/", 1)[0], what="snapshot")
    name = location.local.name if location.local is not None else location.uri.rsplit("/", 1)[-1]
    partition = partition_date(name)
    store = Partitions.open(location)
    found = (
        store.partition_info(location.store_path, store.shown(), partition)
        if partition is not None
        else None
    )
    if found is None:
        raise _not_a_snapshot(str(store.shown()))
    return found


def _not_a_snapshot(path: str) -> InputError:
    return InputError(
        f"no petsync snapshot at {path} (expected a {PARTITION_KEY}=YYYY-MM-DD directory "
        f"holding {MANIFEST_NAME} and {PARQUET_NAME} of the same run); an export with "
        + OUT.given(Placeholder("DIR"))
        + " writes them under DIR/pets"
    )


def read_table(info: SnapshotInfo, *, known_only: bool = False) -> pa.Table:
    """The pets of one snapshot as an Arrow table with the snapshot schema, ordered by id.

    ``known_only`` reads only the snapshot schema's columns, not the extra fields a
    snapshot kept (``--extra-fields keep``).

    The file holds rows in the order they were fetched; sorting here gives notebooks and
    diffs a stable order. The file is read whole in one request, and its footer must name
    the manifest's run: a snapshot replaced while it was read is an error, never a mix. A
    night of a table is read through its library, as of the version that committed it.
    """
    return format_of_manifest(info.manifest).read_night(info, known_only=known_only)


def load_snapshot(
    directory: Path | str,
    date: str | dt.date | None = None,
    *,
    version: int | None = None,
    flagged: bool = False,
) -> pd.DataFrame:
    """Load one snapshot as a pandas DataFrame with exact dtypes.

    ``directory`` is the export's ``--out``: a local path or a URI (``s3://bucket/prefix``,
    ``gs://...``, ``abfs://...``), read with the store's standard credentials. By default
    the latest *trusted* snapshot: complete, and no suspicious drop (what the export exits
    0 for). Pass ``date`` for a given day: a flagged one (exit 4) loads with a
    :class:`FlaggedSnapshotWarning` saying why. ``flagged=True`` asks for flagged snapshots:
    the latest of any kind by default, and no warning. Columns: ``id`` and ``categoryId``
    nullable ``Int64`` (exact int64, never float), ``name`` ``string``, ``status``
    categorical over ``available``, ``pending``, ``sold`` plus any unknown value the API
    sent (null when it sent none). ``frame.attrs`` holds ``snapshot_date``, ``trusted`` and
    the ``manifest``. For a Delta table (``--table-format delta``) ``version`` loads the
    snapshot a table version committed (time travel); the manifest then comes from that
    commit's metadata.

    >>> frame = load_snapshot("petsync-demo")                        # doctest: +SKIP
    >>> frame = load_snapshot("s3://archive/petsync", version=12)    # doctest: +SKIP
    >>> frame = load_snapshot("s3://archive/petsync", "2026-11-22")  # doctest: +SKIP
    >>> frame = load_snapshot("petsync-demo", flagged=True)          # doctest: +SKIP
    >>> frame.status.value_counts()                                  # doctest: +SKIP
    """
    from petsync.formats.schema import to_dataframe

    info: SnapshotInfo | None
    if version is not None:
        store = Partitions.open(directory)
        info = format_of(store.location).night_at_version(store.location, version)
        if info is None:
            raise InputError(
                f"version= reads a Delta table; {store.shown(PETS_DIR)} holds none "
                "(export with " + TABLE_FORMAT.given("delta") + ")"
            )
    elif date is None:
        horizon = future_horizon()  # never "the latest": a night dated ahead by a wrong clock
        found = [
            s for s in list_snapshots(directory) if (flagged or s.trusted) and s.date < horizon
        ]
        info = found[-1] if found else None
        if info is None:
            root = Partitions.open(directory).shown(PETS_DIR)
            raise InputError(
                f"no {'' if flagged else 'trusted '}snapshot under {root}; run an export with "
                + OUT.given(str(directory))
                + " first"
                + ("" if flagged else ", or pass flagged=True to load a flagged one")
            )
    else:
        info = find_snapshot(date if isinstance(date, dt.date) else str(date), directory=directory)
    assert info is not None
    if not info.trusted and not flagged:
        warnings.warn(
            FlaggedSnapshotWarning(
                f"the snapshot of {info.date} is flagged, not to be trusted blindly: "
                + "; ".join(info.flag_reasons)
                + " (load_snapshot(..., flagged=True) loads it without this warning)"
            ),
            stacklevel=2,
        )
    frame = to_dataframe(read_table(info))
    frame.attrs["snapshot_date"] = info.date.isoformat()
    frame.attrs["trusted"] = info.trusted
    frame.attrs["manifest"] = info.manifest
    return frame


def load_snapshots(
    directory: Path | str,
    dates: list[str | dt.date] | None = None,
    *,
    complete_only: bool = True,
) -> pd.DataFrame:
    """Several snapshots as one DataFrame: ``snapshot_date`` first, then the union of columns.

    Every trusted snapshot under ``directory`` by default (complete, no flagged drop; every
    one with ``complete_only=False``), or the given ``dates``, oldest first. Each night keeps
    its own schema, so a field kept as a column (``--extra-fields keep``) from some night on is null
    in the nights before it. Dtypes are those of :func:`load_snapshot`; ``snapshot_date`` is
    a date (``datetime64[ns]``, midnight), so ``frame[frame.snapshot_date >= "2026-11-22"]``
    compares dates. Raises :class:`InputError` when a field's column type differs
    between two nights.

    >>> frame = load_snapshots("petsync-demo")                          # doctest: +SKIP
    >>> frame.groupby("snapshot_date").tag.count()                      # doctest: +SKIP
    """
    import pyarrow as pa

    from petsync.formats.schema import to_dataframe

    if dates is None:
        # Trusted, as load_snapshot() and the other readers take them: a complete night
        # with a flagged drop is no more to be read blindly than an incomplete one.
        infos = [s for s in list_snapshots(directory) if s.trusted or not complete_only]
    else:
        infos = [
            find_snapshot(d if isinstance(d, dt.date) else str(d), directory=directory)
            for d in dates
        ]
    if not infos:
        root = Partitions.open(directory).shown(PETS_DIR)
        raise InputError(
            f"no snapshot under {root}; run an export with " + OUT.given(str(directory)) + " first"
        )
    tables = [read_table(info) for info in sorted(infos, key=lambda i: i.date)]
    try:
        table = pa.concat_tables(tables, promote_options="default")
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise InputError(
            f"the snapshots under {directory} disagree on a column's type ({exc}); load "
            "them one by one with load_snapshot()"
        ) from exc
    frame = to_dataframe(table)
    nights = [info.date.isoformat() for info in sorted(infos, key=lambda i: i.date)]
    counts = [t.num_rows for t in tables]
    frame.insert(0, PARTITION_KEY, _dates_column(nights, counts))
    return frame


def _dates_column(nights: list[str], counts: list[int]) -> pd.Series:
    """One date per row (``datetime64[ns]``, as ``load_history``'s dates): each night
    repeated as many times as it has pets."""
    import numpy as np
    import pandas as pd

    days = np.repeat(np.array(nights, dtype="datetime64[D]"), counts)
    return pd.Series(days.astype("datetime64[ns]"))
