"""Where snapshots live: a local directory or a prefix of an object store.

Light on purpose (no pyarrow): the command line checks ``--out`` and ``--dir`` here before
anything is fetched. :func:`parse_location` accepts

=====================================  ==================================================
``/srv/petsync``, ``snapshots``        a local directory
``file:///srv/petsync``                the same, as a URI
``s3://bucket/prefix``                 Amazon S3 and S3-compatible stores (MinIO, Ceph, R2)
``gs://bucket/prefix``                 Google Cloud Storage (``gcs://`` too)
``abfs://container@account.dfs.core.windows.net/prefix``   Azure (``abfss://`` too)
``az://container/prefix``              Azure, the account from ``AZURE_STORAGE_ACCOUNT_NAME``
=====================================  ==================================================

and refuses anything else before a request is made (exit 2). Credentials never come from
the location: a URI carrying a user, a password or query settings is refused, because
``--out`` ends up in manifests, logs and process lists. They come from each provider's
standard chain (see :mod:`petsync.storage.filesystem`).

>>> parse_location("s3://archive/petsync/").uri
's3://archive/petsync'
>>> parse_location("s3://archive/petsync").child("pets", "x.parquet")
's3://archive/petsync/pets/x.parquet'
>>> parse_location("snapshots").local
PosixPath('snapshots')
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import unquote, urlsplit

from petsync.core.errors import ConfigError
from petsync.core.settings_table import OUT
from petsync.core.wording import Said, Setting, words

StoreKind = Literal["local", "s3", "gcs", "azure"]

# Scheme -> store; the one list of what --out, --dir and load_snapshot accept.
SCHEMES: dict[str, StoreKind] = {
    "file": "local",
    "s3": "s3",
    "s3a": "s3",
    "gs": "gcs",
    "gcs": "gcs",
    "abfs": "azure",
    "abfss": "azure",
    "az": "azure",
}
ACCEPTED = "a local path, file://, s3://, gs://, abfs:// or az://"
AZURE_ACCOUNT_VARIABLE = "AZURE_STORAGE_ACCOUNT_NAME"

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_AZURE_HOST = re.compile(r"^(?P<account>[a-z0-9]+)\.(dfs|blob)\.core\.windows\.net$")
_BUCKET = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{1,221}[A-Za-z0-9]$")


@dataclass(frozen=True)
class Location:
    """A parsed output location: a local directory, or a bucket and key prefix.

    ``uri`` is how it is shown and joined (no trailing slash); for a local directory it is
    the path as given. ``bucket`` is the bucket (S3, GCS) or container (Azure), ``prefix``
    the keys' common start without slashes at either end, ``account`` the Azure storage
    account when the URI names one.
    """

    kind: StoreKind
    uri: str
    local: Path | None = None
    bucket: str = ""
    prefix: str = ""
    account: str | None = None

    @property
    def is_local(self) -> bool:
        return self.local is not None

    @property
    def store_path(self) -> str:
        """The location as a path of its pyarrow file system (``bucket/prefix``)."""
        if self.local is not None:
            return str(self.local.absolute())
        return f"{self.bucket}/{self.prefix}" if self.prefix else self.bucket

    def child(self, *parts: str) -> str:
        """The URI (or local path) of ``parts`` under this location."""
        if self.local is not None:
            return str(self.local.joinpath(*parts))
        return "/".join([self.uri, *parts])

    def store_child(self, *parts: str) -> str:
        """The store path (see :attr:`store_path`) of ``parts`` under this location."""
        return "/".join([self.store_path, *parts])

    def __str__(self) -> str:
        return self.uri


def is_uri(value: str | Path) -> bool:
    """True when ``value`` is written as ``scheme://...`` (not a plain path)."""
    return isinstance(value, str) and _SCHEME.match(value) is not None


def parse_location(value: str | Path, *, what: Said | Setting = OUT) -> Location:
    """Parse a local path or an object-store URI; raise :class:`ConfigError` (exit 2) if not one.

    ``what`` names the setting in messages: a :class:`Setting` (the export's ``OUT``), or
    a word (``"directory"``, ``"snapshot"``).
    """
    if isinstance(value, Path) or not is_uri(value):
        return Location(kind="local", uri=str(value), local=Path(value))
    match = _SCHEME.match(value)
    assert match is not None  # is_uri said so
    scheme = match.group(1).lower()
    kind = SCHEMES.get(scheme)
    if kind is None:
        raise ConfigError(
            _named(what, value)
            + f": petsync cannot write snapshots to {scheme}:// locations; use {ACCEPTED}"
        )
    parts = urlsplit(value)
    azure_account_form = (
        kind == "azure" and parts.password is None and _azure_account(parts.hostname) is not None
    )
    if "@" in parts.netloc and not azure_account_form:
        raise ConfigError(
            what + ": the location carries credentials; remove them from the URI and "
            "let the store's standard chain provide them (for S3: AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or an instance or pod role)"
        )
    if parts.query or parts.fragment:
        raise ConfigError(
            _named(what, _without_query(value)) + ": settings in the URI (?...) are not read; set "
            "them in the environment instead (for S3-compatible stores AWS_ENDPOINT_URL and "
            "AWS_REGION)"
        )
    if kind == "local":
        if parts.netloc not in ("", "localhost"):
            raise ConfigError(
                _named(what, value) + ": a file:// URI names no host; use file:///path"
            )
        path = Path(unquote(parts.path) or "/")
        return Location(kind="local", uri=str(path), local=path)
    account = None
    bucket = parts.netloc
    if kind == "azure" and "@" in parts.netloc:
        bucket = parts.username or ""
        account = _azure_account(parts.hostname)
    prefix = unquote(parts.path).strip("/")
    if not bucket or not _BUCKET.match(bucket):
        raise ConfigError(
            _named(what, value)
            + f": no valid bucket or container name; write it as {scheme}://BUCKET/PREFIX"
        )
    if any(segment in ("", ".", "..") for segment in prefix.split("/") if prefix):
        raise ConfigError(_named(what, value) + ": the prefix has an empty, '.' or '..' segment")
    uri = f"{scheme}://{parts.netloc}" + (f"/{prefix}" if prefix else "")
    return Location(kind=kind, uri=uri, bucket=bucket, prefix=prefix, account=account)


def _named(what: Said | Setting, value: str) -> Said:
    """The location as a message names it: the setting given it (``--out s3://b``), or
    the word for it and the value (``directory s3://b``)."""
    return words(what.given(value)) if isinstance(what, Setting) else what + f" {value}"


def _azure_account(host: str | None) -> str | None:
    match = _AZURE_HOST.match(host or "")
    return match.group("account") if match else None


def _without_query(value: str) -> str:
    return value.split("?", 1)[0].split("#", 1)[0]
