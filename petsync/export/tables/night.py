"""What a table format's commit needs of the export run, and nothing more.

The run (:mod:`petsync.export.run`) calls a table format to commit its night; the format
takes this protocol instead of the run's own class, so the imports run one way: run ->
tables, never back.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Protocol

from petsync.export.config import ExportConfig
from petsync.export.extra_fields import ExtraFieldsReport
from petsync.export.fetch import FetchResult
from petsync.export.report import DropCheck, ExportReport
from petsync.export.tallies import CollectedPets


class StagedFiles(Protocol):
    """The run's staging area: where its files (the quarantine) were written."""

    def file(self, name: str) -> Path: ...


class HeldLock(Protocol):
    """The run's lock: proven still held right before the commit."""

    def confirm(self) -> None: ...


class Night(Protocol):
    """One export run, as a table format sees it."""

    @property
    def config(self) -> ExportConfig: ...
    @property
    def date(self) -> dt.date: ...
    @property
    def staged(self) -> StagedFiles: ...
    @property
    def lock(self) -> HeldLock: ...

    def report(
        self,
        fetched: FetchResult,
        collected: CollectedPets,
        drop: DropCheck,
        extra_fields: ExtraFieldsReport | None = None,
    ) -> ExportReport: ...
