"""The pyarrow file system of a location, checked before the first API request.

Credentials come only from each provider's standard chain, never from petsync's files:

* S3: ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/``AWS_SESSION_TOKEN``, ``AWS_PROFILE``
  and the shared config files, web identity, container and instance roles (the AWS SDK's
  default chain, run by pyarrow). An S3-compatible store (MinIO, Ceph, R2) is named by
  ``AWS_ENDPOINT_URL_S3`` or ``AWS_ENDPOINT_URL``, the region by ``AWS_REGION`` or
  ``AWS_DEFAULT_REGION``. pyarrow's S3 client does not read the endpoint variables itself,
  so they are read here and passed on.
* GCS and Azure: chosen in Python before the store's client exists, from the ecosystem's
  settings (``STORAGE_EMULATOR_HOST``, ``GOOGLE_APPLICATION_CREDENTIALS``, ADC;
  ``AZURE_STORAGE_CONNECTION_STRING``, an account key, a SAS token, a service principal,
  ``DefaultAzureCredential``): see :mod:`petsync.storage.credentials`. Nothing
  usable is exit 2 at once, never a client's abort or its minutes of retries.

:func:`store_error` is the one boundary where a store's ``OSError`` becomes a
:class:`~petsync.core.errors.PetsyncError`: it names the bucket and the fix, and the values
of the secret variables are redacted from whatever the store said.

A local directory is read through :class:`CheckedLocalFiles`: pyarrow's local file system,
except that a file opened for reading is first proven a regular file (as
:mod:`petsync.core.reading` proves every other local input), so a FIFO, device or folder
planted where a snapshot, manifest or history file belongs is exit 2 naming it, never a
read that blocks for ever or a night silently taken for unpublished.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Mapping
from typing import Literal
from urllib.parse import urlsplit

import pyarrow.fs as pafs

from petsync.core.apikey import ApiKey, redact
from petsync.core.errors import ConfigError, PetsyncError
from petsync.core.reading import regular_descriptor
from petsync.core.settings_table import OUT
from petsync.storage.credentials import (
    AZURE_CONNECTION_VARIABLE,
    AZURE_FIX,
    GCS_FIX,
    StoreAccess,
    environment_settings,
    parse_connection_string,
    resolve_access,
)
from petsync.storage.location import Location

# Values that must never reach a message, even when a store echoes them back.
SECRET_VARIABLES: tuple[str, ...] = (
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AZURE_CLIENT_SECRET",
    "AZURE_STORAGE_KEY",
    "AZURE_STORAGE_ACCOUNT_KEY",
    "AZURE_STORAGE_SAS_TOKEN",
    "AZURE_STORAGE_CONNECTION_STRING",
)
CONNECT_TIMEOUT_SECONDS = 10.0
REQUEST_TIMEOUT_SECONDS = 60.0
S3_ATTEMPTS = 4
# GCS: the client's total time retrying one call (its default is about a quarter hour).
GCS_RETRY_SECONDS = 20.0

Problem = Literal["credentials", "unreachable", "missing", "other"]

_CREDENTIAL_WORDS = re.compile(
    r"ACCESS_DENIED|INVALID_ACCESS_KEY_ID|SIGNATURE_DOES_NOT_MATCH|EXPIRED_TOKEN|"
    r"MISSING_AUTHENTICATION_TOKEN|UNRECOGNIZED_CLIENT|InvalidAccessKeyId|AccessDenied|"
    r"SignatureDoesNotMatch|AuthenticationFailed|AuthorizationFailure|PERMISSION_DENIED|"
    r"Unauthorized|Forbidden|No response body|credentials",
    re.I,
)
_UNREACHABLE_WORDS = re.compile(
    r"NETWORK_CONNECTION|curlCode|Could not connect|Couldn't connect|resolve host|"
    r"Connection refused|timed out|UNAVAILABLE",
    re.I,
)
_MISSING_WORDS = re.compile(r"NO_SUCH_BUCKET|NoSuchBucket|ContainerNotFound|bucket does not exist")
_AWS_ERROR = re.compile(r"AWS Error (\w+) during (\w+) operation(?:: ([^(]{0,160}))?")


def open_filesystem(
    location: Location, environ: Mapping[str, str] | None = None
) -> pafs.FileSystem:
    """The pyarrow file system holding ``location`` (credentials: the provider's chain)."""
    env = os.environ if environ is None else environ
    if location.kind == "local":
        return pafs.PyFileSystem(CheckedLocalFiles())
    if location.kind == "s3":
        settings = environment_settings(env)
        region = settings.get("region")
        if region is None and "endpoint_override" not in settings:
            # Real AWS with no region set: ask where the bucket lives (one anonymous HEAD).
            try:
                region = pafs.resolve_s3_region(location.bucket)
            except OSError:
                region = None
        return pafs.S3FileSystem(
            region=region,
            endpoint_override=settings.get("endpoint_override"),
            connect_timeout=CONNECT_TIMEOUT_SECONDS,
            request_timeout=REQUEST_TIMEOUT_SECONDS,
            retry_strategy=pafs.AwsStandardS3RetryStrategy(max_attempts=S3_ATTEMPTS),
            # One part in memory per upload: with background writes, parts queue up in
            # memory whenever the store is slower than the writer (+70 MiB at 1M pets).
            background_writes=False,
        )
    access = resolve_access(location, env)
    if location.kind == "gcs":
        return gcs_filesystem(access)
    return azure_filesystem(access)


# Where a descriptor can be opened again as a new file (Linux): pyarrow then reads the very
# file examined, even if the name is swapped in between.
_FD_FOLDER = "/proc/self/fd"


class CheckedLocalFiles(pafs.FileSystemHandler):  # type: ignore[misc]  # pyarrow: untyped
    """pyarrow's local file system, every file opened for reading proven a regular file.

    The check is one non-blocking ``open`` and one ``fstat``; the file pyarrow then reads
    is a native file as before (no Python in the reads). A missing file is pyarrow's
    ``FileNotFoundError`` as before; anything but a regular file is an
    :class:`~petsync.core.errors.InputError` (exit 2) naming the path.
    """

    def __init__(self) -> None:
        self.local = pafs.LocalFileSystem()

    def _checked(self, path: str, opener: str) -> pafs.NativeFile:
        fd = regular_descriptor(
            path,
            path,
            "petsync reads only regular files where it keeps its snapshots and history (a "
            "pipe or device could block or never end): remove it, or export again to write "
            "it anew",
        )
        try:
            again = f"{_FD_FOLDER}/{fd}"
            return getattr(self.local, opener)(again if os.path.isdir(_FD_FOLDER) else path)
        finally:
            os.close(fd)

    def open_input_file(self, path: str) -> pafs.NativeFile:
        return self._checked(path, "open_input_file")

    def open_input_stream(self, path: str) -> pafs.NativeFile:
        return self._checked(path, "open_input_stream")

    # Everything else is pyarrow's local file system as it is.
    def get_type_name(self) -> str:
        return "petsync-local"

    def normalize_path(self, path: str) -> str:
        return str(self.local.normalize_path(path))

    def get_file_info(self, paths: list[str]) -> list[pafs.FileInfo]:
        return list(self.local.get_file_info(paths))

    def get_file_info_selector(self, selector: pafs.FileSelector) -> list[pafs.FileInfo]:
        return list(self.local.get_file_info(selector))

    def create_dir(self, path: str, recursive: bool) -> None:
        self.local.create_dir(path, recursive=recursive)

    def delete_dir(self, path: str) -> None:
        self.local.delete_dir(path)

    def delete_dir_contents(self, path: str, missing_dir_ok: bool = False) -> None:
        self.local.delete_dir_contents(path, missing_dir_ok=missing_dir_ok)

    def delete_root_dir_contents(self) -> None:
        raise PermissionError("petsync never empties the root folder")

    def delete_file(self, path: str) -> None:
        self.local.delete_file(path)

    def move(self, src: str, dest: str) -> None:
        self.local.move(src, dest)

    def copy_file(self, src: str, dest: str) -> None:
        self.local.copy_file(src, dest)

    def open_output_stream(self, path: str, metadata: dict[str, str]) -> pafs.NativeFile:
        return self.local.open_output_stream(path, metadata=metadata)

    def open_append_stream(self, path: str, metadata: dict[str, str]) -> pafs.NativeFile:
        return self.local.open_append_stream(path, metadata=metadata)


def gcs_filesystem(access: StoreAccess) -> pafs.FileSystem:
    """pyarrow's GCS client, its retries bounded by :data:`GCS_RETRY_SECONDS`."""
    options: dict[str, object] = {}
    if access.endpoint:
        parts = urlsplit(access.endpoint)
        options = {"scheme": parts.scheme or "http", "endpoint_override": parts.netloc}
    return pafs.GcsFileSystem(
        anonymous=access.anonymous,
        retry_time_limit=dt.timedelta(seconds=GCS_RETRY_SECONDS),
        **options,
    )


def azure_filesystem(access: StoreAccess) -> pafs.FileSystem:
    """pyarrow's Azure client with explicit credentials: never its own default chain
    unanswered (it aborts the process when that finds nothing), so a default credential is
    first proven in Python."""
    assert access.account is not None
    options: dict[str, str] = {}
    if access.endpoint:
        parts = urlsplit(access.endpoint)
        host = parts.netloc
        options = {
            "blob_storage_authority": host,
            "dfs_storage_authority": host.replace(".blob.", ".dfs."),
            "blob_storage_scheme": parts.scheme or "https",
            "dfs_storage_scheme": parts.scheme or "https",
        }
    if access.account_key:
        options["account_key"] = access.account_key
    elif access.sas_token:
        # pyarrow appends the token to the account's URL as it is: it must start with "?".
        options["sas_token"] = "?" + access.sas_token
    elif access.client_secret:
        options["tenant_id"], options["client_id"], options["client_secret"] = access.client_secret
    elif access.default_credential:
        prove_default_azure_credential()
    return pafs.AzureFileSystem(account_name=access.account, **options)


def prove_default_azure_credential() -> None:
    """Get a storage token through azure-identity's ``DefaultAzureCredential``, or exit 2."""
    try:
        from azure.identity import DefaultAzureCredential
    except ImportError as exc:
        raise ConfigError(
            "az:// with DefaultAzureCredential needs azure-identity: pip install 'petsync[azure]'"
        ) from exc
    try:
        DefaultAzureCredential().get_token("https://storage.azure.com/.default")
    except Exception as exc:  # every credential of the chain failed: its own summary
        raise ConfigError(
            f"DefaultAzureCredential found no usable credential "
            f"({' '.join(str(exc).split())[:300]}); {AZURE_FIX}"
        ) from exc


def classify(exc: BaseException) -> Problem:
    """What a store's error means for the user: refused credentials, no route, no bucket."""
    text = str(exc)
    if _MISSING_WORDS.search(text):
        return "missing"
    if _UNREACHABLE_WORDS.search(text):
        return "unreachable"
    if _CREDENTIAL_WORDS.search(text) or isinstance(exc, PermissionError):
        return "credentials"
    return "other"


def store_error(
    location: Location,
    exc: BaseException,
    *,
    doing: str,
    before_fetch: bool,
    environ: Mapping[str, str] | None = None,
) -> PetsyncError:
    """Translate a store's error into a message naming the bucket and the fix.

    Before the first API request it is a :class:`ConfigError` (exit 2, nothing fetched);
    later a :class:`PetsyncError` (exit 1) saying that nothing was published.
    """
    env = os.environ if environ is None else environ
    problem = classify(exc)
    detail = _detail(exc, env)
    where = (
        f"bucket {location.bucket!r}"
        if location.kind != "azure"
        else (f"container {location.bucket!r}")
    )
    if problem == "credentials":
        what = (
            f"the store refused the credentials for {where} while {doing} ({detail}); "
            f"{_credential_fix(location)}"
        )
    elif problem == "unreachable":
        what = f"cannot reach the store of {where} while {doing} ({detail}); " + _reach_fix(
            location, env
        )
    elif problem == "missing":
        what = (
            f"{where} does not exist (or these credentials cannot see it) ({detail}); "
            f"create it or fix the location {location}"
        )
    else:
        what = f"the store failed while {doing} in {where} ({detail})"
    if before_fetch:
        return ConfigError(
            "cannot use " + OUT.given(str(location)) + f": {what}. Nothing was fetched."
        )
    return PetsyncError(
        f"cannot write the snapshot to {location}: {what}. Nothing was published; earlier "
        "snapshots are untouched."
    )


def check_reachable(location: Location, filesystem: pafs.FileSystem) -> None:
    """Fail with :class:`ConfigError` unless the bucket exists and the credentials may list it.

    Writing is proven next, by taking the lock (a conditional create) or a probe object.
    """
    if location.is_local:
        return
    try:
        info = filesystem.get_file_info(location.bucket)
        if info.type == pafs.FileType.NotFound:
            raise ConfigError(
                "cannot use " + OUT.given(str(location)) + f": {_container_word(location)} "
                f"{location.bucket!r} does not exist (or these credentials cannot see it); "
                "create it or fix the location. Nothing was fetched."
            )
        filesystem.get_file_info(
            pafs.FileSelector(location.store_path, allow_not_found=True, recursive=False)
        )
    except OSError as exc:
        raise store_error(location, exc, doing="checking the bucket", before_fetch=True) from exc


def _container_word(location: Location) -> str:
    return "container" if location.kind == "azure" else "bucket"


def _credential_fix(location: Location) -> str:
    if location.kind == "gcs":
        return f"check the credentials ({GCS_FIX}) and that they may list and write {location}"
    if location.kind == "azure":
        return f"check the credentials ({AZURE_FIX}) and that they may list and write {location}"
    return (
        "check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN), "
        f"AWS_PROFILE, or the instance or pod role, and that it may list and write {location}"
    )


def _reach_fix(location: Location, environ: Mapping[str, str]) -> str:
    if location.kind == "gcs":
        emulator = environ.get("STORAGE_EMULATOR_HOST", "").strip()
        shown = f"now {emulator}" if emulator else "unset, so Google Cloud itself"
        return f"check the network and, for an emulator, STORAGE_EMULATOR_HOST ({shown})"
    if location.kind == "azure":
        return (
            "check the network and, for Azurite or another endpoint, the BlobEndpoint of "
            f"{AZURE_CONNECTION_VARIABLE}"
        )
    endpoint = environment_settings(environ).get("endpoint_override")
    shown = f"now {endpoint}" if endpoint else "unset, so AWS itself"
    return f"check the network and, for an S3-compatible store, AWS_ENDPOINT_URL ({shown})"


def _detail(exc: BaseException, environ: Mapping[str, str]) -> str:
    text = str(exc)
    match = _AWS_ERROR.search(text)
    if match:
        code, operation, said = match.groups()
        text = f"{code} on {operation}" + (f": {said.strip()}" if said and said.strip() else "")
    text = " ".join(text.split())[:300]
    values = [environ[name] for name in SECRET_VARIABLES if environ.get(name, "").strip()]
    connection = parse_connection_string(environ.get(AZURE_CONNECTION_VARIABLE, ""))
    values += [v for k, v in connection.items() if k in ("AccountKey", "SharedAccessSignature")]
    return redact(text, [ApiKey(value) for value in values if value])
