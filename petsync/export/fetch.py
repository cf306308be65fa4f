"""The export's listings: one listPets sweep per status, and one unfiltered, side by side.

:func:`fetch_listings` pages ``GET /pets`` once per configured status and, unless the sweep
is off, once without a filter (the interface does not say what status a pet created without
one has, so only an unfiltered sweep is sure to see pets with no status or an unknown one).
The listings run concurrently in threads sharing one client and one bound on the requests
in flight (``--concurrency``, :class:`~petsync.client.read_ahead.RequestSlots`), within
which offset and page listings read pages ahead; every page's pets go to the collector and
its invalid records to the quarantine. When one listing fails the others stop
paging and the error is raised: a run missing a listing is lost.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from petsync.client.api import PetLister
from petsync.client.read_ahead import RequestSlots
from petsync.client.seen_ids import SeenBudget
from petsync.core.models import PetStatus
from petsync.core.stop import StopRequest
from petsync.export.collector import PetCollector, source_of
from petsync.export.config import SWEEP_LABEL, ExportConfig
from petsync.export.extra_fields import screen
from petsync.export.quarantine import Quarantine
from petsync.formats.schema import ColumnType

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ListingResult:
    """How one listing went: pages, requests, pets, and whether its end was proven."""

    label: str
    style: str
    pages: int
    requests: int
    retries: int
    pets: int
    invalid: int
    complete: bool
    incomplete_reason: str | None
    seconds: float
    duplicates_dropped: int = 0
    scratch_bytes: int = 0  # the record of ids seen, written to the scratch area
    server_date: str | None = None  # the Date header of the listing's last answer

    def to_json(self) -> dict[str, Any]:
        return {
            "listing": self.label,
            "pagination_style": self.style,
            "pages": self.pages,
            "requests": self.requests,
            "retries": self.retries,
            "pets": self.pets,
            "invalid": self.invalid,
            "duplicates_dropped": self.duplicates_dropped,
            "complete": self.complete,
            "incomplete_reason": self.incomplete_reason,
            "seconds": round(self.seconds, 3),
        }


@dataclass(frozen=True)
class FetchResult:
    """Every listing of one run, in plan order, with what fetching them cost and found."""

    listings: list[ListingResult]
    quarantined: int
    requests: int
    retries: int

    @property
    def incomplete_reasons(self) -> list[str]:
        """One line per listing whose end could not be proven, naming it."""
        return [
            f"listing {r.label!r}: {r.incomplete_reason or 'its end could not be proven'}"
            for r in self.listings
            if not r.complete
        ]

    @property
    def complete(self) -> bool:
        """True when every listing proved its end."""
        return all(r.complete for r in self.listings)

    @property
    def pages(self) -> int:
        return sum(r.pages for r in self.listings)

    @property
    def scratch_bytes(self) -> int:
        return sum(r.scratch_bytes for r in self.listings)

    @property
    def pagination_styles(self) -> list[str]:
        """The pagination styles the listings used (auto may resolve differently), sorted."""
        return sorted({r.style for r in self.listings})


class ExportProgress(Protocol):
    """Receives progress events; called from worker threads, so implementations lock."""

    def listing_started(self, label: str) -> None: ...

    def page_done(self, label: str, pages: int, pets: int) -> None: ...

    def listing_done(self, result: ListingResult) -> None: ...


class _NoProgress:
    def listing_started(self, label: str) -> None:
        pass

    def page_done(self, label: str, pages: int, pets: int) -> None:
        pass

    def listing_done(self, result: ListingResult) -> None:
        pass


def fetch_listings(
    config: ExportConfig,
    client: PetLister,
    collector: PetCollector,
    quarantine: Quarantine,
    *,
    monotonic: Callable[[], float],
    progress: ExportProgress | None = None,
    scratch: Path | None = None,
    stop: StopRequest | None = None,
    extra_columns: Mapping[str, ColumnType] | None = None,
    dated: Callable[[str | None], None] | None = None,
) -> FetchResult:
    """Run every listing of ``config``, with up to ``config.concurrency`` requests in flight
    at once (listings side by side, and pages read ahead where the style allows); fail fast.

    A ``stop`` request (a signal) ends every listing after its current page, incomplete.

    The request and retry counts are the client's own, taken before and after, so they
    include whatever the client did for these listings and nothing from earlier use. With
    ``scratch``, each listing's record of ids seen keeps to its share of the memory budget
    (a quarter of ``config.per_pet_memory``, split between the listings) and spills there.
    ``extra_columns`` are the kept extra fields whose column type is already fixed: a pet
    whose value does not fit goes to the quarantine (:func:`~petsync.export.extra_fields.screen`).
    ``dated`` sees each page's ``Date`` header as it comes (the clock check,
    :class:`~petsync.export.clock.ClockWatch`); what it raises ends the run like a failed listing.
    """
    plan: list[PetStatus | None] = list(config.statuses)
    if config.sweep:
        plan.append(None)
    requests_before, retries_before = client.requests, client.retries
    seen_budget = None
    if scratch is not None:
        seen_budget = SeenBudget(config.per_pet_memory // 4 // len(plan), scratch)
    paging = _Paging(
        client,
        collector,
        quarantine,
        config.page_limit,
        monotonic,
        progress or _NoProgress(),
        seen_budget,
    )
    paging.stop_request = stop
    paging.extra_columns = extra_columns or {}
    paging.dated = dated
    with (
        RequestSlots(config.concurrency) as paging.slots,
        ThreadPoolExecutor(
            max_workers=min(config.concurrency, len(plan)), thread_name_prefix="petsync-export"
        ) as pool,
    ):
        futures: list[Future[ListingResult]] = [pool.submit(paging.run, s) for s in plan]
        try:
            wait(futures, return_when=FIRST_EXCEPTION)
            errors = [e for f in futures if f.done() and (e := f.exception()) is not None]
            if errors:
                paging.stop.set()
                for future in futures:
                    future.cancel()
                raise errors[0]
        except BaseException:
            paging.stop.set()
            raise
        listings = [f.result() for f in futures]
    return FetchResult(
        listings=listings,
        quarantined=quarantine.count,
        requests=client.requests - requests_before,
        retries=client.retries - retries_before,
    )


@dataclass
class _Paging:
    """Pages one listing into the collector and quarantine; shared by the worker threads."""

    client: PetLister
    collector: PetCollector
    quarantine: Quarantine
    limit: int
    monotonic: Callable[[], float]
    progress: ExportProgress
    seen_budget: SeenBudget | None = None
    stop: threading.Event = field(default_factory=threading.Event)  # another listing failed
    stop_request: StopRequest | None = None  # a signal: stop after the current page
    extra_columns: Mapping[str, ColumnType] = field(default_factory=dict)
    dated: Callable[[str | None], None] | None = None  # the clock check, page by page
    slots: RequestSlots | None = None  # the run's requests in flight (concurrency)

    def run(self, status: PetStatus | None) -> ListingResult:
        label = SWEEP_LABEL if status is None else status.value
        source = source_of(status)
        self.progress.listing_started(label)
        began = self.monotonic()
        listing = self.client.list_pets(
            status, limit=self.limit, seen_budget=self.seen_budget, read_ahead=self.slots
        )
        pets = invalid = 0
        stopped_by: str | None = None
        for pages, page in enumerate(listing, start=1):
            if self.dated is not None:
                self.dated(getattr(listing, "server_date", None))
            columns, body, misfits = page.columns, page.body, []
            screened = screen(columns, self.extra_columns, page.url) if self.extra_columns else None
            if screened is not None:  # the page's body no longer matches its columns
                columns, misfits, body = screened[0], screened[1], None
            self.collector.add(source, columns, body)
            self.quarantine.add(label, page.invalid + misfits)
            pets += len(columns)
            invalid += len(page.invalid) + len(misfits)
            self.progress.page_done(label, pages, pets)
            if self.stop.is_set():  # the run is lost: stop paging
                break
            if self.stop_request is not None and self.stop_request.requested:
                stopped_by = f"stopped by {self.stop_request.description}"
                break
        result = ListingResult(
            label=label,
            style=listing.style,
            pages=listing.pages,
            requests=listing.requests,
            retries=listing.retries,
            pets=pets,
            invalid=invalid,
            complete=listing.complete is True,
            incomplete_reason=listing.incomplete_reason or stopped_by,
            seconds=self.monotonic() - began,
            # Records the client dropped because this same listing had already sent them.
            duplicates_dropped=listing.duplicates,
            scratch_bytes=getattr(listing, "spilled_bytes", 0),
            server_date=getattr(listing, "server_date", None),
        )
        self.progress.listing_done(result)
        logger.info("export.listing_done", extra={"fields": result.to_json()})
        return result
