"""The table engines get the store settings petsync's own file systems use.

delta-rs and pyiceberg are given what :mod:`petsync.storage.credentials` chose from the
environment: the emulator or endpoint, and the credentials. The conformance suite runs
both on every emulated store; these tests pin what each engine is told, and read a Delta
table on the GCS emulator, where delta-rs cannot write (see the conformance suite's skip).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from petsync.formats.delta import storage_options
from petsync.formats.iceberg import file_properties
from petsync.formats.snapshots import list_snapshots, read_table
from petsync.storage.credentials import AZURITE_ACCOUNT, AZURITE_KEY
from petsync.storage.location import parse_location
from tests.export.emulators import EmulatedBucket, upload
from tests.formats.table_nights import DAY1, NIGHT1, export_to, ids

GCS = parse_location("gs://archive/petsync")
AZURE = parse_location("az://archive/petsync")
S3 = parse_location("s3://archive/petsync")


def test_delta_on_a_gcs_emulator_asks_no_token_server() -> None:
    options = storage_options(GCS, {"STORAGE_EMULATOR_HOST": "127.0.0.1:4443"})

    key = json.loads(options.pop("google_service_account_key"))
    assert key["gcs_base_url"] == "http://127.0.0.1:4443"
    assert key["disable_oauth"] is True
    assert options == {"allow_http": "true"}


def test_delta_on_gcs_reads_the_credentials_file_petsync_chose(tmp_path: Path) -> None:
    path = tmp_path / "key.json"
    path.write_text("{}")

    options = storage_options(GCS, {"GOOGLE_APPLICATION_CREDENTIALS": str(path)})

    assert options == {"google_application_credentials": str(path)}


def test_delta_on_azure_takes_the_connection_string_apart() -> None:
    azurite = {"AZURE_STORAGE_CONNECTION_STRING": "UseDevelopmentStorage=true"}
    assert storage_options(AZURE, azurite) == {
        "azure_storage_account_name": AZURITE_ACCOUNT,
        "azure_storage_endpoint": f"http://127.0.0.1:10000/{AZURITE_ACCOUNT}",
        "allow_http": "true",
        "azure_storage_account_key": AZURITE_KEY,
    }
    sas = {"AZURE_STORAGE_CONNECTION_STRING": "AccountName=acct;SharedAccessSignature=?sv=1"}
    assert storage_options(AZURE, sas) == {
        "azure_storage_account_name": "acct",
        "azure_storage_sas_token": "sv=1",
    }


def test_delta_on_azure_uses_a_service_principal() -> None:
    environ = {
        "AZURE_STORAGE_ACCOUNT_NAME": "acct",
        "AZURE_TENANT_ID": "t",
        "AZURE_CLIENT_ID": "c",
        "AZURE_CLIENT_SECRET": "s",
    }
    assert storage_options(AZURE, environ) == {
        "azure_storage_account_name": "acct",
        "azure_storage_tenant_id": "t",
        "azure_storage_client_id": "c",
        "azure_storage_client_secret": "s",
    }


def test_both_engines_get_the_s3_endpoint_and_region() -> None:
    environ = {"AWS_ENDPOINT_URL": "http://127.0.0.1:9000", "AWS_REGION": "eu-west-1"}

    assert storage_options(S3, environ) == {
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9000",
        "allow_http": "true",
        "AWS_REGION": "eu-west-1",
    }
    assert file_properties(S3, environ) == {
        "s3.endpoint": "http://127.0.0.1:9000",
        "s3.region": "eu-west-1",
    }


def test_iceberg_on_gcs_and_azure_goes_through_petsyncs_file_systems() -> None:
    for location in (GCS, AZURE):
        assert file_properties(location, {}) == {
            "py-io-impl": "petsync.formats.iceberg_files.StoreFileIO"
        }
    assert file_properties(parse_location("/srv/petsync"), {}) == {}


def test_delta_reads_a_table_on_the_gcs_emulator(gcs: EmulatedBucket, tmp_path: Path) -> None:
    local = tmp_path / "out"
    export_to("delta", str(local), NIGHT1, DAY1)
    upload(local, gcs)

    (night,) = list_snapshots(gcs.uri())

    assert night.date == DAY1
    assert sorted(read_table(night).column("id").to_pylist()) == sorted(ids(NIGHT1))


@pytest.mark.parametrize("environ", [{}, {"STORAGE_EMULATOR_HOST": ""}])
def test_delta_on_gcs_without_settings_adds_nothing(environ: dict[str, str]) -> None:
    # No emulator, no file: the metadata server of a Google Cloud machine (delta-rs's own).
    environ = {**environ, "GCE_METADATA_HOST": "metadata.google.internal"}
    assert storage_options(GCS, environ) == {}
