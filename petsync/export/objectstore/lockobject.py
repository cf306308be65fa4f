"""What a lock needs of one store: a small object written only under the store's conditions.

S3 (in :mod:`.lock`, through botocore), GCS (:mod:`.gcslock`) and Azure (:mod:`.azurelock`)
each give a :class:`LockObject`; :class:`~petsync.export.objectstore.lock.ObjectLock` is one
algorithm over any of them.
"""

from __future__ import annotations

import logging
from typing import Protocol

from petsync.storage.location import Location

logger = logging.getLogger("petsync.export.objectstore.lock")


class LockObject(Protocol):
    """The lock object on one store, written only under the store's conditions.

    ``create`` raises :class:`Conflict` if the object exists; ``read`` raises
    :class:`Missing` if it does not; ``replace`` raises either when the object is no
    longer the version ``tag`` names; ``delete`` never raises (the expiry frees a lock).
    Any other failure is translated by :func:`store_error` (``doing``, ``before_fetch``).
    """

    def create(self, body: bytes, *, doing: str, before_fetch: bool) -> str: ...
    def read(self, *, doing: str, before_fetch: bool) -> tuple[bytes, str]: ...
    def replace(self, body: bytes, tag: str, *, doing: str, before_fetch: bool) -> str: ...
    def delete(self, tag: str) -> None: ...
    def close(self) -> None: ...


def warn_not_released(location: Location, key: str) -> None:
    logger.warning(
        "export.lock_not_released", extra={"fields": {"lock": f"{location.bucket}/{key}"}}
    )


class Conflict(Exception):
    """A conditional write lost: the object exists, or changed."""


class Missing(Exception):
    """The lock object is not there."""
