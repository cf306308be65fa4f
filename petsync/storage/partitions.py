"""The dated partitions of a location, read: which are published, and their manifests.

A partition ``pets/snapshot_date=YYYY-MM-DD/`` counts as published when its Parquet file's
footer names the run (``run_id``) whose manifest vouches for it: the partition's own
manifest, or, while that run is still publishing on an object store, the manifest it
staged. A reader never pairs one run's data with another run's manifest, whatever moment it
reads at. (Manifests written before run ids existed are taken as they are.)

Every writer that replaces or prunes partitions (:mod:`.local_publication`,
:mod:`.object_publication`) and every reader of dated folders lists them here, through
``pyarrow.fs``, local directory or object store alike.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from petsync.core.errors import InputError
from petsync.core.wording import COMMAND_LINE, Said, Setting
from petsync.storage.layout import (
    DATA_NAMES,
    MANIFEST_NAME,
    PETS_DIR,
    RUN_ID_KEY,
    STAGING_DIR,
    SnapshotInfo,
    manifest_data_name,
    partition_date,
    partition_name,
)
from petsync.storage.location import Location, parse_location

if TYPE_CHECKING:
    import pyarrow.fs as pafs


@dataclass(frozen=True)
class Partitions:
    """A location opened for reading: its file system and how to name what is in it."""

    location: Location
    filesystem: pafs.FileSystem

    @classmethod
    def open(
        cls, directory: Path | str | Location, what: Said | Setting = "directory"
    ) -> Partitions:
        from petsync.storage.filesystem import open_filesystem

        location = (
            directory if isinstance(directory, Location) else parse_location(directory, what=what)
        )
        try:
            return cls(location, open_filesystem(location))
        except OSError as exc:  # pragma: no cover - a file system that cannot even start
            raise read_error(location, exc) from exc

    def store_path(self, *parts: str) -> str:
        return self.location.store_child(*parts)

    def shown(self, *parts: str) -> Path | str:
        """How callers see a path: a :class:`Path` for a local directory, else a URI."""
        if self.location.local is not None:
            return self.location.local.joinpath(*parts)
        return self.location.child(*parts)

    def read_bytes(self, path: str) -> bytes:
        """One whole object or file, in one read (a consistent copy even while replaced)."""
        with self.filesystem.open_input_file(path) as handle:
            data: bytes = handle.read()
        return data

    def published(self) -> list[SnapshotInfo]:
        """Every published partition, oldest first (see the module's docstring)."""
        found = [self.info(date) for date in self.dates()]
        return [info for info in found if info is not None]

    def info(self, date: dt.date) -> SnapshotInfo | None:
        """The published snapshot of ``date``, or None if its partition is not one."""
        return self.partition_info(
            self.store_path(*partition_name(date)), self.shown(*partition_name(date)), date
        )

    def partition_info(
        self, partition: str, shown: Path | str, date: dt.date
    ) -> SnapshotInfo | None:
        """The snapshot in the partition at ``partition`` (a store path), or None.

        The data is vouched for by the manifest of the run that wrote it: the partition's
        own, or, while that run is publishing on an object store (its data copied in, its
        manifest not yet), the manifest it staged beside its other files.
        """
        manifest = self.manifest(f"{partition}/{MANIFEST_NAME}")
        if manifest is not None and not _run_id(manifest):
            return SnapshotInfo(date, shown, manifest)  # written before run ids: as it is
        if manifest is not None and _run_id(manifest) == self.footer_run_id(
            f"{partition}/{manifest_data_name(manifest)}"
        ):
            return SnapshotInfo(date, shown, manifest)
        for name in DATA_NAMES:
            footer = self.footer_run_id(f"{partition}/{name}")
            if footer is None:
                continue
            staged = self.manifest(self.store_path(STAGING_DIR, footer, MANIFEST_NAME))
            if (
                staged is not None
                and _run_id(staged) == footer
                and manifest_data_name(staged) == name
            ):
                return SnapshotInfo(date, shown, staged)
        return None  # data without its run's manifest: a dead run the next one cleans

    def manifest(self, path: str) -> dict[str, Any] | None:
        try:
            manifest = json.loads(self.read_bytes(path))
        except (OSError, ValueError):
            return None
        return manifest if isinstance(manifest, dict) else None

    def footer_run_id(self, path: str) -> str | None:
        import pyarrow.parquet as pq

        try:
            with self.filesystem.open_input_file(path) as handle:
                metadata = pq.read_schema(handle).metadata or {}
        except (OSError, ValueError):
            return None
        value = metadata.get(RUN_ID_KEY)
        return value.decode("utf-8", "replace") if value is not None else None

    def dates(self) -> list[dt.date]:
        import pyarrow.fs as pafs

        selector = pafs.FileSelector(self.store_path(PETS_DIR), allow_not_found=True)
        try:
            entries = self.filesystem.get_file_info(selector)
        except OSError as exc:
            raise read_error(self.location, exc) from exc
        found = [
            partition_date(entry.base_name)
            for entry in entries
            if entry.type == pafs.FileType.Directory
        ]
        return sorted(date for date in found if date is not None)


def list_partitions(directory: Path | str | Location) -> list[SnapshotInfo]:
    """The published dated partitions under ``directory`` (a path or a URI), oldest first."""
    return Partitions.open(directory).published()


def _run_id(manifest: dict[str, Any]) -> str | None:
    value = manifest.get("run_id")
    return value if isinstance(value, str) and value else None


def read_error(location: Location, exc: OSError) -> InputError:
    """The message of any snapshot read that failed: the store's error, as a reader's."""
    from petsync.storage.filesystem import store_error

    error = store_error(location, exc, doing="reading snapshots", before_fetch=True)
    # Said of a reader: the command line's wording names the option, replaced as a whole.
    said = error.render(COMMAND_LINE)
    return InputError(said.replace("cannot use --out", "cannot read snapshots at", 1))


def manifest_run_id(filesystem: pafs.FileSystem, path: str) -> str | None:
    """The ``run_id`` a manifest names, or None if it is unreadable or names none."""
    try:
        with filesystem.open_input_file(path) as handle:
            manifest = json.loads(handle.read())
    except (OSError, ValueError):
        return None
    value = manifest.get("run_id") if isinstance(manifest, dict) else None
    return value if isinstance(value, str) else None
