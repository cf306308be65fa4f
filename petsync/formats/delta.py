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
API request (:meth:`Delta.check`, called under the lock) and checked again before the
commit (delta-rs itself would cast an int32 column silently). Ids are int64, exact to 2**63-1.

With ``--extra-fields keep`` the schema evolves by adding columns only: a field the API
starts sending becomes a new nullable column after the others (``schema_mode="merge"``; null
in the dates before it), while a kept field whose values no longer fit its column's type,
like any change of a known column's type, is refused before the commit.
Quarantined records, which have no place in a typed table, go to
``OUT/_quarantine/snapshot_date=.../_quarantine.jsonl``.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa

from petsync.core.errors import ConfigError, InputError
from petsync.core.settings_table import OUT
from petsync.formats.night import Night
from petsync.formats.parquet_layout import COMPRESSION, ROW_GROUP_ROWS, UNDICTIONARIED
from petsync.formats.table_schema import DATED_SCHEMA, dated_schema
from petsync.formats.table_steps import (
    MANIFEST_KEY,
    SCAN_ROWS,
    TableFormat,
    commit_manifest,
    dated_batches,
    engine,
    holds_folder,
    table_uri,
)
from petsync.storage.credentials import StoreAccess, environment_settings, resolve_access
from petsync.storage.layout import PARTITION_KEY, SnapshotInfo
from petsync.storage.location import Location


def storage_options(location: Location, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """delta-rs settings for the store, from the settings petsync's own file systems use
    (:mod:`petsync.storage.credentials`): an endpoint and region on S3; on GCS and Azure
    the emulator or endpoint and the credentials petsync chose.

    S3 credentials are not passed: delta-rs reads the same standard chain (``AWS_*``
    variables, profiles, roles) itself, as it does a managed identity on Azure and the
    metadata server on Google Cloud when petsync found nothing more explicit.
    """
    if location.kind == "s3":
        return _s3_options(environment_settings(environ))
    if location.kind == "gcs":
        return _gcs_options(resolve_access(location, environ))
    if location.kind == "azure":
        return _azure_options(resolve_access(location, environ))
    return {}


def _s3_options(settings: Mapping[str, str]) -> dict[str, str]:
    options: dict[str, str] = {}
    if "endpoint_override" in settings:
        options["AWS_ENDPOINT_URL"] = settings["endpoint_override"]
        options.update(_plain_http(settings["endpoint_override"]))
    if "region" in settings:
        options["AWS_REGION"] = settings["region"]
    return options


def _plain_http(endpoint: str) -> dict[str, str]:
    """An ``http://`` endpoint (an emulator) must be allowed: delta-rs wants HTTPS."""
    return {"allow_http": "true"} if endpoint.startswith("http://") else {}


def _gcs_options(access: StoreAccess) -> dict[str, str]:
    if access.anonymous and access.endpoint:
        # An emulator: object_store takes its URL from a service-account key, where
        # ``disable_oauth`` also stops it asking any token server (the metadata address).
        key = {
            "gcs_base_url": access.endpoint.rstrip("/"),
            "disable_oauth": True,
            "client_email": "",
            "private_key": "",
            "private_key_id": "",
        }
        return {"google_service_account_key": json.dumps(key), **_plain_http(access.endpoint)}
    if access.credentials_file:
        return {"google_application_credentials": access.credentials_file}
    return {}


def _azure_options(access: StoreAccess) -> dict[str, str]:
    assert access.account is not None
    options = {"azure_storage_account_name": access.account}
    if access.endpoint:
        # object_store puts the container after this URL: the account's own (Azurite's
        # path-style ``http://host:port/ACCOUNT`` as well as a custom domain).
        options["azure_storage_endpoint"] = access.endpoint.rstrip("/")
        options.update(_plain_http(access.endpoint))
    if access.account_key:
        options["azure_storage_account_key"] = access.account_key
    elif access.sas_token:
        options["azure_storage_sas_token"] = access.sas_token
    elif access.client_secret:
        tenant, client, secret = access.client_secret
        options["azure_storage_tenant_id"] = tenant
        options["azure_storage_client_id"] = client
        options["azure_storage_client_secret"] = secret
    return options


def _deltalake() -> Any:
    return engine("deltalake", "the deltalake package", "delta")


class Delta(TableFormat):
    """A Delta Lake table, through delta-rs."""

    name = "delta"
    title = "Delta"
    untouched = "earlier versions are untouched"

    def open(self, location: Location, version: int | None = None) -> Any | None:
        deltalake = _deltalake()
        uri = table_uri(location)
        try:
            return deltalake.DeltaTable(
                uri, version=version, storage_options=storage_options(location)
            )
        except deltalake.exceptions.TableNotFoundError:
            return None

    def check(self, location: Location) -> None:
        """Before the first API request: a table already at ``OUT/pets`` must be petsync's;
        one that cannot be read at all is refused too (exit 2, nothing fetched)."""
        deltalake = _deltalake()
        try:
            table = self.open(location)
        except (OSError, deltalake.exceptions.DeltaError) as exc:
            raise ConfigError(
                f"cannot read the Delta table at {table_uri(location)}: {exc}. Nothing was "
                "fetched. Fix access to the store, or choose another " + OUT + "."
            ) from exc
        if table is not None:
            self.check_schema(table, table_uri(location), before_fetch=True)

    def partitioning(self, table: Any) -> str | None:
        partitions = list(table.metadata().partition_columns)
        if partitions == [PARTITION_KEY]:
            return None
        return ", ".join(partitions) if partitions else "nothing"

    def arrow_schema(self, table: Any) -> pa.Schema:
        return pa.schema(table.schema().to_arrow())

    def write(self, night: Night, table: Any | None, manifest: str) -> tuple[Any, int | None]:
        deltalake = _deltalake()
        location = night.location
        has_extra = table is not None and len(self.arrow_schema(table)) > len(DATED_SCHEMA)
        deltalake.write_deltalake(
            table_uri(location),
            pa.RecordBatchReader.from_batches(dated_schema(night.columns), dated_batches(night)),
            partition_by=[PARTITION_KEY],
            mode="overwrite",
            # Adds the new kept fields' columns; a night without one leaves it null.
            schema_mode="merge" if night.columns or has_extra else None,
            predicate=f"{PARTITION_KEY} = '{night.date.isoformat()}'",
            storage_options=storage_options(location),
            commit_properties=deltalake.CommitProperties(custom_metadata={MANIFEST_KEY: manifest}),
            # delta-rs's own row groups are of a million rows: a reader going a row group at
            # a time (the history) would hold 40 MiB of each column at once.
            writer_properties=deltalake.WriterProperties(
                max_row_group_size=ROW_GROUP_ROWS,
                compression=COMPRESSION.upper(),  # uncompressed, unless given
                column_properties={
                    name: deltalake.ColumnProperties(dictionary_enabled=False)
                    for name in UNDICTIONARIED
                },
            ),
        )
        written = self.open(location)
        assert written is not None
        return written, int(written.version())

    def nights(self, table: Any) -> set[dt.date]:
        return {dt.date.fromisoformat(str(p[PARTITION_KEY])) for p in table.partitions()}

    def commit_errors(self) -> tuple[type[BaseException], ...]:
        return (OSError, _deltalake().exceptions.DeltaError)

    def manifests(self, table: Any) -> Iterator[dict[str, Any]]:
        for commit in table.history():  # newest first
            manifest = commit_manifest(commit.get(MANIFEST_KEY), self.name, commit.get("version"))
            if manifest is not None:
                yield manifest

    def scan(self, location: Location, date: dt.date, version: int | None) -> pa.Table | None:
        table = self.open(location, version)
        if table is None:
            return None
        return table.to_pyarrow_table(filters=[(PARTITION_KEY, "=", date)])

    def scan_batches(
        self, location: Location, date: dt.date, version: int | None, columns: list[str]
    ) -> Iterator[pa.RecordBatch] | None:
        import pyarrow.compute as pc
        import pyarrow.dataset as ds

        table = self.open(location, version)
        if table is None:
            return None
        # One file and one batch read ahead, and no file's row groups read all at once in
        # advance: pyarrow's defaults would hold a large night's file whole.
        batches: Iterator[pa.RecordBatch] = table.to_pyarrow_dataset().to_batches(
            columns=columns,
            filter=pc.field(PARTITION_KEY) == pa.scalar(date),
            batch_size=SCAN_ROWS,
            batch_readahead=1,
            fragment_readahead=1,
            fragment_scan_options=ds.ParquetFragmentScanOptions(pre_buffer=False),
        )
        return batches

    def holds(self, location: Location) -> bool:
        """True when ``OUT/pets`` holds a Delta table (its ``_delta_log`` exists)."""
        return holds_folder(location, "_delta_log")

    def night_sizes(self, location: Location, dates: list[dt.date]) -> dict[dt.date, int]:
        table = self.open(location)
        if table is None:
            return {}
        actions = pa.table(table.get_add_actions(flatten=True))
        sizes: dict[dt.date, int] = {}
        days = actions.column(f"partition.{PARTITION_KEY}").to_pylist()
        for day, size in zip(days, actions.column("size_bytes").to_pylist(), strict=True):
            date = dt.date.fromisoformat(str(day))
            sizes[date] = sizes.get(date, 0) + int(size)
        return sizes

    def night_at_version(self, location: Location, version: int) -> SnapshotInfo | None:
        """The snapshot a given table version committed (time travel)."""
        table = self.open(location)
        if table is None:
            raise InputError(f"no Delta table at {table_uri(location)}")
        for manifest in self.manifests(table):
            if manifest.get("table_version") == version:
                date = dt.date.fromisoformat(str(manifest["snapshot_date"]))
                return SnapshotInfo(date, table_uri(location), manifest)
        raise InputError(
            f"version {version} of the Delta table {table_uri(location)} is no petsync "
            "snapshot commit; `DeltaTable(...).history()` lists the versions"
        )


FORMAT = Delta()
