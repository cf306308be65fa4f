"""petsync: nightly catalogue export and bulk import for the Petstore API.

The public library API is listed in ``__all__``; everything else is internal.
"""

from __future__ import annotations

from petsync._version import API_VERSION, __version__
from petsync.apikey import ApiKey, redact
from petsync.config import ClientConfig, RetryPolicy
from petsync.errors import (
    ApiError,
    AuthenticationError,
    ConfigError,
    ExitCode,
    IncompleteError,
    InputError,
    LockedError,
    NotFoundError,
    OutcomeUnknownError,
    PaginationError,
    PetsyncError,
    ProtocolError,
    RetriesExhaustedError,
    TransportError,
    UsageError,
)
from petsync.models import ErrorBody, NewPet, Pet, PetStatus

__all__ = [
    "API_VERSION",
    "ApiError",
    "ApiKey",
    "AuthenticationError",
    "ClientConfig",
    "ConfigError",
    "ErrorBody",
    "ExitCode",
    "IncompleteError",
    "InputError",
    "LockedError",
    "NewPet",
    "NotFoundError",
    "OutcomeUnknownError",
    "PaginationError",
    "Pet",
    "PetStatus",
    "PetsyncError",
    "ProtocolError",
    "RetriesExhaustedError",
    "RetryPolicy",
    "TransportError",
    "UsageError",
    "__version__",
    "redact",
]
