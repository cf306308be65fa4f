"""The catalogue as one Apache Iceberg table (``--table-format iceberg``), one commit a night.

The Iceberg twin of :mod:`petsync.export.tables.delta`, through pyiceberg (the ``petsync[iceberg]``
extra). The table ``petsync.pets`` lives at ``OUT/pets``, partitioned by ``snapshot_date``
(identity), with the snapshot schema plus that column (``date``); ids are Iceberg ``long``,
exact to 2**63-1. Each run is one transaction that replaces that date's partition (a delete
of the date and an append, committed as one new table metadata: readers see the old night or
the new one). The run's manifest goes into the snapshot summary under ``petsync.manifest``.
Completeness works as for the other formats; ``--keep N`` deletes older dates in one more
commit (their files stay for time travel until snapshots are expired). Quarantined records go
to ``OUT/_quarantine/snapshot_date=.../_quarantine.jsonl``.

The catalog: with ``PETSYNC_ICEBERG_CATALOG`` unset and a local ``OUT``, an embedded SQL
catalog in ``OUT/_iceberg_catalog.db`` (SQLite), so it runs on a fresh machine with nothing
else. ``PETSYNC_ICEBERG_CATALOG=NAME`` names a catalog of pyiceberg's own configuration
(``~/.pyiceberg.yaml`` or ``PYICEBERG_CATALOG__NAME__URI`` and friends: REST, Glue, Hive, SQL
on PostgreSQL); that is required for an object-store ``OUT``, where a SQLite file cannot be
shared.

The schema is enforced before the first API request (:func:`check_table`) and again before
the commit: a table whose columns, types or partitioning differ is refused, never cast.

With ``--extra-fields keep`` the schema evolves by adding columns only: a field the API
starts sending becomes a new optional column after the others (``union_by_name`` in the
transaction that replaces the night, so both land in one commit; null in the dates before
it), while a kept field whose values no longer fit its column's type, like any change of a
known column's type, is refused before the commit (:func:`check_column_types`, exit 2).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa

from petsync.core.errors import ConfigError, InputError, PetsyncError
from petsync.export.deduplicated import Deduplicated
from petsync.export.extra_fields import (
    ColumnType,
    ExtraFieldsReport,
)
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
from petsync.export.tables.detect import CATALOG_FILE
from petsync.export.tables.night import Night
from petsync.export.tallies import StatusCounts
from petsync.storage.layout import PARTITION_KEY, PETS_DIR, SnapshotInfo
from petsync.storage.location import Location, parse_location

NAMESPACE = "petsync"
TABLE = (NAMESPACE, PETS_DIR)
CATALOG_VARIABLE = "PETSYNC_ICEBERG_CATALOG"


def _files_uri(location: Location) -> str:
    """The table's location as Iceberg writes it (``file://`` for a local directory)."""
    if location.local is not None:
        return (location.local.absolute() / PETS_DIR).as_uri()
    return location.child(PETS_DIR)


def _pyiceberg() -> None:
    try:
        import pyiceberg  # noqa: F401
    except ImportError as exc:  # pragma: no cover - the iceberg extra is missing
        raise ConfigError(
            "--table-format iceberg needs pyiceberg: pip install 'petsync[iceberg]'"
        ) from exc


def open_catalog(location: Location, environ: Mapping[str, str] | None = None) -> Any:
    """The catalog of ``location``'s table: pyiceberg's named one, or OUT's own SQLite file."""
    _pyiceberg()
    env = os.environ if environ is None else environ
    name = env.get(CATALOG_VARIABLE, "").strip()
    if name:
        from pyiceberg.catalog import load_catalog
        from pyiceberg.utils.config import Config

        try:
            # pyiceberg reads its configuration once, at import; read it as it is now.
            properties: dict[str, Any] = dict(Config().get_catalog_config(name) or {})
            return load_catalog(name, **properties)
        except Exception as exc:  # pyiceberg's own errors for a catalog it cannot load
            raise ConfigError(
                f"{CATALOG_VARIABLE}={name}: pyiceberg cannot load that catalog ({exc}); "
                "define it in ~/.pyiceberg.yaml or PYICEBERG_CATALOG__"
                f"{name.upper()}__URI"
            ) from exc
    if location.local is None:
        raise ConfigError(
            f"--table-format iceberg on {location} needs a shared catalog: set "
            f"{CATALOG_VARIABLE} to the name of a catalog in pyiceberg's configuration "
            "(REST, Glue, SQL on PostgreSQL); the embedded SQLite catalog serves a local --out"
        )
    from pyiceberg.catalog.sql import SqlCatalog

    folder = location.local.absolute()
    folder.mkdir(parents=True, exist_ok=True)
    return SqlCatalog(
        NAMESPACE, uri=f"sqlite:///{folder / CATALOG_FILE}", warehouse=folder.as_uri()
    )


def open_table(location: Location) -> Any | None:
    """The table ``petsync.pets`` of the location's catalog, or None when there is none."""
    from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

    catalog = open_catalog(location)
    try:
        return catalog.load_table(TABLE)
    except (NoSuchTableError, NoSuchNamespaceError):
        return None


def check_table(location: Location) -> None:
    """Before the first API request: a table already there must be petsync's (exit 2)."""
    table = open_table(location)
    if table is not None:
        check_schema(table, table_uri(location), before_fetch=True)


def check_schema(table: Any, where: str, *, before_fetch: bool = False) -> None:
    """Refuse a table whose schema or partitioning is not petsync's; name each difference."""
    found = table.schema().as_arrow()
    differences = schema_differences([(f.name, plain_type(f.type)) for f in found])
    by_date = [
        table.schema().find_field(field.source_id).name
        for field in table.spec().fields
        if str(field.transform) == "identity"
    ]
    if by_date != [PARTITION_KEY] or len(table.spec().fields) != 1:
        shown = ", ".join(str(f) for f in table.spec().fields) or "nothing"
        differences.append(f"it is partitioned by {shown}, petsync's by {PARTITION_KEY}")
    refuse_schema("Iceberg", where, differences, before_fetch=before_fetch)


def check_column_types(table: Any, columns: dict[str, ColumnType], where: str) -> None:
    """Refuse to commit a kept extra field whose column exists with another type, or under a
    name that differs only in case (readers that ignore case could not tell them apart)."""
    found = {f.name: plain_type(f.type) for f in table.schema().as_arrow()}
    refuse_column_types("Iceberg", where, type_clashes(found, columns, by_case=True))


def kept_columns(extra_fields: ExtraFieldsReport | None) -> dict[str, ColumnType]:
    """The night's kept extra fields and their column types, in the report's (name) order."""
    if extra_fields is None or extra_fields.mode != "keep":
        return {}
    return {f.name: f.column for f in extra_fields.fields if f.column is not None}


def _create_table(location: Location) -> Any:
    catalog = open_catalog(location)
    catalog.create_namespace_if_not_exists(NAMESPACE)
    table = catalog.create_table_if_not_exists(
        TABLE, schema=DATED_SCHEMA, location=_files_uri(location)
    )
    if not table.spec().fields:
        with table.update_spec() as spec:
            spec.add_identity(PARTITION_KEY)
    return catalog.load_table(TABLE)


def commit_snapshot(
    run: Night,
    collected: Deduplicated,
    fetched: FetchResult,
    drop: DropCheck,
    extra_fields: ExtraFieldsReport | None = None,
) -> ExportReport:
    """Commit the night's pets as one atomic replacement of its date's partition, adding a
    column for each new kept extra field in the same transaction."""
    from pyiceberg.exceptions import CommitFailedException

    config = run.config
    location = config.location
    uri = table_uri(location)
    columns = kept_columns(extra_fields)
    existing = open_table(location)
    if existing is not None:
        check_schema(existing, uri)
        check_column_types(existing, columns, uri)
    counts = StatusCounts()
    for batch in collected.batches():
        counts.add(batch.column(3))
    report = run.report(fetched, collected.counted(counts), drop, extra_fields)
    write_quarantine(run, location)
    run.lock.confirm()
    try:
        table = existing or _create_table(location)
        schema = dated_schema(columns)
        night = pa.Table.from_batches(
            list(dated_batches(collected, run.date, columns)), schema=schema
        )
        with warnings.catch_warnings():
            # A first night deletes nothing; pyiceberg says so as a warning.
            warnings.filterwarnings("ignore", "Delete operation did not match any records")
            with table.transaction() as transaction:
                if columns:
                    # New kept fields become optional columns after the others; a kept
                    # column the night lacks stays, null for its pets.
                    with transaction.update_schema() as update:
                        update.union_by_name(schema)
                transaction.overwrite(
                    night,
                    overwrite_filter=_on(run.date),
                    snapshot_properties={MANIFEST_KEY: report.manifest_text()},
                )
        snapshot = table.current_snapshot()  # the night's append, before any prune
        version = int(snapshot.snapshot_id) if snapshot is not None else None
        pruned: list[Path | str] = []
        if config.keep is not None and report.exit_code.value == 0:
            pruned = prune_table(
                table, _partition_dates(table), config.keep, run.date, table_uri(location)
            )
    except (OSError, CommitFailedException, ValueError) as exc:
        raise PetsyncError(
            f"cannot commit the snapshot to the Iceberg table {uri}: {exc}. Nothing was "
            "committed; earlier snapshots are untouched."
        ) from exc
    return dataclasses.replace(report, snapshot_path=uri, pruned=pruned, table_version=version)


def _on(date: dt.date) -> str:
    """The row filter of one night (pyiceberg parses it)."""
    return f"{PARTITION_KEY} = '{date.isoformat()}'"


def _partition_dates(table: Any, snapshot_id: int | None = None) -> set[dt.date]:
    scan = table.scan(selected_fields=(PARTITION_KEY,), snapshot_id=snapshot_id)
    column = scan.to_arrow().column(PARTITION_KEY)
    return {value for value in column.unique().to_pylist() if value is not None}


# -- reading -------------------------------------------------------------------------------


def list_iceberg_snapshots(location: Location) -> list[SnapshotInfo]:
    """Each date still in the table, with the manifest of the commit that last wrote it."""
    table = open_table(location)
    if table is None:
        return []
    present = _partition_dates(table)
    found: dict[dt.date, SnapshotInfo] = {}
    for snapshot in sorted(table.snapshots(), key=lambda s: s.sequence_number, reverse=True):
        manifest = _manifest_of(snapshot)
        if manifest is None:
            continue
        date = dt.date.fromisoformat(str(manifest.get("snapshot_date")))
        if date in present and date not in found:
            found[date] = SnapshotInfo(date, table_uri(location), manifest)
    return [found[date] for date in sorted(found)]


def data_sizes(location: Location) -> dict[dt.date, int]:
    """Bytes of the table's current data files, by snapshot date (``petsync snapshots``)."""
    table = open_table(location)
    if table is None:
        return {}
    files = table.inspect.files().select(["partition", "file_size_in_bytes"]).to_pylist()
    sizes: dict[dt.date, int] = {}
    for entry in files:
        day = entry["partition"][PARTITION_KEY]
        if isinstance(day, dt.date):
            sizes[day] = sizes.get(day, 0) + int(entry["file_size_in_bytes"])
    return sizes


def _manifest_of(snapshot: Any) -> dict[str, Any] | None:
    summary = snapshot.summary
    properties = summary.additional_properties if summary is not None else {}
    text = properties.get(MANIFEST_KEY)
    if not isinstance(text, str) or summary.operation.value == "delete":
        return None
    try:
        manifest = json.loads(text)
    except ValueError:
        return None
    if not isinstance(manifest, dict):
        return None
    return {**manifest, "table_format": "iceberg", "table_version": snapshot.snapshot_id}


def read_iceberg(info: SnapshotInfo) -> pa.Table:
    """The pets of one snapshot of the table, as of the Iceberg snapshot that committed it,
    with the extra-field columns that night kept (as its Parquet snapshot would hold them)."""
    location = _out_of(str(info.path))
    table = open_table(location)
    if table is None:
        raise InputError(f"no Iceberg table at {info.path}")
    version = info.manifest.get("table_version")
    data = table.scan(
        row_filter=_on(info.date),
        snapshot_id=version if isinstance(version, int) else None,
    ).to_arrow()
    return conform(night_columns(data, info.manifest)).sort_by("id")


def _out_of(table_path: str) -> Location:
    """The export's OUT from the table's ``OUT/pets`` (a local path or a store URI)."""
    location = parse_location(table_path)
    if location.local is not None:
        return parse_location(location.local.parent)
    return parse_location(table_path.rsplit("/", 1)[0])
