"""What one export run does: :class:`ExportConfig` and its named defaults.

Light on purpose (no pyarrow, no pandas): the command line reads the choices and
defaults from here to build its options.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from petsync.client.config import DEFAULT_PAGE_LIMIT, ClientConfig
from petsync.core.errors import ConfigError
from petsync.core.interface import CLOCK_TOLERANCE, LIMIT_MAX, LIMIT_MIN, limit_in_range
from petsync.core.models import PetStatus
from petsync.core.settings_table import (
    CONCURRENCY,
    EXTRA_FIELDS,
    FORMAT,
    KEEP,
    MAX_DROP,
    MEMORY_BUDGET,
    TABLE_FORMAT,
)
from petsync.formats.registry import DEFAULT_NAME, FORMAT_NAMES, FORMATS
from petsync.storage.location import Location, parse_location

ExportFormat = Literal["parquet", "both"]
EXPORT_FORMATS: tuple[str, ...] = ("parquet", "both")
# The formats a night can be kept in: petsync.formats.registry names them.
TABLE_FORMATS: tuple[str, ...] = FORMAT_NAMES
# What becomes of fields the API sends beyond the interface's (see export.extra_fields):
# dropped (said in the output), kept as columns, or refused (nothing published, exit 1).
ExtraFieldsMode = Literal["drop", "keep", "fail"]
EXTRA_FIELDS_MODES: tuple[ExtraFieldsMode, ...] = ("drop", "keep", "fail")
DEFAULT_EXTRA_FIELDS: ExtraFieldsMode = "drop"

DEFAULT_STATUSES: tuple[PetStatus, ...] = tuple(PetStatus)
DEFAULT_SWEEP = True
DEFAULT_FORMAT: ExportFormat = "both"  # where the format holds CSV; a table holds Parquet only
DEFAULT_TABLE_FORMAT = DEFAULT_NAME
DEFAULT_MAX_DROP = 0.20  # a fifth of the catalogue gone overnight is an outage, not a trend
# Requests in flight at once: the three statuses and the sweep side by side, and as many
# pages again read ahead where the style allows it (as the import, 8 POSTs in flight).
DEFAULT_CONCURRENCY = 8
SWEEP_LABEL = "all"  # how reports and the manifest name the unfiltered sweep
DEFAULT_MEMORY_BUDGET = 192 * 2**20  # the run's peak memory target, bytes
# What no budget moves: the interpreter with httpx, numpy and pyarrow, a listing's batch of
# rows, the Parquet row group being written (measured: about 110 MiB at 100,000 pets).
FIXED_MEMORY = 128 * 2**20
CSV_NULL = "empty unquoted field"  # documented in the README, "Files written"


@dataclass(frozen=True)
class ExportConfig:
    """What one export run does; the CLI and job files build this.

    >>> ExportConfig(client=ClientConfig("http://127.0.0.1:8080/v1", None), out_dir=Path("out"),
    ...              statuses=(PetStatus.SOLD,), sweep=False).max_drop
    0.2
    """

    client: ClientConfig
    out_dir: Path | str  # a local directory, or an object-store URI (see petsync.storage.location)
    statuses: tuple[PetStatus, ...] = DEFAULT_STATUSES
    sweep: bool = DEFAULT_SWEEP
    format: ExportFormat | None = None  # None: DEFAULT_FORMAT, or "parquet" for a table
    strict: bool = False
    keep: int | None = None
    max_drop: float = DEFAULT_MAX_DROP
    concurrency: int = DEFAULT_CONCURRENCY
    page_limit: int = DEFAULT_PAGE_LIMIT
    memory_budget: int = DEFAULT_MEMORY_BUDGET
    scratch_dir: Path | None = None
    table_format: str = DEFAULT_TABLE_FORMAT  # a name of petsync.formats.registry
    extra_fields: ExtraFieldsMode = DEFAULT_EXTRA_FIELDS
    clock_tolerance: float = CLOCK_TOLERANCE  # seconds between our clock and the API's Date

    def __post_init__(self) -> None:
        location = parse_location(self.out_dir)
        object.__setattr__(self, "out_dir", location.local or location.uri)
        if self.table_format not in TABLE_FORMATS:
            raise ConfigError(
                f"unknown table format {self.table_format!r}; use one of: "
                f"{', '.join(TABLE_FORMATS)}"
            )
        if self.extra_fields not in EXTRA_FIELDS_MODES:
            raise ConfigError(
                "unknown "
                + EXTRA_FIELDS
                + f" choice {self.extra_fields!r}; use one of: {', '.join(EXTRA_FIELDS_MODES)}"
            )
        object.__setattr__(self, "statuses", tuple(dict.fromkeys(_statuses(self.statuses))))
        if not self.statuses and not self.sweep:
            raise ConfigError("nothing to export: no status given and the sweep is off")
        holds_csv = FORMATS[self.table_format].holds_csv
        if self.format is None:
            object.__setattr__(self, "format", DEFAULT_FORMAT if holds_csv else "parquet")
        if self.format not in EXPORT_FORMATS:
            raise ConfigError(
                f"unknown export format {self.format!r}; use one of: {', '.join(EXPORT_FORMATS)}"
            )
        if self.format == "both" and not holds_csv:
            raise ConfigError(
                FORMAT.given("both") + f" writes a CSV beside each Parquet file, and a "
                f"{self.table_format.capitalize()} table ("
                + TABLE_FORMAT.given(self.table_format)
                + ") holds Parquet only: give "
                + FORMAT.given("parquet")
                + " or leave the format out"
            )
        if self.keep is not None and self.keep < 1:
            raise ConfigError(KEEP + f" must be at least 1, got {self.keep}")
        if not 0.0 <= self.max_drop <= 1.0:
            raise ConfigError(
                MAX_DROP + f" must be a fraction between 0 and 1 (0.2 = 20%), got {self.max_drop}"
            )
        if self.scratch_dir is not None:
            object.__setattr__(self, "scratch_dir", Path(self.scratch_dir))
        if type(self.memory_budget) is not int or self.memory_budget < 1:
            raise ConfigError(
                "the memory budget (" + MEMORY_BUDGET + ") must be a number of bytes, at "
                f"least 1 (e.g. 256MiB); got {self.memory_budget!r}"
            )
        if self.concurrency < 1:
            raise ConfigError(CONCURRENCY + f" must be at least 1, got {self.concurrency}")
        if not limit_in_range(self.page_limit):
            raise ConfigError(
                f"page_limit must be between {LIMIT_MIN} and {LIMIT_MAX} (the interface's "
                "limits), "
                f"got {self.page_limit}"
            )

    @property
    def per_pet_memory(self) -> int:
        """The part of the budget for what grows with the catalogue (ids seen, dedup keys):
        the budget less :data:`FIXED_MEMORY`, and at least a quarter of the budget."""
        return max(self.memory_budget - FIXED_MEMORY, self.memory_budget // 4)

    @property
    def location(self) -> Location:
        """Where the snapshots go: a local directory or an object-store prefix."""
        return parse_location(self.out_dir)

    @property
    def writes_csv(self) -> bool:
        """True when the snapshot holds the CSV copy beside the Parquet file.

        A table holds the Parquet data only: its readers go through the table.
        """
        return self.format == "both" and FORMATS[self.table_format].holds_csv


def _statuses(values: tuple[PetStatus | str, ...]) -> list[PetStatus]:
    """Accept enum members or their strings (job files give strings)."""
    statuses: list[PetStatus] = []
    for value in values:
        try:
            statuses.append(PetStatus(value))
        except ValueError:
            allowed = ", ".join(s.value for s in PetStatus)
            raise ConfigError(f"unknown status {value!r}; use one of: {allowed}") from None
    return statuses
