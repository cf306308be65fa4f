"""What one import run does: :class:`ImportConfig` and its named defaults (light: no I/O)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from petsync.core.errors import ConfigError
from petsync.core.settings_table import CONCURRENCY, HEADER_ROW, MAX_ERRORS
from petsync.importer.sheets.sheet import ReadOptions

DEFAULT_CONCURRENCY = 8  # a real API is far away: each POST waits a round trip
MAX_CONCURRENCY = 64
# Rows journaled `sending` and not yet answered, across all workers, at most: what a crash
# can leave uncertain (or one row per worker when concurrency is higher). Shared by the
# senders, so a lone sender syncs once per 32 rows and eight senders once per 4.
SENDING_WINDOW = 32
# A value merged over cells below a workbook's header (petsync.importer.merged).
MergedCells = Literal["fill", "blank"]
MERGED_CHOICES: tuple[MergedCells, ...] = ("fill", "blank")
DEFAULT_BASELINE = False  # no listing of the catalogue before the first POST unless asked


@dataclass(frozen=True)
class ImportConfig:
    """What to import and how. ``None`` for sheet/encoding/delimiter means detect.

    >>> ImportConfig(path=Path("pets.csv"), dry_run=True).concurrency
    8
    """

    path: Path
    sheet: str | None = None
    encoding: str | None = None
    delimiter: str | None = None
    mappings: tuple[str, ...] = ()
    dry_run: bool = False
    concurrency: int = DEFAULT_CONCURRENCY
    max_errors: int | None = None
    out_dir: Path | None = None
    journal_path: Path | None = None
    # The journals' folder for this API (petsync.importer.journal_home). None: the
    # command's default for the client's base URL, under $XDG_STATE_HOME/petsync (or
    # ~/.local/state/petsync); a dry run without a client reads the output folder's.
    journal_home: Path | None = None
    resend_uncertain: bool = False
    settle: bool = False
    # List the pets that exist already before the first POST, so settle can also find
    # uncertain rows created. Off by default: it costs one listing of the statuses the rows
    # use, which grows with the catalogue, not the file (docs/design.md, "Settling without
    # a baseline", says what settle proves without it).
    baseline: bool = DEFAULT_BASELINE
    # Rows repeated inside the sheet (every cell the same) are sent once unless this is set.
    allow_duplicates: bool = False
    # The header's row number; None finds it in the first 20 rows.
    header_row: int | None = None
    # A sheet of category names and ids (petsync.importer.category_map).
    category_map: Path | None = None
    # A value merged over cells below the header: "fill" each cell, or leave them "blank".
    merged_cells: MergedCells = "fill"

    def __post_init__(self) -> None:
        if not 1 <= self.concurrency <= MAX_CONCURRENCY:
            raise ConfigError(CONCURRENCY + f" must be between 1 and {MAX_CONCURRENCY}")
        if self.max_errors is not None and self.max_errors < 1:
            raise ConfigError(MAX_ERRORS + " must be at least 1")
        if self.header_row is not None and self.header_row < 1:
            raise ConfigError(HEADER_ROW + " must be at least 1 (the sheet's first row)")

    @property
    def sending_window(self) -> int:
        """Rows journaled `sending` and not yet answered, at most: what a crash leaves uncertain.

        >>> ImportConfig(Path("p.csv")).sending_window
        32
        >>> ImportConfig(Path("p.csv"), concurrency=64).sending_window
        64
        """
        return max(SENDING_WINDOW, self.concurrency)

    @property
    def read_options(self) -> ReadOptions:
        return ReadOptions(sheet=self.sheet, encoding=self.encoding, delimiter=self.delimiter)
