"""The catalogue as one Apache Iceberg table (``--table-format iceberg``), one commit a night.

The Iceberg twin of :mod:`petsync.formats.delta`, through pyiceberg (the ``petsync[iceberg]``
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

The schema is enforced before the first API request and again before the commit
(:mod:`petsync.formats.table_steps`): a table whose columns, types or partitioning differ is
refused, never cast.

With ``--extra-fields keep`` the schema evolves by adding columns only: a field the API
starts sending becomes a new optional column after the others (``union_by_name`` in the
transaction that replaces the night, so both land in one commit; null in the dates before
it), while a kept field whose values no longer fit its column's type, like any change of a
known column's type, is refused before the commit (exit 2).
"""

from __future__ import annotations

import datetime as dt
import itertools
import os
import warnings
from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa

from petsync.core.errors import ConfigError
from petsync.core.settings_table import OUT, TABLE_FORMAT
from petsync.formats.night import Night
from petsync.formats.table_schema import DATED_SCHEMA, dated_schema
from petsync.formats.table_steps import (
    MANIFEST_KEY,
    TableFormat,
    commit_manifest,
    dated_batches,
    engine,
    holds_folder,
)
from petsync.storage.credentials import environment_settings
from petsync.storage.layout import PARTITION_KEY, PETS_DIR
from petsync.storage.location import Location

NAMESPACE = "petsync"
TABLE = (NAMESPACE, PETS_DIR)
CATALOG_VARIABLE = "PETSYNC_ICEBERG_CATALOG"
CATALOG_FILE = "_iceberg_catalog.db"  # the local Iceberg catalog, in OUT
APPEND_ROWS = 1 << 18  # rows a night is appended in at a time (memory flat in its size)


def _files_uri(location: Location) -> str:
    """The table's location as Iceberg writes it (``file://`` for a local directory)."""
    if location.local is not None:
        return (location.local.absolute() / PETS_DIR).as_uri()
    return location.child(PETS_DIR)


def _pyiceberg() -> None:
    engine("pyiceberg", "pyiceberg", "iceberg")


def file_properties(location: Location, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """pyiceberg FileIO properties for the store, from the settings petsync's own file
    systems use (:mod:`petsync.storage.credentials`).

    S3: the endpoint and region (pyiceberg's pyarrow FileIO reads the AWS credential
    chain itself). GCS and Azure: petsync's own file systems, through
    :class:`petsync.formats.iceberg_files.StoreFileIO`, since pyiceberg's cannot be given
    every setting petsync accepts (an emulator without credentials, a connection string,
    ``az://``). A catalog's own configuration overrides these.
    """
    if location.kind == "s3":
        settings = environment_settings(environ)
        names = {"endpoint_override": "s3.endpoint", "region": "s3.region"}
        return {names[key]: value for key, value in settings.items() if key in names}
    if location.kind in ("gcs", "azure"):
        return {"py-io-impl": "petsync.formats.iceberg_files.StoreFileIO"}
    return {}


def open_catalog(location: Location, environ: Mapping[str, str] | None = None) -> Any:
    """The catalog of ``location``'s table: pyiceberg's named one (with the store's
    :func:`file_properties` under its own), or OUT's own SQLite file."""
    _pyiceberg()
    env = os.environ if environ is None else environ
    name = env.get(CATALOG_VARIABLE, "").strip()
    if name:
        from pyiceberg.catalog import load_catalog
        from pyiceberg.utils.config import Config

        try:
            # pyiceberg reads its configuration once, at import; read it as it is now.
            properties: dict[str, Any] = {
                **file_properties(location, env),
                **(Config().get_catalog_config(name) or {}),
            }
            return load_catalog(name, **properties)
        except Exception as exc:  # pyiceberg's own errors for a catalog it cannot load
            raise ConfigError(
                f"{CATALOG_VARIABLE}={name}: pyiceberg cannot load that catalog ({exc}); "
                "define it in ~/.pyiceberg.yaml or PYICEBERG_CATALOG__"
                f"{name.upper()}__URI"
            ) from exc
    if location.local is None:
        raise ConfigError(
            TABLE_FORMAT.given("iceberg") + f" on {location} needs a shared catalog: set "
            f"{CATALOG_VARIABLE} to the name of a catalog in pyiceberg's configuration "
            "(REST, Glue, SQL on PostgreSQL); the embedded SQLite catalog serves a local " + OUT
        )
    from pyiceberg.catalog.sql import SqlCatalog

    folder = location.local.absolute()
    folder.mkdir(parents=True, exist_ok=True)
    return SqlCatalog(
        NAMESPACE, uri=f"sqlite:///{folder / CATALOG_FILE}", warehouse=folder.as_uri()
    )


class Iceberg(TableFormat):
    """An Apache Iceberg table, through pyiceberg and a catalog."""

    name = "iceberg"
    title = "Iceberg"
    by_case = True  # readers that ignore case could not tell the two columns apart

    def open(self, location: Location) -> Any | None:
        """The table ``petsync.pets`` of the location's catalog, or None when there is none."""
        from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

        catalog = open_catalog(location)
        try:
            return catalog.load_table(TABLE)
        except (NoSuchTableError, NoSuchNamespaceError):
            return None

    def partitioning(self, table: Any) -> str | None:
        by_date = [
            table.schema().find_field(field.source_id).name
            for field in table.spec().fields
            if str(field.transform) == "identity"
        ]
        if by_date == [PARTITION_KEY] and len(table.spec().fields) == 1:
            return None
        return ", ".join(str(f) for f in table.spec().fields) or "nothing"

    def arrow_schema(self, table: Any) -> pa.Schema:
        schema: pa.Schema = table.schema().as_arrow()
        return schema

    def write(self, night: Night, table: Any | None, manifest: str) -> tuple[Any, int | None]:
        table = table or self._create(night.location)
        schema = dated_schema(night.columns)
        properties = {MANIFEST_KEY: manifest}
        with warnings.catch_warnings():
            # A first night deletes nothing; pyiceberg says so as a warning.
            warnings.filterwarnings("ignore", "Delete operation did not match any records")
            with table.transaction() as transaction:
                if night.columns:
                    # New kept fields become optional columns after the others; a kept
                    # column the night lacks stays, null for its pets.
                    with transaction.update_schema() as update:
                        update.union_by_name(schema)
                # An overwrite of the date, made of a delete and an append written in
                # bounded pieces: pyiceberg's overwrite of a partitioned table takes the
                # night whole. The transaction commits both as one (readers see the old
                # night or the new).
                transaction.delete(_on(night.date), snapshot_properties=properties)
                _append(transaction, _pieces(dated_batches(night), schema), properties)
        snapshot = table.current_snapshot()  # the night's append, before any prune
        return table, int(snapshot.snapshot_id) if snapshot is not None else None

    def _create(self, location: Location) -> Any:
        catalog = open_catalog(location)
        catalog.create_namespace_if_not_exists(NAMESPACE)
        table = catalog.create_table_if_not_exists(
            TABLE, schema=DATED_SCHEMA, location=_files_uri(location)
        )
        if not table.spec().fields:
            with table.update_spec() as spec:
                spec.add_identity(PARTITION_KEY)
        return catalog.load_table(TABLE)

    def nights(self, table: Any) -> set[dt.date]:
        if self.partitioning(table) is not None:  # not petsync's: its dates are in its rows
            scan = table.scan(selected_fields=(PARTITION_KEY,))
            column = scan.to_arrow().column(PARTITION_KEY)
            return {value for value in column.unique().to_pylist() if value is not None}
        # From the manifests, reading no data file: scanning the date column of every row
        # held every night's dates at once (160 MiB for two nights of 20,000,000 pets).
        partitions = table.inspect.partitions().select(["partition", "record_count"])
        return {
            day
            for entry in partitions.to_pylist()
            if entry["record_count"]
            and isinstance(day := entry["partition"][PARTITION_KEY], dt.date)
        }

    def commit_errors(self) -> tuple[type[BaseException], ...]:
        from pyiceberg.exceptions import CommitFailedException

        return (OSError, CommitFailedException, ValueError)

    def manifests(self, table: Any) -> Iterator[dict[str, Any]]:
        for snapshot in sorted(table.snapshots(), key=lambda s: s.sequence_number, reverse=True):
            summary = snapshot.summary
            properties = summary.additional_properties if summary is not None else {}
            if summary is None or summary.operation.value == "delete":
                continue
            manifest = commit_manifest(
                properties.get(MANIFEST_KEY), self.name, snapshot.snapshot_id
            )
            if manifest is not None:
                yield manifest

    def scan(self, location: Location, date: dt.date, version: int | None) -> pa.Table | None:
        table = self.open(location)
        if table is None:
            return None
        data: pa.Table = table.scan(row_filter=_on(date), snapshot_id=version).to_arrow()
        return data

    def scan_batches(
        self, location: Location, date: dt.date, version: int | None, columns: list[str]
    ) -> Iterator[pa.RecordBatch] | None:
        table = self.open(location)
        if table is None:
            return None
        scan = table.scan(row_filter=_on(date), snapshot_id=version, selected_fields=tuple(columns))
        return _file_by_file(scan)

    def holds(self, location: Location) -> bool:
        """True when OUT holds petsync's Iceberg table (its catalog file, or ``pets/metadata``)."""
        if location.local is not None:
            return (location.local / CATALOG_FILE).is_file()
        return holds_folder(location, "metadata")

    def night_sizes(self, location: Location, dates: list[dt.date]) -> dict[dt.date, int]:
        table = self.open(location)
        if table is None:
            return {}
        files = table.inspect.files().select(["partition", "file_size_in_bytes"]).to_pylist()
        sizes: dict[dt.date, int] = {}
        for entry in files:
            day = entry["partition"][PARTITION_KEY]
            if isinstance(day, dt.date):
                sizes[day] = sizes.get(day, 0) + int(entry["file_size_in_bytes"])
        return sizes


def _append(transaction: Any, pieces: Iterator[pa.Table], properties: dict[str, str]) -> None:
    """The night's pieces as data files of one append snapshot.

    ``Transaction.append`` makes a snapshot of each call, so appending piece by piece made
    one a piece: 78 a night at 20,000,000 pets, each with a manifest every later plan and
    listing of the nights reads. pyiceberg streams a partitioned table's rows into files
    only a table at a time (its own ``append`` does this with one table); the pieces keep
    memory flat, one counter keeps their files' names apart.

    The function that writes the files is pyiceberg's own but not public (the one its
    ``append`` calls, the same since 0.9). A pyiceberg without it gets the public way
    back: the same rows, a snapshot a piece.
    """
    data_files = _file_writer()
    if data_files is None:
        for rows in pieces:
            transaction.append(rows, snapshot_properties=properties)
        return
    io = transaction._table.io
    counter = itertools.count(0)
    with transaction.update_snapshot(snapshot_properties=properties).fast_append() as append:
        for rows in pieces:
            if not rows.num_rows:
                continue  # an empty night: the snapshot (and its manifest) without a file
            for data_file in data_files(
                table_metadata=transaction.table_metadata,
                df=rows,
                io=io,
                write_uuid=append.commit_uuid,
                counter=counter,
            ):
                append.append_data_file(data_file)


def _file_writer() -> Any | None:
    """pyiceberg's function that writes a table's rows as data files, if it has it."""
    try:
        from pyiceberg.io.pyarrow import _dataframe_to_data_files
    except ImportError:
        return None
    return _dataframe_to_data_files


def _pieces(batches: Iterator[pa.RecordBatch], schema: pa.Schema) -> Iterator[pa.Table]:
    """The batches as tables of :data:`APPEND_ROWS` rows (the last one fewer); one empty table
    for none (the commit still carries the night's manifest)."""
    held: list[pa.RecordBatch] = []
    rows = 0
    sent = False
    for batch in batches:
        held.append(batch)
        rows += batch.num_rows
        while rows >= APPEND_ROWS:  # slices: nothing copied
            table = pa.Table.from_batches(held, schema=schema)
            yield table.slice(0, APPEND_ROWS)
            rest = table.slice(APPEND_ROWS)
            held, rows, sent = rest.to_batches(), rest.num_rows, True
    if rows or not sent:
        yield pa.Table.from_batches(held, schema=schema)


def _file_by_file(scan: Any) -> Iterator[pa.RecordBatch]:
    """The scan's batches, one data file (with its delete files) read at a time: pyiceberg's
    own batch reader reads every file of the scan at once, each whole, on its threads."""
    from pyiceberg.io.pyarrow import ArrowScan

    files = ArrowScan(
        scan.table_metadata, scan.io, scan.projection(), scan.row_filter, scan.case_sensitive
    )
    for task in scan.plan_files():
        yield from files.to_record_batches([task])


def _on(date: dt.date) -> str:
    """The row filter of one night (pyiceberg parses it)."""
    return f"{PARTITION_KEY} = '{date.isoformat()}'"


FORMAT = Iceberg()
