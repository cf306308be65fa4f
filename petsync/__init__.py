"""petsync: nightly catalogue export and bulk import for the Petstore API.

The public library API is listed in ``__all__``; everything else is internal.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from petsync._version import __version__
from petsync.core.apikey import ApiKey, redact
from petsync.core.errors import (
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
from petsync.core.interface import API_VERSION
from petsync.core.models import ErrorBody, NewPet, Pet, PetStatus
from petsync.export.config import ExportConfig
from petsync.importer.config import ImportConfig
from petsync.ops.logs import configure_logging
from petsync.ops.metrics import RunMetrics, write_metrics
from petsync.ops.settings import Target, resolve_target

if TYPE_CHECKING:
    from petsync.client.client import CheckReport, FetchedPet, PetstoreClient
    from petsync.client.config import ClientConfig, RetryPolicy
    from petsync.client.listing import InvalidRecord, Listing, Page
    from petsync.export.inventory import NightSummary, describe_snapshots
    from petsync.export.outcome import ExportReport
    from petsync.export.run import run_export
    from petsync.formats.snapshots import (
        FlaggedSnapshotWarning,
        list_snapshots,
        load_snapshot,
        load_snapshots,
    )
    from petsync.history.diff import SnapshotDiff, diff_snapshots
    from petsync.history.load import load_history, load_transitions, transitions
    from petsync.history.update import HistoryReport, update_history
    from petsync.importer.outcome import ImportReport
    from petsync.importer.run import run_import
    from petsync.report.write import ReportResult, write_report
    from petsync.server.app import ServerConfig
    from petsync.server.faults import Faults
    from petsync.server.runner import RunningServer, start_server
    from petsync.storage.layout import SnapshotInfo

# Names whose modules pull in httpx, msgspec, pandas or pyarrow load on first use, so
# `import petsync` and `petsync --help` stay fast: name -> module.
_LAZY: dict[str, str] = {
    "ClientConfig": "petsync.client.config",
    "RetryPolicy": "petsync.client.config",
    "CheckReport": "petsync.client.client",
    "FetchedPet": "petsync.client.client",
    "PetstoreClient": "petsync.client.client",
    "InvalidRecord": "petsync.client.listing",
    "Listing": "petsync.client.listing",
    "Page": "petsync.client.listing",
    "run_import": "petsync.importer.run",
    "ImportReport": "petsync.importer.outcome",
    "ExportReport": "petsync.export.outcome",
    "run_export": "petsync.export.run",
    "SnapshotInfo": "petsync.storage.layout",
    "FlaggedSnapshotWarning": "petsync.formats.snapshots",
    "list_snapshots": "petsync.formats.snapshots",
    "load_snapshot": "petsync.formats.snapshots",
    "load_snapshots": "petsync.formats.snapshots",
    "SnapshotDiff": "petsync.history.diff",
    "NightSummary": "petsync.export.inventory",
    "describe_snapshots": "petsync.export.inventory",
    "diff_snapshots": "petsync.history.diff",
    "HistoryReport": "petsync.history.update",
    "update_history": "petsync.history.update",
    "load_history": "petsync.history.load",
    "load_transitions": "petsync.history.load",
    "transitions": "petsync.history.load",
    "ReportResult": "petsync.report.write",
    "write_report": "petsync.report.write",
    # The reference server (Starlette, uvicorn) also loads on first use.
    "ServerConfig": "petsync.server.app",
    "Faults": "petsync.server.faults",
    "RunningServer": "petsync.server.runner",
    "start_server": "petsync.server.runner",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'petsync' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = [
    "API_VERSION",
    "ApiError",
    "ApiKey",
    "AuthenticationError",
    "CheckReport",
    "ClientConfig",
    "ConfigError",
    "ErrorBody",
    "ExitCode",
    "ExportConfig",
    "ExportReport",
    "Faults",
    "FetchedPet",
    "FlaggedSnapshotWarning",
    "HistoryReport",
    "ImportConfig",
    "ImportReport",
    "IncompleteError",
    "InputError",
    "InvalidRecord",
    "Listing",
    "LockedError",
    "NewPet",
    "NotFoundError",
    "OutcomeUnknownError",
    "NightSummary",
    "Page",
    "PaginationError",
    "Pet",
    "PetStatus",
    "PetsyncError",
    "PetstoreClient",
    "ProtocolError",
    "ReportResult",
    "RetriesExhaustedError",
    "RetryPolicy",
    "RunMetrics",
    "RunningServer",
    "ServerConfig",
    "SnapshotDiff",
    "SnapshotInfo",
    "Target",
    "TransportError",
    "UsageError",
    "__version__",
    "configure_logging",
    "describe_snapshots",
    "diff_snapshots",
    "list_snapshots",
    "load_history",
    "load_snapshot",
    "load_snapshots",
    "load_transitions",
    "redact",
    "resolve_target",
    "run_export",
    "run_import",
    "start_server",
    "transitions",
    "update_history",
    "write_metrics",
    "write_report",
]
