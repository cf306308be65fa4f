"""Crash consistency of publication: a crash at every step leaves readers a whole snapshot.

A crash is injected at each step of the publish path (every file-system operation of a
local publication, every object written, copied or deleted on S3), in two flavours:

* **killed**: the process stops dead at that step, no handler runs (SIGKILL, power loss).
  The step's function raises :class:`Killed`, and everything that would clean up on the way
  out is disabled, so the store is left exactly as a kill leaves it;
* **failed**: the step raises an ordinary error and the run's own handlers run.

After each, every reader is asked what it sees: ``load_snapshot`` (the latest complete
snapshot), pandas and DuckDB over the dataset (``pd.read_parquet("DIR/pets")``,
``read_parquet('DIR/pets/*/*.parquet', hive_partitioning=true)``). Each must see, for every
day, either the snapshot before the run or the one it was writing, never a mix, never a
missing day; a failed run must leave exactly the state before it; and the next run's
recovery must leave either state whole.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fnmatch
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pyarrow.fs as pafs
import pytest

import petsync.storage.filesystem as store_filesystem
from petsync.client.config import ClientConfig
from petsync.core.apikey import ApiKey
from petsync.core.errors import PetsyncError
from petsync.core.models import Pet
from petsync.export.config import ExportConfig
from petsync.export.run import run_export
from petsync.formats.snapshots import load_snapshot
from petsync.storage import local_publication as local_publish
from petsync.storage import object_publication as object_publish
from petsync.storage.layout import MANIFEST_NAME, STAGING_DIR
from petsync.storage.location import parse_location
from petsync.storage.store import ObjectStore
from tests.conftest import S3Bucket
from tests.export.memstore import MemoryBucket
from tests.export.scripted import BASE, ScriptedClient

DAY1, DAY2 = dt.date(2026, 11, 21), dt.date(2026, 11, 22)
OLD = [Pet(i, f"old{i}", 1, "available") for i in (1, 2, 3)]
NEW = [Pet(i, f"new{i}", 2, "sold") for i in (3, 4, 5, 6)]
View = dict[str, list[int]]  # snapshot date -> ids a reader sees for it
OPEN_FILESYSTEM = store_filesystem.open_filesystem


class Killed(BaseException):
    """The process stopped dead at this step."""


class Failed(OSError):
    """This step failed (disk full, network): the run's handlers run."""


def export(out: str, pets: list[Pet], today: dt.date) -> None:
    config = ExportConfig(
        client=ClientConfig(BASE, ApiKey("k")), out_dir=out, max_drop=1.0, format="both"
    )
    run_export(config, client=ScriptedClient(pets), today=today)


def ids(pets: list[Pet]) -> list[int]:
    return sorted(p.id for p in pets)


@dataclass
class Scenario:
    """The snapshots before the run, and the ones the crashing run was writing."""

    name: str
    before: dict[dt.date, list[Pet]]
    today: dt.date

    @property
    def after(self) -> dict[dt.date, list[Pet]]:
        return {**self.before, self.today: NEW}


SCENARIOS = [
    Scenario("new-day", {DAY1: OLD}, DAY2),
    Scenario("same-day-rerun", {DAY1: OLD, DAY2: OLD[:2]}, DAY2),
]


# -- readers -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Readers:
    """How each reader is pointed at one location."""

    out: str
    pandas_options: dict[str, Any] | None = None
    duckdb_connect: Callable[[], duckdb.DuckDBPyConnection] = duckdb.connect

    def latest(self) -> tuple[str, list[int]]:
        frame = load_snapshot(self.out)  # raises if there is none: "never nothing"
        assert frame.attrs["manifest"]["pets"] == len(frame)  # manifest and data agree
        return frame.attrs["snapshot_date"], sorted(frame["id"].tolist())

    def pandas(self) -> View:
        frame = pd.read_parquet(f"{self.out}/pets", storage_options=self.pandas_options)
        return _view(zip(frame["snapshot_date"].astype(str), frame["id"], strict=True))

    def duckdb(self) -> View:
        rows = (
            self.duckdb_connect()
            .sql(
                f"SELECT snapshot_date::VARCHAR, id FROM read_parquet("
                f"'{self.out}/pets/*/*.parquet', hive_partitioning=true)"
            )
            .fetchall()
        )
        return _view(rows)


def _view(rows: Any) -> View:
    view: View = {}
    for date, pet_id in rows:
        view.setdefault(str(date), []).append(int(pet_id))
    return {date: sorted(found) for date, found in sorted(view.items())}


def as_view(snapshots: dict[dt.date, list[Pet]]) -> View:
    return {date.isoformat(): ids(pets) for date, pets in sorted(snapshots.items())}


def latest_of(snapshots: dict[dt.date, list[Pet]]) -> tuple[str, list[int]]:
    date = max(snapshots)
    return date.isoformat(), ids(snapshots[date])


def assert_whole(readers: Readers, scenario: Scenario, where: str) -> None:
    """Every reader sees, per day, the snapshot before or the one being written."""
    before, after = as_view(scenario.before), as_view(scenario.after)
    assert readers.latest() in (latest_of(scenario.before), latest_of(scenario.after)), where
    for name, view in (("pandas", readers.pandas()), ("duckdb", readers.duckdb())):
        assert set(before) <= set(view) <= set(after), f"{where}: {name} lost or invented a day"
        for date, seen in view.items():
            allowed = [before.get(date), after[date]]
            assert seen in allowed, f"{where}: {name} sees a mix for {date}: {seen}"


def assert_exactly(readers: Readers, snapshots: dict[dt.date, list[Pet]], where: str) -> None:
    assert readers.latest() == latest_of(snapshots), where
    assert readers.pandas() == as_view(snapshots), where
    assert readers.duckdb() == as_view(snapshots), where


# -- step injection ------------------------------------------------------------------------


class Steps:
    """Counts the publish path's steps; makes one crash, after it ran: the ``crash_at``-th,
    or the first whose name matches ``crash_on`` (``prefix ... suffix``)."""

    def __init__(
        self,
        crash_at: int | None,
        crash: type[BaseException],
        observe: Callable[[str], None] | None = None,
        *,
        crash_on: tuple[str, str] | None = None,
    ) -> None:
        self.crash_at = crash_at
        self.crash_on = crash_on
        self.crash = crash
        self.observe = observe
        self.count = 0
        self.names: list[str] = []
        self.crashed = False

    def step(self, name: str, action: Callable[[], Any]) -> Any:
        result = action()
        self.count += 1
        self.names.append(name)
        if self.observe is not None:
            # What a kill right here leaves is what the store holds now: read it in place.
            self.observe(f"killed after step {self.count}: {name}")
        named = self.crash_on is not None and _matches(name, *self.crash_on)
        if not self.crashed and (self.count == self.crash_at or named):
            self.crashed = True
            raise self.crash(f"crash after step {self.count}: {name}")
        return result


def _matches(name: str, prefix: str, suffix: str) -> bool:
    return name.startswith(prefix) and name.endswith(suffix)


class CountingFileSystem:
    """A pyarrow file system whose every write, copy and delete is a step."""

    MUTATING = ("copy_file", "delete_file", "delete_dir", "delete_dir_contents", "move")

    def __init__(self, inner: pafs.FileSystem, steps: Steps) -> None:
        self._inner = inner
        self._steps = steps

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._inner, name)
        if name in self.MUTATING:
            return lambda *a, **k: self._steps.step(f"{name} {a}", lambda: attribute(*a, **k))
        if name == "open_output_stream":
            return lambda path, *a, **k: _CountedStream(attribute(path, *a, **k), self._steps, path)
        return attribute


class _CountedStream:
    """An upload whose completion (close: the object appears) is a step."""

    def __init__(self, inner: Any, steps: Steps, path: str) -> None:
        self._inner, self._steps, self._path = inner, steps, path

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def close(self) -> None:
        self._steps.step(f"upload {self._path}", self._inner.close)

    def __enter__(self) -> _CountedStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# -- local directories ---------------------------------------------------------------------


def local_steps(monkeypatch: pytest.MonkeyPatch, steps: Steps, *, killed: bool) -> None:
    """Every file-system step of a local publication, and the manifest's write, counted."""
    for name in ("fsync_file", "fsync_dir", "_exchange"):
        real = getattr(local_publish, name)
        monkeypatch.setattr(
            local_publish, name, lambda *a, _r=real, _n=name: steps.step(_n, lambda: _r(*a))
        )
    real_rename = local_publish.os.rename
    monkeypatch.setattr(
        local_publish.os, "rename", lambda *a: steps.step("rename", lambda: real_rename(*a))
    )
    real_rmtree = shutil.rmtree
    monkeypatch.setattr(
        local_publish.shutil,
        "rmtree",
        lambda *a, **k: steps.step("rmtree", lambda: real_rmtree(*a, **k)),
    )
    real_write = local_publish.StagedSnapshot.write_text
    monkeypatch.setattr(
        local_publish.StagedSnapshot,
        "write_text",
        lambda self, *a: steps.step("manifest", lambda: real_write(self, *a)),
    )
    if killed:  # a killed process removes nothing on its way out
        monkeypatch.setattr(local_publish.StagedSnapshot, "discard", lambda self: None)


def prepare_local(out: Path, scenario: Scenario) -> Path:
    for date, pets in sorted(scenario.before.items()):
        export(str(out), pets, date)
    return out


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_local_publication_killed_after_any_step_leaves_a_whole_snapshot(
    tmp_path: Path, scenario: Scenario
) -> None:
    out = prepare_local(tmp_path / "out", scenario)
    readers = Readers(str(out))
    steps = Steps(None, Killed, observe=lambda where: assert_whole(readers, scenario, where))
    with pytest.MonkeyPatch.context() as patch:
        local_steps(patch, steps, killed=True)
        export(str(out), NEW, scenario.today)

    assert steps.count >= 5  # the manifest, the fsyncs, the rename or exchange, the clean-up
    assert_exactly(readers, scenario.after, "published")


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_local_publication_failing_at_any_step_then_the_next_run_publishes_whole(
    tmp_path: Path, scenario: Scenario
) -> None:
    before = prepare_local(tmp_path / "before", scenario)  # exported once, copied per point
    counted = Steps(None, Failed)
    with pytest.MonkeyPatch.context() as patch:
        local_steps(patch, counted, killed=False)
        export(str(copy_local(before, tmp_path / "count")), NEW, scenario.today)
    for crash_at in range(1, counted.count + 1):
        out = copy_local(before, tmp_path / f"crash-{crash_at}")
        readers = Readers(str(out))
        steps = Steps(crash_at, Failed)
        with pytest.MonkeyPatch.context() as patch:
            local_steps(patch, steps, killed=False)
            with contextlib.suppress(PetsyncError):  # a failure after the rename: published
                export(str(out), NEW, scenario.today)
        where = f"{scenario.name}, failed after {steps.names[-1]} ({crash_at}/{counted.count})"
        assert_whole(readers, scenario, where)
        export(str(out), NEW, scenario.today)  # the next run cleans up and publishes
        assert_exactly(readers, scenario.after, f"{where}, next run")
        assert list((out / STAGING_DIR).iterdir()) == []


def copy_local(source: Path, target: Path) -> Path:
    shutil.copytree(source, target, symlinks=True)
    return target


# -- object stores -------------------------------------------------------------------------
#
# The whole matrix (every step, killed and failed, both scenarios) runs on the in-memory
# S3 of tests/export/memstore.py: its subject is the order of petsync's own steps. A few
# runs repeat the decisive points on moto's S3 server, end to end.


@dataclass(frozen=True)
class ObjectReaders(Readers):
    """The same readers on an object store: pandas through a pyarrow file system, the glob
    as DuckDB expands it (``pets/*/*.parquet``: one folder level, names ending in
    ``.parquet``).

    (DuckDB itself reads the glob on S3 in test_objectstore; here every step is read, so
    the cheaper equivalent keeps the matrix fast.) ``filesystem`` is never the counting one.
    """

    bucket: Any = None
    filesystem: pafs.FileSystem | None = None

    def pandas(self) -> View:
        location = parse_location(self.out)
        frame = pd.read_parquet(f"{location.store_path}/pets", filesystem=self.filesystem)
        return _view(zip(frame["snapshot_date"].astype(str), frame["id"], strict=True))

    def duckdb(self) -> View:
        import pyarrow.parquet as pq

        location = parse_location(self.out)
        keys = self.bucket.object_keys(f"{location.prefix}/pets/")
        rows: list[tuple[str, int]] = []
        for key in keys:
            relative = key.removeprefix(f"{location.prefix}/pets/").split("/")
            if len(relative) == 2 and fnmatch.fnmatchcase(relative[1], "*.parquet"):
                table = pq.read_table(f"{location.bucket}/{key}", filesystem=self.filesystem)
                date = relative[0].removeprefix("snapshot_date=")
                rows += [(date, pet_id) for pet_id in table.column("id").to_pylist()]
        return _view(rows)


def readers_on(bucket: Any, out: str) -> ObjectReaders:
    if isinstance(bucket, MemoryBucket):
        return ObjectReaders(out, bucket=bucket, filesystem=bucket.filesystem)
    return ObjectReaders(out, bucket=bucket, filesystem=OPEN_FILESYSTEM(parse_location(out)))


def s3_steps(monkeypatch: pytest.MonkeyPatch, steps: Steps, *, killed: bool) -> None:
    """Every object written, copied or deleted counted; a killed run also keeps its lock."""
    real = store_filesystem.open_filesystem

    def counting(*args: Any, **kwargs: Any) -> Any:
        return CountingFileSystem(real(*args, **kwargs), steps)

    monkeypatch.setattr(store_filesystem, "open_filesystem", counting)
    if killed:
        monkeypatch.setattr(object_publish, "roll_back", lambda *a, **k: None)
        monkeypatch.setattr(object_publish.ObjectStagedSnapshot, "discard", lambda self: None)
        monkeypatch.setattr("petsync.storage.lock.ObjectLock.release", lambda s: None)


def export_s3(out: str, pets: list[Pet], today: dt.date, *, hours_later: int = 0) -> None:
    """An export; ``hours_later`` runs it with a clock that far ahead (an expired lock)."""
    config = ExportConfig(client=ClientConfig(BASE, ApiKey("k")), out_dir=out, max_drop=1.0)
    moment = dt.datetime(2026, 11, 22, 3, tzinfo=dt.UTC) + dt.timedelta(hours=hours_later)
    run_export(config, client=ScriptedClient(pets), today=today, now=lambda: moment)


def prepare_s3(out: str, scenario: Scenario) -> str:
    for date, pets in sorted(scenario.before.items()):
        export_s3(out, pets, date)
    return out


def copy_prefix(bucket: MemoryBucket, source: str, target: str) -> str:
    """A copy of everything under the location ``source`` at ``target`` (memory store only)."""
    old, new = f"{bucket.name}/{parse_location(source).prefix}/", parse_location(target)
    with bucket.store.lock:
        for key, value in list(bucket.store.objects.items()):
            if key.startswith(old):
                bucket.store.objects[f"{bucket.name}/{new.prefix}/{key[len(old) :]}"] = value
    return target


def recover(out: str) -> None:
    """What the next run does first, under the lock: roll back what a killed run left."""
    ObjectStore(parse_location(out), now=lambda: dt.datetime.now(dt.UTC)).clean_staging()


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_object_publication_killed_after_any_object_leaves_a_whole_snapshot(
    memory_s3: MemoryBucket, scenario: Scenario
) -> None:
    out = prepare_s3(memory_s3.uri(), scenario)
    readers = readers_on(memory_s3, out)
    steps = Steps(None, Killed, observe=lambda where: assert_whole(readers, scenario, where))
    with pytest.MonkeyPatch.context() as patch:
        s3_steps(patch, steps, killed=False)
        export_s3(out, NEW, scenario.today)

    assert steps.count >= 8  # staged uploads, the intent, the copies, the clean-up
    assert_exactly(readers, scenario.after, "published")


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_object_publication_failing_at_any_step_leaves_the_previous_snapshots_or_the_new(
    memory_s3: MemoryBucket, scenario: Scenario
) -> None:
    before = prepare_s3(memory_s3.uri("before"), scenario)
    counted = Steps(None, Failed)
    with pytest.MonkeyPatch.context() as patch:
        s3_steps(patch, counted, killed=False)
        export_s3(copy_prefix(memory_s3, before, memory_s3.uri("count")), NEW, scenario.today)
    published = step_after(counted.names, "copy_file", manifest_copied(scenario))
    for crash_at in range(1, counted.count + 1):
        out = copy_prefix(memory_s3, before, memory_s3.uri(f"crash-{crash_at}"))
        readers = readers_on(memory_s3, out)
        with pytest.MonkeyPatch.context() as patch:
            s3_steps(patch, Steps(crash_at, Failed), killed=False)
            with contextlib.suppress(PetsyncError):  # after the manifest's copy: published
                export_s3(out, NEW, scenario.today)
        where = f"{scenario.name}, failed after {counted.names[crash_at - 1]}"
        # Before the manifest is in place a failure rolls back at once: exactly as before.
        expected = scenario.before if crash_at < published else scenario.after
        assert_exactly(readers, expected, where)
        export_s3(out, NEW, scenario.today)  # the next run publishes whole
        assert_exactly(readers, scenario.after, f"{where}, next run")
        assert memory_s3.object_keys(f"crash-{crash_at}/{STAGING_DIR}/") == []


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_object_publication_killed_at_any_step_is_rolled_back_or_kept_by_the_next_run(
    memory_s3: MemoryBucket, scenario: Scenario
) -> None:
    before = prepare_s3(memory_s3.uri("before"), scenario)
    counted = Steps(None, Killed)
    with pytest.MonkeyPatch.context() as patch:
        s3_steps(patch, counted, killed=True)
        export_s3(copy_prefix(memory_s3, before, memory_s3.uri("count")), NEW, scenario.today)
    published = step_after(counted.names, "copy_file", manifest_copied(scenario))
    for crash_at in range(1, counted.count + 1):
        out = copy_prefix(memory_s3, before, memory_s3.uri(f"crash-{crash_at}"))
        readers = readers_on(memory_s3, out)
        with pytest.MonkeyPatch.context() as patch:
            s3_steps(patch, Steps(crash_at, Killed), killed=True)
            with pytest.raises(Killed):
                export_s3(out, NEW, scenario.today)
        where = f"{scenario.name}, killed after {counted.names[crash_at - 1]}"
        assert_whole(readers, scenario, where)
        recover(out)
        expected = scenario.before if crash_at < published else scenario.after
        assert_exactly(readers, expected, f"{where}, recovered")
        export_s3(out, NEW, scenario.today, hours_later=24)  # the killed run's lock expired
        assert_exactly(readers, scenario.after, f"{where}, next run")
        assert memory_s3.object_keys(f"crash-{crash_at}/{STAGING_DIR}/") == []


def manifest_copied(scenario: Scenario) -> str:
    """How the step that copies the manifest into the partition ends (it publishes)."""
    return f"snapshot_date={scenario.today.isoformat()}/{MANIFEST_NAME}')"


def step_after(names: list[str], prefix: str, suffix: str) -> int:
    """The 1-based number of the first step named ``prefix ... suffix``."""
    return 1 + next(i for i, n in enumerate(names) if _matches(n, prefix, suffix))


# -- the decisive points on moto's S3 server, end to end -----------------------------------

SAME_DAY = SCENARIOS[1]  # a same-day re-run: the hard case, the old data is restored
DATA_COPIED = ("copy_file", f"snapshot_date={SAME_DAY.today.isoformat()}/pets.parquet')")


def test_s3_a_failed_publication_leaves_exactly_the_previous_snapshots(s3: S3Bucket) -> None:
    out = prepare_s3(s3.uri(), SAME_DAY)
    readers = readers_on(s3, out)
    points = {
        "after the data object was uploaded": ("upload", "/pets.parquet"),
        "after the data was copied into the partition": DATA_COPIED,
    }
    for what, crash_on in points.items():  # each leaves exactly the state before it
        with pytest.MonkeyPatch.context() as patch:
            s3_steps(patch, Steps(None, Failed, crash_on=crash_on), killed=False)
            with pytest.raises(PetsyncError, match="Nothing was published"):
                export_s3(out, NEW, SAME_DAY.today)
        assert_exactly(readers, SAME_DAY.before, f"{SAME_DAY.name}, failed {what}")
        assert s3.object_keys(f"{parse_location(out).prefix}/{STAGING_DIR}/") == []


def test_s3_the_run_after_a_killed_one_rolls_it_back_and_publishes(s3: S3Bucket) -> None:
    out = prepare_s3(s3.uri(), SAME_DAY)
    with pytest.MonkeyPatch.context() as patch:
        s3_steps(patch, Steps(None, Killed, crash_on=DATA_COPIED), killed=True)
        with pytest.raises(Killed):
            export_s3(out, NEW, SAME_DAY.today)
    readers = readers_on(s3, out)
    # The new data is in place, its manifest still staged: every reader sees the new
    # snapshot (load_snapshot through the staged manifest), none pairs it with the old one.
    assert readers.latest() == (SAME_DAY.today.isoformat(), ids(NEW))
    assert readers.pandas()[SAME_DAY.today.isoformat()] == ids(NEW)

    recover(out)
    assert_exactly(readers, SAME_DAY.before, "recovered: the unfinished run is rolled back")
    export_s3(out, NEW, SAME_DAY.today, hours_later=24)  # its lock has expired by then
    assert_exactly(readers, SAME_DAY.after, "the next run publishes")
    assert s3.object_keys(f"{STAGING_DIR}/") == []
