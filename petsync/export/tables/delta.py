"""The catalogue as one Delta Lake table (``--table-format delta``), one commit per night.

The table lives at ``OUT/pets`` (a local directory or an object-store prefix), partitioned
by ``snapshot_date``, with the snapshot schema plus that column (``date``). Each run is one
atomic commit (delta-rs, the ``deltalake`` package) that replaces that date's partition:
``mode="overwrite"`` with the predicate ``snapshot_date = 'YYYY-MM-DD'``. The run's
manifest goes into the commit's metadata under ``petsync.manifest``, so the table's own
history says, per version, what the manifest file says for a Hive snapshot. Completeness
rules are the same: an incomplete result is committed with ``complete: false`` (and
:func:`petsync.load_snapshot` keeps returning the latest complete one), or not at all under
``--strict``. ``--keep N`` deletes older dates in one more commit (their files stay for
time travel until a ``VACUUM``).

The schema is enforced: a table at ``OUT/pets`` whose schema is not exactly this one, or
that is not partitioned by ``snapshot_date``, is refused with a clear error before the first
API request (:func:`check_table`, called under the lock) and checked again before the commit
(delta-rs itself would cast an int32 column silently). Ids are int64, exact to 2**63-1.

With ``--extra-fields keep`` the schema evolves by adding columns only: a field the API
starts sending becomes a new nullable column after the others (``schema_mode="merge"``; null
in the dates before it), while a kept field whose values no longer fit its column's type,
like any change of a known column's type, is refused before the commit.
Quarantined records, which have no place in a typed table, go to
``OUT/_quarantine/snapshot_date=.../_quarantine.jsonl``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from pathlib import Path
from typing import Any

import pyarrow as pa

from petsync.core.errors import ConfigError, InputError, PetsyncError
from petsync.export.deduplicated import Deduplicated
from petsync.export.extra_fields import ColumnType, ExtraFieldsReport
from petsync.export.fetch import FetchResult
from petsync.export.report import DropCheck, ExportReport
from petsync.export.schema import conform
from petsync.export.tables.common import (
    DATED_SCHEMA,
    MANIFEST_KEY,
    dated_batches,
    dated_schema,
    night_columns,
    plain_type,
    prune_table,
    refuse_column_types,
    refuse_schema,
    schema_differences,
    table_uri,
    type_clashes,
    write_quarantine,
)
from petsync.export.tables.night import Night
from petsync.export.tallies import StatusCounts
from petsync.storage.layout import PARTITION_KEY, SnapshotInfo
from petsync.storage.location import Location, parse_location


def storage_options(location: Location) -> dict[str, str]:
    """delta-rs settings for the store: the endpoint and region of the environment.

    Credentials are not passed: delta-rs reads the same standard chain (``AWS_*``
    variables, profiles, roles) itself.
    """
    if location.kind != "s3":
        return {}
    from petsync.storage.credentials import environment_settings

    settings = environment_settings()
    options: dict[str, str] = {}
    if "endpoint_override" in settings:
        options["AWS_ENDPOINT_URL"] = settings["endpoint_override"]
        if settings["endpoint_override"].startswith("http://"):
            options["AWS_ALLOW_HTTP"] = "true"
    if "region" in settings:
        options["AWS_REGION"] = settings["region"]
    return options


def _deltalake() -> Any:
    try:
        import deltalake
    except ImportError as exc:  # pragma: no cover - the delta extra is missing
        raise ConfigError(
            "--table-format delta needs the deltalake package: pip install 'petsync[delta]'"
        ) from exc
    return deltalake


def open_table(location: Location, version: int | None = None) -> Any | None:
    """The Delta table at ``OUT/pets``, or None when there is none."""
    deltalake = _deltalake()
    uri = table_uri(location)
    try:
        return deltalake.DeltaTable(uri, version=version, storage_options=storage_options(location))
    except deltalake.exceptions.TableNotFoundError:
        return None


def check_table(location: Location) -> None:
    """Before the first API request: a table already at ``OUT/pets`` must be petsync's.

    Its schema must be exactly the snapshot schema plus the date, and it must be partitioned
    by ``snapshot_date``; otherwise :class:`ConfigError` (exit 2) names the table, what
    differs and what to do, and nothing is fetched. No table yet is fine: the first commit
    creates it.
    """
    deltalake = _deltalake()
    try:
        table = open_table(location)
    except (OSError, deltalake.exceptions.DeltaError) as exc:
        raise ConfigError(
            f"cannot read the Delta table at {table_uri(location)}: {exc}. Nothing was "
            "fetched. Fix access to the store, or choose another --out."
        ) from exc
    if table is not None:
        check_schema(table, table_uri(location), before_fetch=True)


def check_schema(table: Any, where: str, *, before_fetch: bool = False) -> None:
    """Refuse a table whose schema is not the snapshot schema plus the date (then extra-field
    columns of petsync's types), or that is not partitioned by the date; the message names
    each difference."""
    found = pa.schema(table.schema().to_arrow())
    differences = schema_differences([(f.name, plain_type(f.type)) for f in found])
    partitions = list(table.metadata().partition_columns)
    if partitions != [PARTITION_KEY]:
        shown = ", ".join(partitions) if partitions else "nothing"
        differences.append(f"it is partitioned by {shown}, petsync's by {PARTITION_KEY}")
    refuse_schema("Delta", where, differences, before_fetch=before_fetch)


def check_column_types(table: Any, columns: dict[str, ColumnType], where: str) -> None:
    """Refuse to commit a kept extra field whose column already exists with another type."""
    found = {f.name: plain_type(f.type) for f in pa.schema(table.schema().to_arrow())}
    refuse_column_types("Delta", where, type_clashes(found, columns, by_case=False))


def commit_snapshot(
    run: Night,
    collected: Deduplicated,
    fetched: FetchResult,
    drop: DropCheck,
    extra_fields: ExtraFieldsReport | None = None,
    columns: dict[str, ColumnType] | None = None,
) -> ExportReport:
    """Commit the night's pets as one atomic replacement of its date's partition, adding a
    column for each new kept extra field (``columns``)."""
    deltalake = _deltalake()
    config = run.config
    location = config.location
    columns = columns or {}
    existing = open_table(location)
    if existing is not None:
        check_schema(existing, table_uri(location))
        check_column_types(existing, columns, table_uri(location))
    counts = StatusCounts()
    for batch in collected.batches():
        counts.add(batch.column(3))
    report = run.report(fetched, collected.counted(counts), drop, extra_fields)
    write_quarantine(run, location)
    run.lock.confirm()
    uri = table_uri(location)
    try:
        deltalake.write_deltalake(
            uri,
            pa.RecordBatchReader.from_batches(
                dated_schema(columns), dated_batches(collected, run.date, columns)
            ),
            partition_by=[PARTITION_KEY],
            mode="overwrite",
            # Adds the new kept fields' columns; a night without one leaves it null.
            schema_mode="merge" if columns or _has_extra_columns(existing) else None,
            predicate=f"{PARTITION_KEY} = '{run.date.isoformat()}'",
            storage_options=storage_options(location),
            commit_properties=deltalake.CommitProperties(
                custom_metadata={MANIFEST_KEY: report.manifest_text()}
            ),
        )
        table = open_table(location)
        assert table is not None
        pruned: list[Path | str] = []
        if config.keep is not None and report.exit_code.value == 0:
            pruned = prune_table(
                table, _partition_dates(table), config.keep, run.date, table_uri(location)
            )
        version = int(table.version())
    except (OSError, deltalake.exceptions.DeltaError) as exc:
        raise PetsyncError(
            f"cannot commit the snapshot to the Delta table {uri}: {exc}. Nothing was "
            "committed; earlier versions are untouched."
        ) from exc
    return dataclasses.replace(report, snapshot_path=uri, pruned=pruned, table_version=version)


def _has_extra_columns(table: Any | None) -> bool:
    return table is not None and len(pa.schema(table.schema().to_arrow())) > len(DATED_SCHEMA)


def _partition_dates(table: Any) -> set[dt.date]:
    return {dt.date.fromisoformat(str(p[PARTITION_KEY])) for p in table.partitions()}


# -- reading -------------------------------------------------------------------------------


def list_delta_snapshots(location: Location) -> list[SnapshotInfo]:
    """Each date still in the table, with the manifest of the commit that last wrote it."""
    table = open_table(location)
    if table is None:
        return []
    present = _partition_dates(table)
    found: dict[dt.date, SnapshotInfo] = {}
    for commit in table.history():  # newest first
        manifest = _manifest_of(commit)
        if manifest is None:
            continue
        date = dt.date.fromisoformat(str(manifest.get("snapshot_date")))
        if date in present and date not in found:
            found[date] = SnapshotInfo(date, table_uri(location), manifest)
    return [found[date] for date in sorted(found)]


def data_sizes(location: Location) -> dict[dt.date, int]:
    """Bytes of the table's current data files, by snapshot date (``petsync snapshots``)."""
    import pyarrow as pa

    table = open_table(location)
    if table is None:
        return {}
    actions = pa.table(table.get_add_actions(flatten=True))
    sizes: dict[dt.date, int] = {}
    dates = actions.column(f"partition.{PARTITION_KEY}").to_pylist()
    for date, size in zip(dates, actions.column("size_bytes").to_pylist(), strict=True):
        day = dt.date.fromisoformat(str(date))
        sizes[day] = sizes.get(day, 0) + int(size)
    return sizes


def _manifest_of(commit: dict[str, Any]) -> dict[str, Any] | None:
    text = commit.get(MANIFEST_KEY)
    if not isinstance(text, str):
        return None
    try:
        manifest = json.loads(text)
    except ValueError:
        return None
    if not isinstance(manifest, dict):
        return None
    return {**manifest, "table_format": "delta", "table_version": commit.get("version")}


def snapshot_at_version(location: Location, version: int) -> SnapshotInfo:
    """The snapshot a given table version committed (time travel)."""
    table = open_table(location)
    if table is None:
        raise InputError(f"no Delta table at {table_uri(location)}")
    for commit in table.history():
        if commit.get("version") == version:
            manifest = _manifest_of(commit)
            if manifest is not None:
                date = dt.date.fromisoformat(str(manifest["snapshot_date"]))
                return SnapshotInfo(date, table_uri(location), manifest)
    raise InputError(
        f"version {version} of the Delta table {table_uri(location)} is no petsync snapshot "
        "commit; `DeltaTable(...).history()` lists the versions"
    )


def read_delta(info: SnapshotInfo) -> pa.Table:
    """The pets of one snapshot of a Delta table, at the version its manifest names."""
    location = parse_location(str(info.path))
    version = info.manifest.get("table_version")
    if location.local is None:
        parent = parse_location(location.uri.rsplit("/", 1)[0])
    else:
        parent = parse_location(location.local.parent)
    table = open_table(parent, version if isinstance(version, int) else None)
    if table is None:
        raise InputError(f"no Delta table at {info.path}")
    data = table.to_pyarrow_table(filters=[(PARTITION_KEY, "=", info.date)])
    return conform(night_columns(data, info.manifest)).sort_by("id")
