"""The run lock's object on Azure Blob Storage, through azure-storage-blob (``petsync[azure]``).

Azure makes a write conditional with HTTP's own headers: ``If-None-Match: *`` creates only
if absent (``409 BlobAlreadyExists`` otherwise), ``If-Match: <etag>`` replaces or deletes
only that version (``412``). The ETag is the lock's version tag. Credentials and endpoint
are the run's (:mod:`petsync.storage.credentials`); every call has the same
timeouts as the file system's.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from petsync.core.errors import ConfigError
from petsync.storage.credentials import resolve_access
from petsync.storage.filesystem import (
    CONNECT_TIMEOUT_SECONDS,
    REQUEST_TIMEOUT_SECONDS,
    S3_ATTEMPTS,
    store_error,
)
from petsync.storage.location import Location
from petsync.storage.lock import Conflict, Missing, warn_not_released


def azure_container(location: Location, environ: Mapping[str, str] | None = None) -> Any:
    """An azure-storage-blob ``ContainerClient`` with the run's credentials and endpoint."""
    try:
        from azure.storage.blob import ContainerClient
    except ImportError as exc:
        raise ConfigError(
            "the lock on az:// needs azure-storage-blob: pip install 'petsync[azure]'"
        ) from exc
    access = resolve_access(location, os.environ if environ is None else environ)
    credential: Any
    if access.account_key:
        credential = {"account_name": access.account, "account_key": access.account_key}
    elif access.sas_token:
        credential = access.sas_token
    elif access.client_secret:
        from azure.identity import ClientSecretCredential

        credential = ClientSecretCredential(*access.client_secret)
    else:
        from azure.identity import DefaultAzureCredential

        credential = DefaultAzureCredential()
    return ContainerClient(
        access.blob_url,
        location.bucket,
        credential=credential,
        connection_timeout=CONNECT_TIMEOUT_SECONDS,
        read_timeout=REQUEST_TIMEOUT_SECONDS,
        retry_total=S3_ATTEMPTS - 1,
    )


class AzureLockObject:
    """The lock blob ``CONTAINER/KEY`` under ``If-None-Match`` / ``If-Match`` conditions."""

    def __init__(self, location: Location, key: str, *, container: Any = None) -> None:
        self.location = location
        self.key = key
        self._container = container

    def _blob(self) -> Any:
        if self._container is None:
            self._container = azure_container(self.location)
        return self._container.get_blob_client(self.key)

    def close(self) -> None:
        return None

    def create(self, body: bytes, *, doing: str, before_fetch: bool) -> str:
        from azure.core import MatchConditions

        blob = self._blob()
        answer = self._call(
            lambda: blob.upload_blob(
                body, overwrite=True, match_condition=MatchConditions.IfMissing
            ),
            doing=doing,
            before_fetch=before_fetch,
        )
        return str(answer["etag"])

    def read(self, *, doing: str, before_fetch: bool) -> tuple[bytes, str]:
        blob = self._blob()
        download = self._call(blob.download_blob, doing=doing, before_fetch=before_fetch)
        body = self._call(download.readall, doing=doing, before_fetch=before_fetch)
        return bytes(body), str(download.properties.etag)

    def replace(self, body: bytes, tag: str, *, doing: str, before_fetch: bool) -> str:
        from azure.core import MatchConditions

        blob = self._blob()
        answer = self._call(
            lambda: blob.upload_blob(
                body, overwrite=True, etag=tag, match_condition=MatchConditions.IfNotModified
            ),
            doing=doing,
            before_fetch=before_fetch,
        )
        return str(answer["etag"])

    def delete(self, tag: str) -> None:
        from azure.core import MatchConditions
        from azure.core.exceptions import AzureError, HttpResponseError

        try:
            self._blob().delete_blob(etag=tag, match_condition=MatchConditions.IfNotModified)
        except HttpResponseError as exc:
            if exc.status_code in (404, 409, 412):
                return  # not ours any more, or gone
            warn_not_released(self.location, self.key)
        except AzureError:
            warn_not_released(self.location, self.key)

    def _call(self, call: Any, *, doing: str, before_fetch: bool) -> Any:
        from azure.core.exceptions import (
            AzureError,
            ClientAuthenticationError,
            HttpResponseError,
            ResourceExistsError,
            ResourceModifiedError,
            ResourceNotFoundError,
        )

        try:
            return call()
        except (ResourceExistsError, ResourceModifiedError) as exc:
            raise Conflict from exc
        except ResourceNotFoundError as exc:
            if getattr(exc, "error_code", None) == "ContainerNotFound":
                raise store_error(
                    self.location, exc, doing=doing, before_fetch=before_fetch
                ) from exc
            raise Missing from exc
        except HttpResponseError as exc:
            if exc.status_code in (409, 412) and not isinstance(exc, ClientAuthenticationError):
                raise Conflict from exc
            raise store_error(self.location, exc, doing=doing, before_fetch=before_fetch) from exc
        except AzureError as exc:
            raise store_error(self.location, exc, doing=doing, before_fetch=before_fetch) from exc
