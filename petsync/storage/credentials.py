"""Which credentials and endpoint a run on GCS or Azure uses, decided in Python first.

The stores' own C++ clients (in pyarrow) find credentials on their own, but they do it
badly for a nightly job: Azure's throws through C++ and aborts the process when its default
credential finds nothing, and GCS's retries for many minutes before it says so. So the
choice is made here, from the ecosystem's settings, before a store client exists; with
nothing usable the run stops with :class:`~petsync.core.errors.ConfigError` (exit 2)
naming the settings to set. ``petsync config show --out URI`` prints :attr:`source`.

GCS, in this order:

1. ``STORAGE_EMULATOR_HOST`` (``http://127.0.0.1:4443``): an emulator, no credentials.
2. ``GOOGLE_APPLICATION_CREDENTIALS``: a service-account (or other credentials) JSON file.
3. gcloud's ``application_default_credentials.json`` (``gcloud auth application-default
   login``), under ``CLOUDSDK_CONFIG`` or ``~/.config/gcloud``.
4. The metadata server, where there is one (Compute Engine, GKE, Cloud Run, Functions).

Azure, in this order (the account from the URI, the connection string or
``AZURE_STORAGE_ACCOUNT_NAME``):

1. ``AZURE_STORAGE_CONNECTION_STRING`` (account key or SAS, and the endpoint: Azurite's
   ``UseDevelopmentStorage=true`` too).
2. ``AZURE_STORAGE_KEY`` (or ``AZURE_STORAGE_ACCOUNT_KEY``): the account key.
3. ``AZURE_STORAGE_SAS_TOKEN``: a shared access signature.
4. ``AZURE_CLIENT_ID``, ``AZURE_TENANT_ID`` and ``AZURE_CLIENT_SECRET``: a service principal.
5. ``DefaultAzureCredential`` when the environment shows one of its sources (workload
   identity's ``AZURE_FEDERATED_TOKEN_FILE``, a managed identity's ``IDENTITY_ENDPOINT`` or
   ``MSI_ENDPOINT``, ``AZURE_CLIENT_ID`` alone, the Azure CLI's login), or when
   ``PETSYNC_AZURE_CREDENTIAL=default`` asks for it (a VM's system-assigned identity shows
   nothing). It is tried in Python (``azure-identity``) before the store is opened.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from petsync.core.errors import ConfigError
from petsync.storage.location import AZURE_ACCOUNT_VARIABLE, Location

GCS_EMULATOR_VARIABLE = "STORAGE_EMULATOR_HOST"
GCS_CREDENTIALS_VARIABLE = "GOOGLE_APPLICATION_CREDENTIALS"
AZURE_CONNECTION_VARIABLE = "AZURE_STORAGE_CONNECTION_STRING"
AZURE_KEY_VARIABLES: tuple[str, ...] = ("AZURE_STORAGE_KEY", "AZURE_STORAGE_ACCOUNT_KEY")
AZURE_SAS_VARIABLE = "AZURE_STORAGE_SAS_TOKEN"
AZURE_SERVICE_PRINCIPAL: tuple[str, ...] = (
    "AZURE_CLIENT_ID",
    "AZURE_TENANT_ID",
    "AZURE_CLIENT_SECRET",
)
AZURE_DEFAULT_SOURCES: tuple[str, ...] = (
    "AZURE_FEDERATED_TOKEN_FILE",
    "IDENTITY_ENDPOINT",
    "MSI_ENDPOINT",
    "AZURE_CLIENT_ID",
)
AZURE_CHOICE_VARIABLE = "PETSYNC_AZURE_CREDENTIAL"
# Azurite's documented development account (public, the same in every installation).
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)
AZURITE_BLOB_ENDPOINT = f"http://127.0.0.1:10000/{AZURITE_ACCOUNT}"
# Where Google's own libraries find a metadata server without asking one.
_GCP_RUNTIME_VARIABLES: tuple[str, ...] = ("GCE_METADATA_HOST", "K_SERVICE", "FUNCTION_TARGET")
_GCE_PRODUCT_FILE = Path("/sys/class/dmi/id/product_name")

AZURE_FIX = (
    f"set {AZURE_CONNECTION_VARIABLE} (for Azurite: UseDevelopmentStorage=true), "
    f"{AZURE_KEY_VARIABLES[0]} or {AZURE_SAS_VARIABLE} with {AZURE_ACCOUNT_VARIABLE}, or "
    "AZURE_CLIENT_ID, AZURE_TENANT_ID and AZURE_CLIENT_SECRET; or log in with `az login`, "
    f"or set {AZURE_CHOICE_VARIABLE}=default for a managed identity"
)
GCS_FIX = (
    f"set {GCS_CREDENTIALS_VARIABLE} to a service-account JSON file, run `gcloud auth "
    f"application-default login`, or set {GCS_EMULATOR_VARIABLE} for an emulator"
)


@dataclass(frozen=True)
class StoreAccess:
    """How a run reaches a GCS or Azure location: what pyarrow and the lock are given.

    ``source`` names the setting in use, never its secret. ``secrets`` are the values no
    message may show. ``endpoint`` is ``scheme://host:port`` of an emulator or a custom
    endpoint (None for the public cloud). ``credentials_file`` is the GCS credentials JSON
    petsync found (a service account's or gcloud's), for the table engines to read too.
    """

    kind: str
    source: str
    account: str | None = None
    endpoint: str | None = None
    account_key: str | None = field(default=None, repr=False)
    sas_token: str | None = field(default=None, repr=False)
    # (tenant, client id, secret)
    client_secret: tuple[str, str, str] | None = field(default=None, repr=False)
    default_credential: bool = False
    anonymous: bool = False
    credentials_file: str | None = None
    secrets: tuple[str, ...] = field(default=(), repr=False)

    @property
    def blob_url(self) -> str:
        """The Blob service's URL of the account (Azure)."""
        if self.endpoint:
            return self.endpoint.rstrip("/")
        return f"https://{self.account}.blob.core.windows.net"


def resolve_access(location: Location, environ: Mapping[str, str] | None = None) -> StoreAccess:
    """The credentials a run on ``location`` (gs:// or az://) would use; exit 2 if none."""
    env = os.environ if environ is None else environ
    if location.kind == "gcs":
        return _gcs_access(env)
    if location.kind == "azure":
        return _azure_access(location, env)
    raise ValueError(f"{location}: no GCS or Azure location")


def describe_access(location: Location, environ: Mapping[str, str] | None = None) -> str:
    """One line for ``config show``: which credentials a run on ``location`` would use."""
    env = os.environ if environ is None else environ
    if location.kind == "s3":
        endpoint = environment_settings(env).get("endpoint_override")
        return "the AWS SDK's default chain" + (f" at {endpoint}" if endpoint else "")
    if location.is_local:
        return "the local file system"
    try:
        access = resolve_access(location, env)
    except ConfigError as exc:
        return f"none usable ({exc})"
    where = f" at {access.endpoint}" if access.endpoint else ""
    account = f", account {access.account}" if access.account else ""
    return f"{access.source}{where}{account}"


def _gcs_access(env: Mapping[str, str]) -> StoreAccess:
    emulator = env.get(GCS_EMULATOR_VARIABLE, "").strip()
    if emulator:
        url = emulator if "://" in emulator else f"http://{emulator}"
        return StoreAccess(
            "gcs",
            f"{GCS_EMULATOR_VARIABLE} (an emulator, no credentials)",
            endpoint=url,
            anonymous=True,
        )
    path = env.get(GCS_CREDENTIALS_VARIABLE, "").strip()
    if path:
        if not Path(path).is_file() or not os.access(path, os.R_OK):
            raise ConfigError(
                f"{GCS_CREDENTIALS_VARIABLE}={path}: no readable file there; point it at "
                "the service account's JSON key file"
            )
        return StoreAccess(
            "gcs", f"the credentials file {GCS_CREDENTIALS_VARIABLE}={path}", credentials_file=path
        )
    gcloud = _gcloud_adc(env)
    if gcloud is not None:
        return StoreAccess(
            "gcs",
            f"gcloud's application default credentials ({gcloud})",
            credentials_file=str(gcloud),
        )
    if _on_google_cloud(env):
        return StoreAccess("gcs", "the metadata server's service account (Google Cloud)")
    raise ConfigError(f"no Google Cloud credentials found: {GCS_FIX}")


def _gcloud_adc(env: Mapping[str, str]) -> Path | None:
    config = env.get("CLOUDSDK_CONFIG", "").strip()
    home = env.get("HOME", "").strip()
    folder = Path(config) if config else (Path(home) / ".config" / "gcloud" if home else None)
    if folder is None:
        return None
    path = folder / "application_default_credentials.json"
    return path if path.is_file() else None


def _on_google_cloud(env: Mapping[str, str]) -> bool:
    if any(env.get(name, "").strip() for name in _GCP_RUNTIME_VARIABLES):
        return True
    try:
        return "Google" in _GCE_PRODUCT_FILE.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def parse_connection_string(text: str) -> dict[str, str]:
    """``Key=Value;...`` of an Azure connection string (values may hold ``=``).

    >>> parse_connection_string("AccountName=a;AccountKey=k==;BlobEndpoint=http://h:1/a")
    {'AccountName': 'a', 'AccountKey': 'k==', 'BlobEndpoint': 'http://h:1/a'}
    """
    parts: dict[str, str] = {}
    for item in text.split(";"):
        name, sep, value = item.strip().partition("=")
        if sep and name.strip():
            parts[name.strip()] = value.strip()
    return parts


def _azure_access(location: Location, env: Mapping[str, str]) -> StoreAccess:
    account = location.account or env.get(AZURE_ACCOUNT_VARIABLE, "").strip() or None
    connection = env.get(AZURE_CONNECTION_VARIABLE, "").strip()
    if connection:
        return _from_connection_string(connection, account)
    if account is None:
        raise ConfigError(
            f"{location}: no Azure storage account; write the URI as "
            f"abfs://CONTAINER@ACCOUNT.dfs.core.windows.net/PREFIX, set "
            f"{AZURE_ACCOUNT_VARIABLE}, or set {AZURE_CONNECTION_VARIABLE}"
        )
    for name in AZURE_KEY_VARIABLES:
        key = env.get(name, "").strip()
        if key:
            return StoreAccess(
                "azure",
                f"the account key {name}",
                account=account,
                account_key=key,
                secrets=(key,),
            )
    sas = env.get(AZURE_SAS_VARIABLE, "").strip()
    if sas:
        return StoreAccess(
            "azure",
            f"the SAS token {AZURE_SAS_VARIABLE}",
            account=account,
            sas_token=sas.lstrip("?"),
            secrets=(sas,),
        )
    client, tenant, secret = (env.get(n, "").strip() for n in AZURE_SERVICE_PRINCIPAL)
    if tenant and client and secret:
        return StoreAccess(
            "azure",
            "the service principal AZURE_CLIENT_ID/AZURE_TENANT_ID/AZURE_CLIENT_SECRET",
            account=account,
            client_secret=(tenant, client, secret),
            secrets=(secret,),
        )
    if _default_credential_possible(env):
        return StoreAccess(
            "azure",
            "DefaultAzureCredential (managed identity, workload identity or az login)",
            account=account,
            default_credential=True,
        )
    raise ConfigError(f"no Azure credentials found for account {account}: {AZURE_FIX}")


def _from_connection_string(connection: str, account: str | None) -> StoreAccess:
    parts = parse_connection_string(connection)
    source = f"the connection string {AZURE_CONNECTION_VARIABLE}"
    if parts.get("UseDevelopmentStorage", "").lower() == "true":
        proxy = parts.get("DevelopmentStorageProxyUri")
        proxy_endpoint = (
            f"{proxy.rstrip('/')}/{AZURITE_ACCOUNT}" if proxy else AZURITE_BLOB_ENDPOINT
        )
        return StoreAccess(
            "azure",
            source + " (Azurite)",
            account=AZURITE_ACCOUNT,
            endpoint=proxy_endpoint,
            account_key=AZURITE_KEY,
        )
    named = parts.get("AccountName") or account
    key = parts.get("AccountKey") or None
    sas = (parts.get("SharedAccessSignature") or "").lstrip("?") or None
    endpoint: str | None = parts.get("BlobEndpoint") or None
    if named is None and endpoint:
        named = _account_of_endpoint(endpoint)
    if named is None or (key is None and sas is None):
        raise ConfigError(
            f"{AZURE_CONNECTION_VARIABLE}: the connection string needs AccountName and "
            "AccountKey (or BlobEndpoint and SharedAccessSignature); copy it whole from the "
            "storage account's 'Access keys' page"
        )
    if endpoint is None and parts.get("EndpointSuffix"):
        scheme = parts.get("DefaultEndpointsProtocol", "https")
        endpoint = f"{scheme}://{named}.blob.{parts['EndpointSuffix']}"
    return StoreAccess(
        "azure",
        source,
        account=named,
        endpoint=endpoint,
        account_key=key,
        sas_token=sas,
        secrets=tuple(s for s in (key, sas) if s),
    )


def _account_of_endpoint(endpoint: str) -> str | None:
    parts = urlsplit(endpoint)
    host = parts.hostname or ""
    if host.endswith(".blob.core.windows.net"):
        return host.split(".", 1)[0]
    path = parts.path.strip("/")
    return path.split("/", 1)[0] if path else None


def _default_credential_possible(env: Mapping[str, str]) -> bool:
    if env.get(AZURE_CHOICE_VARIABLE, "").strip().lower() == "default":
        return True
    if any(env.get(name, "").strip() for name in AZURE_DEFAULT_SOURCES):
        return True
    config = env.get("AZURE_CONFIG_DIR", "").strip()
    home = env.get("HOME", "").strip()
    folder = Path(config) if config else (Path(home) / ".azure" if home else None)
    return folder is not None and (folder / "msal_token_cache.json").is_file()


ENDPOINT_VARIABLES: tuple[str, ...] = ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
REGION_VARIABLES: tuple[str, ...] = ("AWS_REGION", "AWS_DEFAULT_REGION")


def environment_settings(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The S3 endpoint and region the environment sets (empty values count as unset)."""
    env = os.environ if environ is None else environ
    found: dict[str, str] = {}
    endpoint = next((env[v].strip() for v in ENDPOINT_VARIABLES if env.get(v, "").strip()), "")
    region = next((env[v].strip() for v in REGION_VARIABLES if env.get(v, "").strip()), "")
    if endpoint:
        found["endpoint_override"] = endpoint
    if region:
        found["region"] = region
    return found
