"""The Petstore client: httpx underneath, typed models and petsync errors on top.

CONTRACT SKELETON -- the client work fills in the bodies; the public names and signatures
below are what the export and import jobs code against. Keep them (extend, don't rename).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import httpx

from petsync.config import DEFAULT_PAGE_LIMIT, ClientConfig
from petsync.models import NewPet, Pet, PetStatus


@dataclass(frozen=True)
class InvalidRecord:
    """A listed record that breaks the interface (no id, float id, no name...), kept as sent."""

    record: object
    reason: str
    url: str


@dataclass(frozen=True)
class Page:
    """One page of listPets: the valid pets and the invalid records, in server order."""

    pets: list[Pet]
    invalid: list[InvalidRecord]
    url: str


class Listing:
    """Iterates the pages of one listPets sweep (one status, or unfiltered).

    Attributes, readable during and after iteration:
    ``status``; ``style`` (the pagination style in use, e.g. "link", resolved by auto);
    ``pages``; ``requests`` (including probes and retries); ``retries``;
    ``complete`` (None while iterating, True when the end was proven, False when flagged);
    ``incomplete_reason`` (why it could not be proven complete, and what to do).
    """

    status: PetStatus | None
    style: str
    pages: int
    requests: int
    retries: int
    complete: bool | None
    incomplete_reason: str | None

    def __iter__(self) -> Iterator[Page]:
        raise NotImplementedError


@dataclass(frozen=True)
class FetchedPet:
    """Result of the deprecated getPet: the pet and the server's deprecation headers."""

    pet: Pet
    deprecation: str | None
    sunset: str | None


@dataclass(frozen=True)
class CheckReport:
    """What ``petsync check`` reports."""

    base_url: str
    key_accepted: bool
    pagination_style: str
    round_trip_seconds: float
    complete_first_page: bool


class PetstoreClient:
    """A thread-safe client for one Petstore environment (share one across threads).

    >>> with PetstoreClient(config) as client:                      # doctest: +SKIP
    ...     for page in client.list_pets(PetStatus.AVAILABLE):
    ...         print(len(page.pets))
    """

    def __init__(
        self,
        config: ClientConfig,
        *,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
    ) -> None:
        raise NotImplementedError

    def __enter__(self) -> PetstoreClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        raise NotImplementedError

    @property
    def requests(self) -> int:
        """HTTP requests sent so far by this client (all threads)."""
        raise NotImplementedError

    @property
    def retries(self) -> int:
        """Retries made so far by this client (all threads)."""
        raise NotImplementedError

    def list_pets(
        self, status: PetStatus | None = None, *, limit: int = DEFAULT_PAGE_LIMIT
    ) -> Listing:
        raise NotImplementedError

    def create_pet(self, pet: NewPet) -> Pet:
        raise NotImplementedError

    def get_pet(self, pet_id: int) -> FetchedPet:
        raise NotImplementedError

    def check(self) -> CheckReport:
        raise NotImplementedError
