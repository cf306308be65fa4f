"""A scripted :class:`~petsync.client.api.PetLister` for the export's own logic (no HTTP).

Each status listing sees the catalogue's pets of that status, the sweep sees them all;
``extra`` adds records to one listing, ``incomplete``, ``errors`` and ``duplicates`` make
a listing end unproven, fail, or report records the client dropped. Keys are status values,
None for the sweep.
"""

from __future__ import annotations

from collections.abc import Iterator

from petsync.client.listing import InvalidRecord, Page
from petsync.client.records import PetColumns
from petsync.core.models import Pet, PetStatus

BASE = "http://127.0.0.1:9/v1"


class ScriptedListing:
    """Iterates pre-cut pages and ends complete, incomplete, or with an error."""

    def __init__(
        self,
        pages: list[Page],
        *,
        complete: bool = True,
        reason: str | None = None,
        error: Exception | None = None,
        duplicates: int = 0,
    ) -> None:
        self.style = "link"
        self.pages = 0
        self.requests = 0
        self.retries = 0
        self.complete: bool | None = None
        self.incomplete_reason: str | None = None
        self.duplicates = duplicates
        self.spilled_bytes = 0
        self._pages = pages
        self._final = (complete, reason)
        self._error = error

    def __iter__(self) -> Iterator[Page]:
        for page in self._pages:
            self.pages += 1
            self.requests += 1
            yield page
        if self._error is not None:
            raise self._error
        self.complete, self.incomplete_reason = self._final


class ScriptedClient:
    """Serves a catalogue per listing, ``page_size`` records a page, and counts requests."""

    def __init__(
        self,
        pets: list[Pet],
        *,
        page_size: int = 2,
        extra: dict[str | None, list[Pet | InvalidRecord]] | None = None,
        incomplete: dict[str | None, str] | None = None,
        errors: dict[str | None, Exception] | None = None,
        duplicates: dict[str | None, int] | None = None,
    ) -> None:
        self.catalogue = pets
        self.page_size = page_size
        self.extra = extra or {}
        self.incomplete = incomplete or {}
        self.errors = errors or {}
        self.duplicates = duplicates or {}
        self.requests = 0
        self.retries = 0
        self.listed: list[str | None] = []

    def list_pets(
        self,
        status: PetStatus | None = None,
        *,
        limit: int = 100,
        seen_budget: object = None,
        read_ahead: object = None,
    ) -> ScriptedListing:
        key = None if status is None else status.value
        self.listed.append(key)
        records: list[Pet | InvalidRecord] = [
            p for p in self.catalogue if status is None or p.status == status.value
        ]
        records += self.extra.get(key, [])
        pages = []
        for start in range(0, len(records), self.page_size):
            chunk = records[start : start + self.page_size]
            pages.append(
                Page(
                    PetColumns.of(r for r in chunk if isinstance(r, Pet)),
                    invalid=[r for r in chunk if isinstance(r, InvalidRecord)],
                    url=f"{BASE}/pets?page={start}",
                )
            )
        self.requests += len(pages)
        return ScriptedListing(
            pages,
            complete=key not in self.incomplete,
            reason=self.incomplete.get(key),
            error=self.errors.get(key),
            duplicates=self.duplicates.get(key, 0),
        )
