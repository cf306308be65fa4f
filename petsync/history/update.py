"""Keeping the history up to date: fold the snapshots newer than its last night.

:func:`update_history` reads only the snapshots newer than the table's last night, in date
order, and writes what they changed; folding every snapshot from scratch (``rebuild``)
gives the same table, and running it again with nothing new changes nothing. A snapshot
dated on or before the last night that the history did not take in (one exported late, or
a night exported again) is refused: the history would need rewriting from that night on,
which ``--rebuild`` does from the snapshots still kept.

The snapshots and the history may be local or on an object store (``s3://``, ``gs://``,
``abfs://``): the snapshots are read through :mod:`petsync.formats.snapshots`, the history's
files through ``pyarrow.fs`` (:class:`petsync.history.table.HistoryFiles`). One update at a
time: locally a lock file beside the snapshots, on an object store a lock object in the
history's folder created only if absent (:class:`petsync.storage.lock.ObjectLock`).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from petsync.core.errors import InputError
from petsync.core.settings_table import HISTORY_COMMAND, OUT, REBUILD
from petsync.formats.snapshots import future_horizon, list_snapshots
from petsync.history.fold import fold_night
from petsync.history.night_batches import night_pieces
from petsync.history.read_ahead import read_ahead
from petsync.history.status_codes import StatusCodes
from petsync.history.table import (
    HISTORY_DIR,
    LOCK_OBJECT_NAME,
    STATE_NAME,
    HistoryFiles,
    HistoryState,
    Night,
    closed_name,
    empty_history,
    open_name,
)
from petsync.storage.layout import PETS_DIR, SnapshotInfo
from petsync.storage.location import Location, parse_location
from petsync.storage.lock import FileLock, Lock
from petsync.storage.store import object_lock

LOCK_NAME = ".history.lock"

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class HistoryReport:
    """What an update did: the nights it folded in and the table after it.

    ``nights`` are the nights this run folded in (none when the table was up to date);
    ``versions`` counts the table's rows after the run, ``current`` its open versions.
    ``path`` is the history's folder: a :class:`Path` locally, else its URI.
    """

    path: Path | str
    rebuilt: bool
    nights: tuple[Night, ...]
    versions: int
    current: int
    last_date: dt.date | None
    up_to_date: tuple[dt.date, ...] = field(default=())

    @property
    def opened(self) -> int:
        return sum(n.opened for n in self.nights)

    @property
    def closed(self) -> int:
        return sum(n.closed for n in self.nights)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "rebuilt": self.rebuilt,
            "nights": [n.to_json() for n in self.nights],
            "versions": self.versions,
            "current": self.current,
            "opened": self.opened,
            "closed": self.closed,
            "last_date": self.last_date.isoformat() if self.last_date else None,
        }


def drop_flagged(info: SnapshotInfo) -> bool:
    """The manifest's drop check flagged the night (the pet count fell too far)."""
    drop = info.manifest.get("drop_check")
    return isinstance(drop, dict) and drop.get("flagged") is True


def is_trusted(info: SnapshotInfo) -> bool:
    """The export's exit 0: complete and without a suspicious drop."""
    return info.complete and not drop_flagged(info)


def update_history(directory: Path | str, *, rebuild: bool = False) -> HistoryReport:
    """Fold the snapshots under ``directory`` (the export's --out) into ``DIR/history``.

    ``directory`` is a local path or an object-store URI (``s3://bucket/prefix``), read
    and written with the store's standard credentials. Incremental by default: only
    snapshots newer than the history's last night are read. ``rebuild`` folds every
    snapshot kept from scratch into new files that replace the old table in one step.
    Raises :class:`InputError` (exit 2) for a snapshot older than the last night that the
    history lacks, and :class:`LockedError` (exit 75) while another update runs.

    >>> report = update_history("/srv/petsync")                   # doctest: +SKIP
    >>> report = update_history("s3://archive/petsync")           # doctest: +SKIP
    >>> [(n.date, n.added, n.changed, n.removed) for n in report.nights]  # doctest: +SKIP
    """
    location = parse_location(directory, what="directory")
    files = HistoryFiles.open(location)
    pets = files.filesystem.get_file_info(location.store_child(PETS_DIR))
    if pets.type != pafs.FileType.Directory:
        raise InputError(
            f"no snapshots under {location.child(PETS_DIR)}; an export with "
            + OUT.given(location.uri)
            + " writes them"
        )
    with _history_lock(location) as lock:
        if location.local is not None:
            # Folders a killed rebuild of an earlier petsync staged beside the history
            # (``.history-new-*``): no state names them.
            for stray in location.local.glob(f".{HISTORY_DIR}-*-*"):
                shutil.rmtree(stray, ignore_errors=True)
        files.prepare()
        snapshots = _up_to_now(
            list_snapshots(location.local if location.local is not None else location.uri)
        )
        state = None if rebuild else files.read_state()
        if state is None:  # from scratch: new names, past every file in the folder
            base = HistoryState(
                nights=(), open_file=None, closed_files=(), generation=files.last_generation()
            )
            todo = snapshots
        else:
            _remove_strays(files, state)
            base, todo = state, _new_nights(state, snapshots, location)
            if not todo:
                return _report(files, state, (), rebuilt=False)
        new_state, nights = _fold(files, base, todo)
        lock.confirm()  # still ours (an object store's lock may have expired): commit
        files.write_state(new_state)
        _remove_strays(files, new_state)
        return _report(files, new_state, tuple(nights), rebuilt=state is None)


def _history_lock(location: Location) -> Lock:
    """The history's lock; its ``confirm`` runs right before the state is written."""
    if location.local is None:
        # The export's lock object, but in the history's folder: its own lock, same rules.
        return object_lock(parse_location(location.child(HISTORY_DIR)))
    path = location.local / LOCK_NAME
    # Never through a link planted at the name, never blocked by a FIFO there (exit 2).
    return FileLock(
        path,
        what="history lock file",
        busy=f"another history update holds {path}; this one is skipped",
    )


def _up_to_now(snapshots: list[SnapshotInfo]) -> list[SnapshotInfo]:
    """The snapshots not dated ahead. A night a wrong clock dated in the future would be the
    history's last night and make every real night after it "older": it waits, named in a
    warning, until its date comes (or someone deletes it)."""
    horizon = future_horizon()
    ahead = [info.date.isoformat() for info in snapshots if info.date >= horizon]
    if ahead:
        logger.warning(
            "history.snapshots_dated_ahead",
            extra={"fields": {"dates": ahead, "reason": "dated after today: not folded in"}},
        )
    return [info for info in snapshots if info.date < horizon]


def _new_nights(
    state: HistoryState, snapshots: list[SnapshotInfo], location: Location
) -> list[SnapshotInfo]:
    last = state.last_date
    if last is None:
        return snapshots
    taken = {n.date: n.run_id for n in state.nights}
    for info in snapshots:
        if info.date > last:
            continue
        if info.date not in taken:
            raise InputError(
                f"the snapshot of {info.date} is older than the history's last night "
                f"({last}) and not in it; rebuild the history from the snapshots kept with "
                + HISTORY_COMMAND.run(location.uri, REBUILD.given(True))
            )
        if taken[info.date] != info.run_id:
            raise InputError(
                f"the snapshot of {info.date} was exported again after the history took it "
                "in; rebuild the history with "
                + HISTORY_COMMAND.run(location.uri, REBUILD.given(True))
            )
    return [info for info in snapshots if info.date > last]


def _fold(
    files: HistoryFiles, state: HistoryState, snapshots: list[SnapshotInfo]
) -> tuple[HistoryState, list[Night]]:
    """Fold ``snapshots`` into the table ``state`` names; return its new state.

    Each night reads its snapshot and the open file the night before wrote, both in id
    order, and writes the next open file, a piece at a time: memory holds a few pieces,
    however many pets and nights there are.
    """
    nights: list[Night] = []
    closed_files = list(state.closed_files)
    open_file, generation = state.open_file, state.generation
    statuses = StatusCodes()  # one code per status, in every piece of every night
    for info in snapshots:
        generation += 1
        with contextlib.ExitStack() as stack:
            # Three threads besides this one: the night's pets and the open versions read
            # ahead, the new open versions encoded, while this one compares.
            night = stack.enter_context(night_pieces(info, statuses))
            pets = stack.enter_context(read_ahead(night, "night"))
            versions = stack.enter_context(
                read_ahead(
                    files.open_pieces(open_file, statuses) if open_file else iter(()), "open"
                )
            )
            write = stack.enter_context(files.open_writer(open_name(generation)))
            folded = fold_night(
                versions,
                pets,
                write,
                date=info.date,
                trusted=is_trusted(info),
                run_id=info.run_id,
                complete=info.complete,
                quarantined=int(info.manifest.get("quarantined", 0) or 0),
                drop_flagged=drop_flagged(info),
            )
        # A night's pieces were made on some threads and freed on others: what the allocator
        # keeps of them goes back to the system before the next night's.
        pa.default_memory_pool().release_unused()
        if open_file and open_file != state.open_file:
            files.remove(open_file)  # a night of this run: no state names it
        open_file = open_name(generation)
        if folded.closed.num_rows:
            name = closed_name(info.date, generation)
            files.write_table(name, folded.closed)
            closed_files.append(name)
        nights.append(folded.night)
    if open_file is None:  # no snapshot at all: an empty table
        generation += 1
        open_file = open_name(generation)
        files.write_table(open_file, empty_history())
    new_state = HistoryState(
        nights=(*state.nights, *nights),
        open_file=open_file,
        closed_files=tuple(closed_files),
        generation=generation,
    )
    return new_state, nights


def _remove_strays(files: HistoryFiles, state: HistoryState) -> None:
    """Remove files a killed run (or a replaced table) left: any the state does not name."""
    keep = {STATE_NAME, LOCK_OBJECT_NAME, *state.files}
    for name in files.names():
        if name not in keep:
            files.remove(name)


def _report(
    files: HistoryFiles, state: HistoryState, nights: tuple[Night, ...], *, rebuilt: bool
) -> HistoryReport:
    """The report of a run: every version ever opened is one row of the table."""
    versions = sum(n.opened for n in state.nights)
    current = files.rows(state.open_file) if state.open_file else 0
    shown: Path | str = (
        files.location.local / HISTORY_DIR if files.location.local is not None else files.shown()
    )
    return HistoryReport(shown, rebuilt, nights, versions, current, state.last_date)
