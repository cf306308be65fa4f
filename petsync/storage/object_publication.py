"""Publishing snapshots on an object store, where there is no rename.

Two facts carry the design: a single object's write is atomic (a reader gets the old object
or the new one, a multipart upload appears only when completed), and readers of the dataset
only ever read one object per partition, ``pets.parquet``. So:

1. **Stage.** Every file is written to a local scratch folder, then streamed (multipart)
   to ``OUT/.petsync-tmp/<run>/``: outside ``OUT/pets/``, so neither the
   ``pets/*/*.parquet`` glob nor pyarrow's discovery of ``pets/`` can see it. The manifest
   is staged too. Uploading after the writers closed, one file at a time, keeps the upload's
   part buffer out of the writers' own peak of memory.
2. **Back up** (same-day re-run only): the day's current objects are copied (server-side)
   to ``OUT/.petsync-tmp/<run>/previous/``.
3. **Intent.** ``OUT/.petsync-tmp/<run>/_publishing.json`` records the date, the run id and
   what it replaces. From here a run that dies is rolled back by the next one.
4. **Copy into the partition** (server-side), in this order: the side files whose names
   start with ``_`` (invisible to dataset readers), then ``pets.parquet`` (dataset readers
   switch to the new snapshot in that one step), then ``_manifest.json`` (``load_snapshot``
   switches). The manifest and the Parquet footer carry the same run id, and a partition
   counts as published only when they agree (:mod:`.partitions`), so between
   the two copies ``load_snapshot`` never pairs new data with an old manifest.
5. **Clean up**: objects of the replaced snapshot that the new one lacks, then the staging.

A run that fails during step 4 rolls back at once (:func:`roll_back`); a run that is killed
is rolled back by the next run under the lock (:func:`recover_staging`): the backup is
copied back (data, then manifest), or a new day's objects are deleted (data first). A run
whose manifest is already in place has published, and is only cleaned up.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import logging
import shutil
import tempfile
import uuid
from collections.abc import Mapping
from pathlib import Path

import pyarrow.fs as pafs

from petsync.core.errors import PetsyncError
from petsync.storage.layout import (
    MANIFEST_NAME,
    PARQUET_NAME,
    STAGING_DIR,
    partition_date,
    partition_name,
)
from petsync.storage.local_publication import LocalFiles
from petsync.storage.location import Location
from petsync.storage.partitions import list_partitions, manifest_run_id
from petsync.storage.store_calls import CLEANUP_LIMIT_SECONDS, STEP_LIMIT_SECONDS, StoreCalls

logger = logging.getLogger(__name__)

INTENT_NAME = "_publishing.json"
BACKUP_DIR = "previous"


def publish_order(names: list[str]) -> list[str]:
    """Side files first, then the data, then the manifest: the order readers need.

    >>> publish_order(["_manifest.json", "pets.parquet", "_pets.csv", "_quarantine.jsonl"])
    ['_pets.csv', '_quarantine.jsonl', 'pets.parquet', '_manifest.json']
    """
    side = sorted(n for n in names if n not in (PARQUET_NAME, MANIFEST_NAME))
    return side + [n for n in (PARQUET_NAME, MANIFEST_NAME) if n in names]


def removal_order(names: list[str]) -> list[str]:
    """The data first (dataset readers stop seeing it in one step), the manifest last.

    >>> removal_order(["_manifest.json", "pets.parquet", "_pets.csv"])
    ['pets.parquet', '_pets.csv', '_manifest.json']
    """
    side = sorted(n for n in names if n not in (PARQUET_NAME, MANIFEST_NAME))
    return (
        [n for n in (PARQUET_NAME,) if n in names]
        + side
        + ([MANIFEST_NAME] if MANIFEST_NAME in names else [])
    )


UPLOAD_CHUNK_BYTES = 256 * 1024  # the stream keeps one part (a few MiB) whatever this is


class ObjectStagedSnapshot(LocalFiles):
    """A snapshot being written under the staging prefix, published by server-side copies.

    Every file of the snapshot is first written to a local scratch folder (as a local
    export writes it) and uploaded to the staging prefix when the snapshot is published,
    one file after the other; working files that are never published (the spilled rows)
    live there too. The scratch folder needs about the snapshot's size on local disk.
    """

    def __init__(
        self,
        location: Location,
        filesystem: pafs.FileSystem,
        run_id: str,
        *,
        calls: StoreCalls | None = None,
    ) -> None:
        self.location = location
        self.filesystem = filesystem
        self.run_id = run_id
        self.calls = calls or StoreCalls(None, location=str(location))
        self.prefix = location.store_child(STAGING_DIR, run_id)
        self.path = location.child(STAGING_DIR, run_id)
        self.scratch_dir = Path(tempfile.mkdtemp(prefix="petsync-"))
        self._uploads: dict[str, Path] = {}

    @classmethod
    def create(
        cls,
        location: Location,
        filesystem: pafs.FileSystem,
        run_id: str | None = None,
        *,
        calls: StoreCalls | None = None,
    ) -> ObjectStagedSnapshot:
        """A new staged snapshot under ``OUT/.petsync-tmp/<run_id>/``.

        Named by the run id the manifest and the Parquet footer carry, so a reader that
        finds the data copied in before the manifest can find the run's staged manifest.
        """
        return cls(location, filesystem, run_id or uuid.uuid4().hex, calls=calls)

    def scratch(self, suffix: str) -> Path:
        """A local working file, never published, removed with the snapshot."""
        return self.scratch_dir / f"rows{suffix}"

    def file(self, name: str) -> Path:
        """A local file written by plain ``open``, uploaded into the snapshot on publish."""
        self._uploads[name] = self.scratch_dir / name
        return self._uploads[name]

    def publish(self, date: dt.date) -> str:
        """Upload the snapshot's files to the staging prefix, then copy them into the
        partition of ``date``; return its URI. Stoppable (see :class:`StoreCalls`)."""
        return self.calls.run(
            lambda: self._publish(date), doing="publishing", limit=STEP_LIMIT_SECONDS
        )

    def _publish(self, date: dt.date) -> str:
        mark_folder(self.location, self.filesystem, self.prefix)
        for name, local in sorted(self._uploads.items()):
            self._upload(local, name)
            local.unlink()
        self._uploads.clear()
        names = _names(self.filesystem, self.prefix)
        partition = self.location.store_child(*partition_name(date))
        replaced = _names(self.filesystem, partition)
        for name in replaced:
            self.filesystem.copy_file(f"{partition}/{name}", f"{self.prefix}/{BACKUP_DIR}/{name}")
        mark_folder(self.location, self.filesystem, partition)
        intent: dict[str, object] = {
            "date": date.isoformat(),
            "run_id": self.run_id,
            "replaced": replaced,
        }
        with self.filesystem.open_output_stream(f"{self.prefix}/{INTENT_NAME}") as stream:
            stream.write(json.dumps(intent).encode())
        try:
            for name in publish_order([n for n in names if n != INTENT_NAME]):
                self.filesystem.copy_file(f"{self.prefix}/{name}", f"{partition}/{name}")
        except BaseException:
            with contextlib.suppress(OSError):
                roll_back(self.filesystem, self.prefix, partition, intent)
            raise
        for name in set(replaced) - set(names):
            self.filesystem.delete_file(f"{partition}/{name}")
        shutil.rmtree(self.scratch_dir, ignore_errors=True)
        with contextlib.suppress(OSError):  # published: the next run removes what is left
            _delete_dir(self.filesystem, self.prefix)
        return self.location.child(*partition_name(date))

    def _upload(self, local: Path, name: str) -> None:
        """Stream one local file to the staged object ``name`` (a multipart upload on S3)."""
        with (
            self.filesystem.open_output_stream(f"{self.prefix}/{name}") as stream,
            local.open("rb") as source,
        ):
            shutil.copyfileobj(source, stream, UPLOAD_CHUNK_BYTES)

    def discard(self) -> None:
        """Remove the staged objects and the local scratch folder.

        Not the objects while a step that writes them was left running (a stop during the
        publication): the next run rolls that back from what is staged.
        """
        shutil.rmtree(self.scratch_dir, ignore_errors=True)
        if self.calls.abandoned is not None:
            return
        with contextlib.suppress(OSError, PetsyncError):
            self.calls.run(
                lambda: _delete_dir(self.filesystem, self.prefix),
                doing="removing the staging",
                limit=CLEANUP_LIMIT_SECONDS,
                stoppable=False,
            )


def roll_back(
    filesystem: pafs.FileSystem, staged: str, partition: str, intent: Mapping[str, object]
) -> None:
    """Undo a publication that did not finish; finish the clean-up of one that did."""
    current = _names(filesystem, partition)
    if MANIFEST_NAME in current and manifest_run_id(
        filesystem, f"{partition}/{MANIFEST_NAME}"
    ) == intent.get("run_id"):
        return  # the manifest is in place: it was published, nothing to undo
    listed = intent.get("replaced")
    replaced = [str(n) for n in listed] if isinstance(listed, list) else []
    if replaced:
        for name in publish_order(replaced):
            filesystem.copy_file(f"{staged}/{BACKUP_DIR}/{name}", f"{partition}/{name}")
        for name in set(current) - set(replaced):
            filesystem.delete_file(f"{partition}/{name}")
        return
    # A new day: the data goes first, so the glob stops seeing it in one step.
    for name in removal_order(current):
        filesystem.delete_file(f"{partition}/{name}")
    with contextlib.suppress(OSError):
        filesystem.delete_dir(partition)


def recover_staging(location: Location, filesystem: pafs.FileSystem) -> list[str]:
    """Roll back what killed runs left half-published, then remove the staging area.

    Call only while holding the location's lock. Returns what was removed.
    """
    staging = location.store_child(STAGING_DIR)
    selector = pafs.FileSelector(staging, allow_not_found=True, recursive=False)
    removed: list[str] = []
    for entry in filesystem.get_file_info(selector):
        if entry.type == pafs.FileType.Directory:
            intent = _read_intent(filesystem, f"{entry.path}/{INTENT_NAME}")
            if intent is not None:
                date = dt.date.fromisoformat(str(intent["date"]))
                partition = location.store_child(*partition_name(date))
                roll_back(filesystem, entry.path, partition, intent)
                logger.warning(
                    "export.rolled_back",
                    extra={"fields": {"snapshot_date": date.isoformat(), "staged": entry.path}},
                )
            _delete_dir(filesystem, entry.path)
        else:
            filesystem.delete_file(entry.path)
        removed.append(entry.path)
    return removed


def prune_objects(
    location: Location, filesystem: pafs.FileSystem, keep: int, today: dt.date | None = None
) -> list[str]:
    """Delete all but the newest ``keep`` snapshots; return the removed partitions' URIs.

    As :func:`.local_publication.prune_snapshots`: with ``today``, snapshots dated after it
    are neither counted nor removed. In each partition the data goes first (dataset
    readers stop seeing it in one step), the manifest last; a prune that dies midway leaves
    a partition without data, which no reader counts and the next prune removes.
    """
    if keep < 1:
        raise ValueError("keep must be at least 1")
    snapshots = [s for s in list_partitions(location.uri) if today is None or s.date <= today]
    if len(snapshots) <= keep:
        return []
    oldest_kept = snapshots[-keep].date
    removed: list[str] = []
    root = location.store_child("pets")
    selector = pafs.FileSelector(root, allow_not_found=True, recursive=False)
    for entry in sorted(filesystem.get_file_info(selector), key=lambda e: e.path):
        date = partition_date(entry.base_name)
        if entry.type != pafs.FileType.Directory or date is None or date >= oldest_kept:
            continue
        for name in removal_order(_names(filesystem, entry.path)):
            filesystem.delete_file(f"{entry.path}/{name}")
        with contextlib.suppress(OSError):
            filesystem.delete_dir(entry.path)
        removed.append(location.child("pets", entry.base_name))
    return removed


def mark_folder(location: Location, filesystem: pafs.FileSystem, path: str) -> None:
    """On GCS, create the folder marker objects of ``path`` and its parents.

    pyarrow's GCS client lists a folder's subfolders only by their marker objects (it reads
    no common prefixes), so without them the partitions and staged runs of a location are
    invisible to the next run, ``load_snapshot`` and the prune. S3 and Azure list prefixes.
    """
    if location.kind == "gcs":
        filesystem.create_dir(path, recursive=True)


def _delete_dir(filesystem: pafs.FileSystem, path: str) -> None:
    """Delete a prefix and everything under it.

    pyarrow's GCS client deletes the objects, then fails on the folder's own marker object
    when the prefix has none (objects written directly under it, as here): nothing is left.
    Where the store refuses pyarrow's batched delete (Azurite with a SAS token, after the
    client's retries), the objects go one by one.
    """
    try:
        filesystem.delete_dir(path)
    except FileNotFoundError:
        return
    except OSError:
        selector = pafs.FileSelector(path, allow_not_found=True, recursive=True)
        for info in filesystem.get_file_info(selector):
            if info.type == pafs.FileType.File:
                filesystem.delete_file(info.path)
        with contextlib.suppress(OSError):
            filesystem.delete_dir(path)


def _names(filesystem: pafs.FileSystem, prefix: str) -> list[str]:
    """The names of the files directly under ``prefix`` (none if it does not exist)."""
    selector = pafs.FileSelector(prefix, allow_not_found=True, recursive=False)
    return sorted(
        info.base_name
        for info in filesystem.get_file_info(selector)
        if info.type == pafs.FileType.File
    )


def _read_intent(filesystem: pafs.FileSystem, path: str) -> dict[str, object] | None:
    try:
        with filesystem.open_input_stream(path) as stream:
            data = json.loads(stream.read().decode("utf-8"))
    except (OSError, ValueError, FileNotFoundError):
        return None
    return data if isinstance(data, dict) and "date" in data else None
