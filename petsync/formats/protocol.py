"""The one interface every snapshot format implements.

An export commits a night in two steps, so that the manifest can count what was written:
:meth:`SnapshotFormat.stage` writes (or checks) what the night needs and counts its
statuses, the export judges the night and builds its manifest, and
:meth:`SnapshotFormat.commit` publishes the night with that manifest in one atomic step,
then prunes. Schema evolution is part of the commit: the night's kept extra fields
(:attr:`~petsync.formats.night.Night.columns`) become new columns, a changed type is refused
when staging. Readers list the nights a place holds, read one back exactly (ids stay
int64), and size them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import pyarrow as pa

    from petsync.formats.night import Committed, Night, StatusCounts
    from petsync.storage.layout import SnapshotInfo
    from petsync.storage.location import Location


class SnapshotFormat(Protocol):
    """A way of keeping the nights at ``OUT``: dated folders, a Delta or an Iceberg table."""

    @property
    def name(self) -> str:
        """The format's name in ``--table-format`` and the manifest's ``table_format``."""
        ...

    @property
    def reads_whole(self) -> bool:
        """True when a night is read whole through the format's library; False when it is a
        Parquet file of its own that a reader may stream (:attr:`SnapshotInfo.parquet_path`)."""
        ...

    def check(self, location: Location) -> None:
        """Before the first API request: refuse what is there if it is not petsync's (exit 2)."""
        ...

    def stage(self, night: Night) -> StatusCounts:
        """Make the night ready to commit; return its statuses as they will be committed."""
        ...

    def commit(self, night: Night, manifest: str) -> Committed:
        """Publish the staged night with its manifest, atomically; prune after a trusted one."""
        ...

    def manifest_files(self, *, trusted: bool, csv: bool) -> dict[str, str]:
        """The manifest's ``files``: the names the night's data goes under."""
        ...

    def holds(self, location: Location) -> bool:
        """True when ``location`` holds nights in this format."""
        ...

    def list_nights(self, location: Location) -> list[SnapshotInfo]:
        """Every published night at ``location``, oldest first."""
        ...

    def read_night(self, info: SnapshotInfo, *, known_only: bool = False) -> pa.Table:
        """One night's pets, ordered by id, in the snapshot schema (then its kept columns;
        ``known_only``: the snapshot schema's only, where the format can leave them out)."""
        ...

    def night_batches(self, info: SnapshotInfo) -> Iterator[pa.Table]:
        """One night's pets in the snapshot schema's columns only, a piece at a time in no
        set order (a format that :attr:`reads_whole`: memory flat in the night's size)."""
        ...

    def night_sizes(self, location: Location, dates: list[dt.date]) -> dict[dt.date, int]:
        """The bytes each night takes on the store."""
        ...

    def night_at_version(self, location: Location, version: int) -> SnapshotInfo | None:
        """The night a table version committed (time travel); None for a format without."""
        ...
