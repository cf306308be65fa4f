"""What the jobs need from a Petstore client, as protocols.

The export depends on :class:`PetLister`, the import on :class:`PetCreator`, not on the
concrete :class:`~petsync.client.client.PetstoreClient`: a test passes a small double
without ``# type: ignore``, and a caller can instrument or wrap the client.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from petsync.client.creations import Creation
from petsync.client.listing import Page
from petsync.client.read_ahead import RequestSlots
from petsync.client.seen_ids import SeenBudget
from petsync.core.models import NewPet, PetStatus


class ListingView(Protocol):
    """One listPets sweep: its pages, and how it went (readable during and after).

    ``complete`` is None while paging, True when the end was proven, False when it could
    not be (``incomplete_reason`` says why); ``duplicates`` counts records dropped because
    this listing had already sent them.
    """

    @property
    def style(self) -> str: ...

    @property
    def pages(self) -> int: ...

    @property
    def requests(self) -> int: ...

    @property
    def retries(self) -> int: ...

    @property
    def complete(self) -> bool | None: ...

    @property
    def incomplete_reason(self) -> str | None: ...

    @property
    def duplicates(self) -> int: ...

    @property
    def spilled_bytes(self) -> int: ...

    def __iter__(self) -> Iterator[Page]: ...


class RequestCounts(Protocol):
    """Requests sent and retries made so far by a client, over all threads."""

    @property
    def requests(self) -> int: ...

    @property
    def retries(self) -> int: ...


class PetLister(RequestCounts, Protocol):
    """listPets, as the export uses it."""

    def list_pets(
        self,
        status: PetStatus | None = None,
        *,
        limit: int = ...,
        seen_budget: SeenBudget | None = None,
        read_ahead: RequestSlots | None = None,
    ) -> ListingView: ...


class PetCreations(Protocol):
    """createPet for many pets at once, from one thread (see
    :class:`~petsync.client.creations.Creations`): started, then collected as they end."""

    @property
    def in_flight(self) -> int: ...

    def start(self, key: int, pet: NewPet) -> None: ...

    def wait(self, timeout: float) -> list[Creation]: ...

    def close(self) -> None: ...

    def __enter__(self) -> PetCreations: ...

    def __exit__(self, *exc_info: object) -> None: ...


class PetCreator(RequestCounts, Protocol):
    """createPet, as the import uses it: many POSTs in flight from its sending thread."""

    def creations(self) -> PetCreations: ...
