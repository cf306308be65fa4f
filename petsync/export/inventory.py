"""The nights a store holds, one line each: date, trust, pets, size, extra fields, why flagged.

:func:`describe_snapshots` is what ``petsync snapshots`` prints, built on
:func:`~petsync.formats.snapshots.list_snapshots` (so it reads every store and table format
that does) plus each night's size: the bytes of its partition's files (Parquet, CSV,
manifest, quarantine) for folders, of its current data files for a Delta or Iceberg table.

A night's trust is the first that holds of: ``dated ahead`` (dated after today: a machine
whose clock ran ahead wrote it, and readers skip it), ``incomplete`` (a listing's end was
not proven), ``drop flagged`` (the pet count fell by more than ``--max-drop``), else
``complete``. ``reasons`` lists every one that holds, in words.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from petsync.formats.registry import format_of_manifest
from petsync.formats.schema import EXTRA_FIELDS_KEY
from petsync.formats.snapshots import future_horizon, list_snapshots
from petsync.storage.layout import SnapshotInfo
from petsync.storage.location import Location, parse_location

Trust = Literal["complete", "incomplete", "drop flagged", "dated ahead"]
TRUST_VALUES: tuple[Trust, ...] = ("complete", "incomplete", "drop flagged", "dated ahead")


@dataclass(frozen=True)
class NightSummary:
    """One night of a store, as ``petsync snapshots`` shows it."""

    date: dt.date
    trust: Trust
    pets: int
    size: int | None  # bytes; None when the store does not say
    extra_fields: tuple[str, ...]  # the fields beyond the interface's seen that night
    extra_fields_mode: str | None  # drop, keep or fail: what the night did with them
    reasons: tuple[str, ...]  # why it is not trusted (empty when complete)
    path: Path | str

    def to_json(self) -> dict[str, Any]:
        return {
            "date": self.date.isoformat(),
            "trust": self.trust,
            "pets": self.pets,
            "size_bytes": self.size,
            "extra_fields": list(self.extra_fields),
            "extra_fields_mode": self.extra_fields_mode,
            "reasons": list(self.reasons),
            "path": str(self.path),
        }


def describe_snapshots(
    directory: Path | str, *, horizon: dt.date | None = None
) -> list[NightSummary]:
    """One :class:`NightSummary` per snapshot under ``directory`` (a path or URI), oldest first.

    ``horizon`` is the first date that counts as dated ahead (default:
    :func:`~petsync.formats.snapshots.future_horizon`, tomorrow with the clock tolerance).

    >>> [(n.date.isoformat(), n.trust, n.pets) for n in describe_snapshots("out")]  # doctest: +SKIP
    [('2026-11-21', 'complete', 10000), ('2026-11-22', 'incomplete', 9120)]
    """

    horizon = future_horizon() if horizon is None else horizon
    snapshots = list_snapshots(directory)
    sizes = _sizes(parse_location(directory), snapshots)
    return [_summary(info, sizes.get(info.date), horizon) for info in snapshots]


def _summary(info: SnapshotInfo, size: int | None, horizon: dt.date) -> NightSummary:
    reasons = list(info.flag_reasons)
    ahead = info.date >= horizon
    if ahead:
        reasons.insert(0, "dated after today: a clock that ran ahead; readers skip it")
    trust: Trust = (
        "dated ahead"
        if ahead
        else "incomplete"
        if not info.complete
        else "drop flagged"
        if info.drop_flagged
        else "complete"
    )
    extra = info.manifest.get(EXTRA_FIELDS_KEY)
    extra = extra if isinstance(extra, dict) else {}
    fields = extra.get("fields")
    names = (
        tuple(str(f["name"]) for f in fields if isinstance(f, dict) and "name" in f)
        if isinstance(fields, list)
        else ()
    )
    mode = extra.get("mode")
    return NightSummary(
        date=info.date,
        trust=trust,
        pets=info.pets,
        size=size,
        extra_fields=names,
        extra_fields_mode=mode if isinstance(mode, str) else None,
        reasons=tuple(reasons),
        path=info.path,
    )


def _sizes(location: Location, snapshots: list[SnapshotInfo]) -> dict[dt.date, int]:
    """Each night's bytes on the store, by the format that holds them."""
    if not snapshots:
        return {}

    held = format_of_manifest(snapshots[0].manifest)
    return held.night_sizes(location, [info.date for info in snapshots])
