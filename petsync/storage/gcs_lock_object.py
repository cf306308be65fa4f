"""The run lock's object on GCS, through google-cloud-storage (the ``petsync[gcs]`` extra).

GCS makes a write conditional on the object's generation: ``ifGenerationMatch=0`` creates
only if absent, ``ifGenerationMatch=<generation>`` replaces or deletes only that version;
a lost condition is ``412 Precondition Failed``. The generation is the lock's version tag.
Credentials and endpoint are the run's (:mod:`petsync.storage.credentials`);
every call is bounded by the same timeouts as the file system's.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from petsync.core.errors import ConfigError
from petsync.storage.credentials import resolve_access
from petsync.storage.filesystem import (
    CONNECT_TIMEOUT_SECONDS,
    GCS_RETRY_SECONDS,
    REQUEST_TIMEOUT_SECONDS,
    store_error,
)
from petsync.storage.location import Location
from petsync.storage.lock import Conflict, Missing, warn_not_released

# Object operations name no project; the client wants one, and would ask the metadata server.
_NO_PROJECT = "petsync-no-project"


def gcs_client(location: Location, environ: Mapping[str, str] | None = None) -> Any:
    """A google-cloud-storage client with the run's credentials and endpoint."""
    try:
        from google.auth.credentials import AnonymousCredentials
        from google.cloud import storage
    except ImportError as exc:
        raise ConfigError(
            "the lock on gs:// needs google-cloud-storage: pip install 'petsync[gcs]'"
        ) from exc
    env = os.environ if environ is None else environ
    access = resolve_access(location, env)
    project = env.get("GOOGLE_CLOUD_PROJECT", "").strip() or _NO_PROJECT
    if access.anonymous:
        return storage.Client(
            project=project,
            credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
            client_options={"api_endpoint": access.endpoint},
        )
    return storage.Client(project=project)


class GcsLockObject:
    """The lock object ``gs://BUCKET/KEY`` under ``ifGenerationMatch`` conditions."""

    def __init__(self, location: Location, key: str, *, client: Any = None) -> None:
        self.location = location
        self.key = key
        self._client = client

    def _blob(self) -> Any:
        if self._client is None:
            self._client = gcs_client(self.location)
        return self._client.bucket(self.location.bucket).blob(self.key)

    def close(self) -> None:
        return None

    def create(self, body: bytes, *, doing: str, before_fetch: bool) -> str:
        return self._upload(body, 0, doing=doing, before_fetch=before_fetch)

    def read(self, *, doing: str, before_fetch: bool) -> tuple[bytes, str]:
        blob = self._blob()
        body = self._call(
            lambda: blob.download_as_bytes(timeout=_timeout(), retry=_retry()),
            doing=doing,
            before_fetch=before_fetch,
        )
        return bytes(body), str(blob.generation)

    def replace(self, body: bytes, tag: str, *, doing: str, before_fetch: bool) -> str:
        return self._upload(body, int(tag), doing=doing, before_fetch=before_fetch)

    def delete(self, tag: str) -> None:
        from google.api_core import exceptions

        blob = self._blob()
        try:
            blob.delete(if_generation_match=int(tag), timeout=_timeout(), retry=_retry())
        except (exceptions.PreconditionFailed, exceptions.NotFound):
            return  # not ours any more, or gone
        except Exception:  # the expiry frees the lock; the run's outcome stands
            warn_not_released(self.location, self.key)

    def _upload(self, body: bytes, generation: int, *, doing: str, before_fetch: bool) -> str:
        blob = self._blob()
        self._call(
            lambda: blob.upload_from_string(
                body,
                content_type="application/json",
                if_generation_match=generation,
                timeout=_timeout(),
                retry=_retry(),
            ),
            doing=doing,
            before_fetch=before_fetch,
        )
        return str(blob.generation)

    def _call(self, call: Any, *, doing: str, before_fetch: bool) -> Any:
        from google.api_core import exceptions
        from google.auth import exceptions as auth_exceptions

        try:
            return call()
        except exceptions.PreconditionFailed as exc:
            raise Conflict from exc
        except exceptions.NotFound as exc:
            if "bucket" in str(exc).lower() and "does not exist" in str(exc).lower():
                raise store_error(
                    self.location, exc, doing=doing, before_fetch=before_fetch
                ) from exc
            raise Missing from exc
        except (exceptions.GoogleAPIError, auth_exceptions.GoogleAuthError, OSError) as exc:
            raise store_error(self.location, exc, doing=doing, before_fetch=before_fetch) from exc


def _timeout() -> tuple[float, float]:
    return (CONNECT_TIMEOUT_SECONDS, REQUEST_TIMEOUT_SECONDS)


def _retry() -> Any:
    from google.cloud.storage.retry import DEFAULT_RETRY

    # Conditional writes are safe to retry: a repeat loses its condition, never doubles.
    return DEFAULT_RETRY.with_timeout(GCS_RETRY_SECONDS)
