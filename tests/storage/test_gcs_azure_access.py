"""gs:// and az:// fail fast and stay stoppable: credentials chosen before any store client,
exit 2 naming the fix, never an abort; a store call that hangs cannot keep SIGTERM waiting.

The subprocess tests run ``python -m petsync export`` as cron would. The store that never
answers is a loopback socket that accepts and stays silent; the test signals the run once
that socket has accepted the run's connection (what the run did, not a delay).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from petsync.cli import cli
from petsync.client.config import ClientConfig
from petsync.core.apikey import ApiKey
from petsync.core.errors import ConfigError, ExitCode, StoppedError
from petsync.core.stop import StopRequest
from petsync.export.config import ExportConfig
from petsync.export.run import run_export
from petsync.storage import credentials
from petsync.storage.credentials import (
    AZURITE_KEY,
    describe_access,
    resolve_access,
)
from petsync.storage.location import parse_location
from petsync.storage.store_calls import StoreCalls
from tests.export.emulators import clear_store_environment
from tests.export.scripted import BASE, ScriptedClient

RUN_TIMEOUT = 60.0
SECRET = "c2VjcmV0LWtleS12YWx1ZQ=="


@pytest.fixture(autouse=True)
def _bare_store_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No machine settings, no gcloud or az login, and not on Google Cloud."""
    clear_store_environment(monkeypatch)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setattr(credentials, "_GCE_PRODUCT_FILE", tmp_path / "no-product-name")


def export(out: str, client: ScriptedClient, **options: Any) -> None:
    config = ExportConfig(client=ClientConfig(BASE, ApiKey("k-secret-123")), out_dir=out, **options)
    run_export(config, client=client, today=dt.date(2026, 11, 21))


AZURE_CASES = [
    (
        {"AZURE_STORAGE_CONNECTION_STRING": f"AccountName=acct;AccountKey={SECRET}"},
        "the connection string AZURE_STORAGE_CONNECTION_STRING, account acct",
    ),
    (
        {"AZURE_STORAGE_CONNECTION_STRING": "UseDevelopmentStorage=true"},
        "the connection string AZURE_STORAGE_CONNECTION_STRING (Azurite) at "
        "http://127.0.0.1:10000/devstoreaccount1, account devstoreaccount1",
    ),
    (
        {
            "AZURE_STORAGE_CONNECTION_STRING": "BlobEndpoint=http://127.0.0.1:1/acct;"
            f"SharedAccessSignature=sv=2024&sig={SECRET}"
        },
        "the connection string AZURE_STORAGE_CONNECTION_STRING at http://127.0.0.1:1/acct, "
        "account acct",
    ),
    (
        {"AZURE_STORAGE_ACCOUNT_NAME": "acct", "AZURE_STORAGE_KEY": SECRET},
        "the account key AZURE_STORAGE_KEY, account acct",
    ),
    (
        {"AZURE_STORAGE_ACCOUNT_NAME": "acct", "AZURE_STORAGE_SAS_TOKEN": f"?sig={SECRET}"},
        "the SAS token AZURE_STORAGE_SAS_TOKEN, account acct",
    ),
    (
        {
            "AZURE_STORAGE_ACCOUNT_NAME": "acct",
            "AZURE_CLIENT_ID": "app",
            "AZURE_TENANT_ID": "tenant",
            "AZURE_CLIENT_SECRET": SECRET,
        },
        "the service principal AZURE_CLIENT_ID/AZURE_TENANT_ID/AZURE_CLIENT_SECRET, account acct",
    ),
    (
        {"AZURE_STORAGE_ACCOUNT_NAME": "acct", "AZURE_FEDERATED_TOKEN_FILE": "/var/run/token"},
        "DefaultAzureCredential (managed identity, workload identity or az login), account acct",
    ),
    (
        {"AZURE_STORAGE_ACCOUNT_NAME": "acct", "PETSYNC_AZURE_CREDENTIAL": "default"},
        "DefaultAzureCredential (managed identity, workload identity or az login), account acct",
    ),
]


@pytest.mark.parametrize(
    ("environ", "shown"),
    AZURE_CASES,
    ids=["key", "azurite", "sas-string", "account-key", "sas", "principal", "workload", "asked"],
)
def test_azure_settings_are_named_and_their_secrets_never_shown(
    environ: dict[str, str], shown: str
) -> None:
    location = parse_location("az://pets/nightly")

    described = describe_access(location, environ)

    assert described == shown
    assert SECRET not in described
    assert SECRET not in repr(resolve_access(location, environ))


def test_the_azurite_shortcut_uses_azurites_documented_account_and_key() -> None:
    access = resolve_access(
        parse_location("az://pets"),
        {"AZURE_STORAGE_CONNECTION_STRING": "UseDevelopmentStorage=true"},
    )

    assert (access.account, access.account_key) == ("devstoreaccount1", AZURITE_KEY)


def test_a_service_principal_is_handed_on_as_tenant_client_and_secret() -> None:
    # The order pyarrow's options and azure-identity's ClientSecretCredential take.
    access = resolve_access(
        parse_location("az://pets"),
        {
            "AZURE_STORAGE_ACCOUNT_NAME": "acct",
            "AZURE_CLIENT_ID": "app",
            "AZURE_TENANT_ID": "tenant",
            "AZURE_CLIENT_SECRET": "secret",
        },
    )

    assert access.client_secret == ("tenant", "app", "secret")


@pytest.mark.parametrize(
    ("environ", "shown"),
    [
        (
            {"STORAGE_EMULATOR_HOST": "127.0.0.1:4443"},
            "STORAGE_EMULATOR_HOST (an emulator, no credentials) at http://127.0.0.1:4443",
        ),
        ({"GCE_METADATA_HOST": "169.254.169.254"}, "the metadata server's service account"),
    ],
    ids=["emulator", "metadata"],
)
def test_gcs_settings_are_named(environ: dict[str, str], shown: str) -> None:
    assert describe_access(parse_location("gs://pets"), environ).startswith(shown)


def test_a_service_account_file_and_gclouds_login_are_named_by_path(tmp_path: Path) -> None:
    key_file = tmp_path / "sa.json"
    key_file.write_text('{"type": "service_account", "private_key": "secret"}')
    gcloud = tmp_path / "gcloud"
    gcloud.mkdir()
    (gcloud / "application_default_credentials.json").write_text("{}")
    location = parse_location("gs://pets")

    assert describe_access(location, {"GOOGLE_APPLICATION_CREDENTIALS": str(key_file)}) == (
        f"the credentials file GOOGLE_APPLICATION_CREDENTIALS={key_file}"
    )
    assert describe_access(location, {"CLOUDSDK_CONFIG": str(gcloud)}) == (
        f"gcloud's application default credentials "
        f"({gcloud / 'application_default_credentials.json'})"
    )


def test_a_missing_service_account_file_is_exit_2_before_any_request(tmp_path: Path) -> None:
    client = ScriptedClient([])
    os.environ["GOOGLE_APPLICATION_CREDENTIALS"] = str(tmp_path / "missing.json")
    try:
        with pytest.raises(ConfigError) as caught:
            export("gs://pets/nightly", client)
    finally:
        del os.environ["GOOGLE_APPLICATION_CREDENTIALS"]

    assert str(caught.value) == (
        f"GOOGLE_APPLICATION_CREDENTIALS={tmp_path / 'missing.json'}: no readable file there; "
        "point it at the service account's JSON key file"
    )
    assert client.requests == 0


def test_gcs_without_credentials_off_google_cloud_is_exit_2_naming_the_settings() -> None:
    client = ScriptedClient([])

    with pytest.raises(ConfigError) as caught:
        export("gs://pets/nightly", client)

    assert str(caught.value) == (
        "no Google Cloud credentials found: set GOOGLE_APPLICATION_CREDENTIALS to a "
        "service-account JSON file, run `gcloud auth application-default login`, or set "
        "STORAGE_EMULATOR_HOST for an emulator"
    )
    assert client.requests == 0


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_gcs_with_no_route_fails_within_the_retry_limit_naming_the_endpoint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    endpoint = f"http://127.0.0.1:{closed_port()}"
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", endpoint)
    monkeypatch.setattr("petsync.storage.filesystem.GCS_RETRY_SECONDS", 1.0)
    client = ScriptedClient([])

    with pytest.raises(ConfigError) as caught:
        export("gs://pets/nightly", client)

    message = str(caught.value)
    assert message.startswith(
        "cannot use out_dir='gs://pets/nightly': cannot reach the store of bucket 'pets' while "
        "checking the bucket ("
    )
    assert f"STORAGE_EMULATOR_HOST (now {endpoint})" in message
    assert client.requests == 0


def cron_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "PETSYNC_API_KEY": "k-secret-123",
        "PYTHONPATH": os.pathsep.join(sys.path),
        **extra,
    }


def test_az_with_an_account_and_no_credentials_exits_2_naming_the_fix_not_aborting(
    tmp_path: Path,
) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "petsync",
            "export",
            "--base-url",
            BASE,
            "--out",
            "az://pets/nightly",
        ],
        env=cron_env(tmp_path, AZURE_STORAGE_ACCOUNT_NAME="acct"),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )

    assert done.returncode == 2, done.stderr
    assert "terminate called" not in done.stderr
    assert "no Azure credentials found for account acct: set AZURE_STORAGE_CONNECTION_STRING" in (
        done.stderr
    )


def test_config_show_names_the_store_credentials_without_their_secret(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", f"AccountName=acct;AccountKey={SECRET}")

    result = CliRunner().invoke(
        cli, ["config", "show", "--base-url", BASE, "--out", "az://pets/nightly"]
    )

    assert result.exit_code == 0, result.output
    assert (
        "store         az://pets/nightly  [the connection string "
        "AZURE_STORAGE_CONNECTION_STRING, account acct]"
    ) in result.output.splitlines()
    assert SECRET not in result.output


class Silent:
    """A loopback store that accepts connections and never answers."""

    def __init__(self) -> None:
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        self.listener.settimeout(RUN_TIMEOUT)
        self.port = int(self.listener.getsockname()[1])
        self.accepted: list[socket.socket] = []

    def wait_for_a_connection(self) -> None:
        connection, _ = self.listener.accept()  # bounded by the timeout above
        self.accepted.append(connection)

    def close(self) -> None:
        for connection in self.accepted:
            connection.close()
        self.listener.close()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "ctrl-c"])
def test_a_signal_acts_within_the_grace_period_while_a_store_call_hangs(
    tmp_path: Path, sig: signal.Signals
) -> None:
    silent = Silent()
    process = subprocess.Popen(
        [sys.executable, "-m", "petsync", "export", "--base-url", BASE,
         "--out", "gs://pets/nightly", "--grace", "1"],
        env=cron_env(tmp_path, STORAGE_EMULATOR_HOST=f"http://127.0.0.1:{silent.port}"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        silent.wait_for_a_connection()  # the run is inside the store client's call now
        process.send_signal(sig)
        _, stderr = process.communicate(timeout=RUN_TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=RUN_TIMEOUT)
        silent.close()

    assert process.returncode == 128 + sig, stderr
    assert f"petsync: {sig.name} received: stopping" in stderr
    assert "while opening the store" in stderr or "while taking the lock" in stderr
    assert "did not finish within the grace period (1 s)" in stderr


def test_a_store_step_that_outlives_its_limit_is_left_behind_as_exit_2() -> None:
    ticks = iter(range(0, 1000, 30))
    calls = StoreCalls(None, location="gs://pets", monotonic=lambda: float(next(ticks)))
    blocked = StopRequest()  # an Event nobody sets: the step blocks until the test ends

    with pytest.raises(ConfigError) as caught:
        calls.run(
            lambda: blocked.wait(RUN_TIMEOUT), doing="checking", limit=60.0, before_fetch=True
        )

    blocked.request("test over")
    assert caught.value.exit_code == ExitCode.USAGE
    assert str(caught.value) == (
        "cannot use out_dir='gs://pets': the store of gs://pets did not answer within 60 s while "
        "checking; check the network and the endpoint. Nothing was fetched."
    )
    assert calls.abandoned == "checking"


def test_a_stop_ends_a_blocked_store_step_after_the_grace_period() -> None:
    ticks = iter(range(1000))
    stop = StopRequest(grace_seconds=3)
    stop.request("SIGTERM received", signal_number=signal.SIGTERM)
    calls = StoreCalls(stop, location="gs://pets", monotonic=lambda: float(next(ticks)))
    blocked = StopRequest()

    with pytest.raises(StoppedError) as caught:
        calls.run(lambda: blocked.wait(RUN_TIMEOUT), doing="publishing", limit=None)

    blocked.request("test over")
    assert caught.value.exit_code == 143
    assert "stopped by SIGTERM while publishing on gs://pets" in str(caught.value)


def test_config_show_json_names_the_gcs_emulator_as_the_store_source(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", "http://127.0.0.1:4443")

    result = CliRunner().invoke(
        cli, ["config", "show", "--json", "--base-url", BASE, "--out", "gs://pets/nightly"]
    )

    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["store"] == {
        "value": "gs://pets/nightly",
        "source": "STORAGE_EMULATOR_HOST (an emulator, no credentials) at http://127.0.0.1:4443",
    }
