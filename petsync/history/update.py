"""Keeping the history up to date: fold the snapshots newer than its last night.

:func:`update_history` reads only the snapshots newer than the table's last night, in date
order, and writes what they changed; folding every snapshot from scratch (``rebuild``)
gives the same table, and running it again with nothing new changes nothing. A snapshot
dated on or before the last night that the history did not take in (one exported late, or
a night exported again) is refused: the history would need rewriting from that night on,
which ``--rebuild`` does from the snapshots still kept.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import secrets
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from petsync.core.errors import InputError, LockedError
from petsync.core.files import try_lock
from petsync.export.layout import SnapshotInfo
from petsync.export.location import parse_location
from petsync.export.snapshot import list_snapshots, read_table
from petsync.history.fold import fold_night
from petsync.history.table import (
    EMPTY_STATE,
    HISTORY_DIR,
    STATE_NAME,
    HistoryState,
    Night,
    OpenWriter,
    closed_name,
    empty_history,
    history_dir,
    open_name,
    open_pieces,
    read_state,
    write_state,
    write_table,
)

LOCK_NAME = ".history.lock"


@dataclass(frozen=True)
class HistoryReport:
    """What an update did: the nights it folded in and the table after it.

    ``nights`` are the nights this run folded in (none when the table was up to date);
    ``versions`` counts the table's rows after the run, ``current`` its open versions.
    """

    path: Path
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

    Incremental by default: only snapshots newer than the history's last night are read.
    ``rebuild`` folds every snapshot kept from scratch into a new table that replaces the
    old one in one step. Raises :class:`InputError` (exit 2) for a snapshot older than the
    last night that the history lacks, and :class:`LockedError` (exit 75) while another
    update runs.

    >>> report = update_history("/srv/petsync")                   # doctest: +SKIP
    >>> [(n.date, n.added, n.changed, n.removed) for n in report.nights]  # doctest: +SKIP
    """
    location = parse_location(directory, what="directory")
    if location.local is None:
        raise InputError(
            f"petsync history works on a local directory; {location.uri} is on an object "
            "store (copy the snapshots to a local directory first)"
        )
    out = location.local
    if not (out / "pets").is_dir():
        raise InputError(
            f"no snapshots under {out / 'pets'}; `petsync export --out {out}` writes them"
        )
    with _locked(out):
        for stray in out.glob(f".{HISTORY_DIR}-*-*"):  # a rebuild that was killed
            shutil.rmtree(stray, ignore_errors=True)
        snapshots = list_snapshots(out)
        target = history_dir(out)
        state = None if rebuild else read_state(target)
        if state is None:
            return _build(out, snapshots)
        return _update(target, state, snapshots)


@contextlib.contextmanager
def _locked(out: Path) -> Iterator[None]:
    fd = os.open(out / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if not try_lock(fd):
            raise LockedError(
                f"another history update holds {out / LOCK_NAME}; this one is skipped"
            )
        yield
    finally:
        os.close(fd)


def _new_nights(
    state: HistoryState, snapshots: list[SnapshotInfo], target: Path
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
                f"`petsync history {target.parent} --rebuild`"
            )
        if taken[info.date] != info.run_id:
            raise InputError(
                f"the snapshot of {info.date} was exported again after the history took it "
                f"in; rebuild the history with `petsync history {target.parent} --rebuild`"
            )
    return [info for info in snapshots if info.date > last]


def _fold(
    target: Path, state: HistoryState, snapshots: list[SnapshotInfo]
) -> tuple[HistoryState, list[Night], int]:
    """Fold ``snapshots`` into the table in ``target``; return its new state.

    Each night reads the open file the night before wrote and writes the next one, a piece
    at a time: memory holds one snapshot and one piece, however many nights are folded.
    """
    nights: list[Night] = []
    closed_files = list(state.closed_files)
    open_file, generation, current = state.open_file, state.generation, 0
    for info in snapshots:
        generation += 1
        with OpenWriter(target, open_name(generation)) as writer:
            folded = fold_night(
                open_pieces(target / open_file) if open_file else iter(()),
                read_table(info),
                writer.write,
                date=info.date,
                trusted=is_trusted(info),
                run_id=info.run_id,
                complete=info.complete,
                quarantined=int(info.manifest.get("quarantined", 0) or 0),
                drop_flagged=drop_flagged(info),
            )
        if open_file and open_file != state.open_file:
            (target / open_file).unlink()  # a night of this run: no state names it
        open_file, current = open_name(generation), folded.open_rows
        if folded.closed.num_rows:
            name = closed_name(info.date)
            write_table(target, name, folded.closed)
            closed_files.append(name)
        nights.append(folded.night)
    if open_file is None:  # no snapshot at all: an empty table
        generation += 1
        open_file = open_name(generation)
        write_table(target, open_file, empty_history())
    new_state = HistoryState(
        nights=(*state.nights, *nights),
        open_file=open_file,
        closed_files=tuple(closed_files),
        generation=generation,
    )
    return new_state, nights, current


def _remove_strays(target: Path, state: HistoryState) -> None:
    """Remove files a killed run left: any not named by the state."""
    keep = {STATE_NAME, *state.files}
    for entry in target.iterdir():
        if entry.name not in keep and entry.is_file():
            entry.unlink()


def _update(target: Path, state: HistoryState, snapshots: list[SnapshotInfo]) -> HistoryReport:
    _remove_strays(target, state)
    todo = _new_nights(state, snapshots, target)
    if not todo:
        versions = sum(_rows(target / name) for name in state.files)
        current = _rows(target / state.open_file) if state.open_file else 0
        return HistoryReport(target, False, (), versions, current, state.last_date)
    new_state, nights, current = _fold(target, state, todo)
    write_state(target, new_state)
    _remove_strays(target, new_state)
    versions = sum(_rows(target / name) for name in new_state.files)
    return HistoryReport(target, False, tuple(nights), versions, current, new_state.last_date)


def _build(out: Path, snapshots: list[SnapshotInfo]) -> HistoryReport:
    """Fold every snapshot into a new folder, then swap it for ``DIR/history`` in one step."""
    token = secrets.token_hex(6)
    staging = out / f".{HISTORY_DIR}-new-{token}"
    staging.mkdir()
    try:
        state, nights, current = _fold(staging, EMPTY_STATE, snapshots)
        write_state(staging, state)
        target = history_dir(out)
        old = out / f".{HISTORY_DIR}-old-{token}"
        if target.exists():
            os.rename(target, old)
        os.rename(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    shutil.rmtree(old, ignore_errors=True)
    versions = sum(_rows(target / name) for name in state.files)
    return HistoryReport(target, True, tuple(nights), versions, current, state.last_date)


def _rows(path: Path) -> int:
    import pyarrow.parquet as pq

    return int(pq.read_metadata(path).num_rows)
