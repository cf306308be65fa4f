"""createPet for many pets at once, driven from one thread: the import's POSTs in flight together.

Each POST is one run of the client's attempts (``PetstoreClient._attempts``: the retry and
``Retry-After`` rules, the body's size cap, the failures translated and redacted), the code
every other request runs; :class:`Creations` only drives many of them over the client's
:class:`~petsync.client.exchange.Transfers` instead of one over its exchange. A request
waiting to be retried waits in a queue, not in a thread: the others go on meanwhile.

    >>> with client.creations() as creations:               # doctest: +SKIP
    ...     creations.start(2, NewPet(name="Rex", categoryId=1))
    ...     while creations.in_flight:
    ...         for ended in creations.wait(0.1):
    ...             print(ended.key, ended.pet or ended.error)
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Callable, Generator
from typing import NamedTuple

import msgspec

from petsync.client.body import parse_json
from petsync.client.exchange import Answer, AnswerHeaders, RequestHeaders, Transfers
from petsync.client.records import reason_of
from petsync.core.errors import ProtocolError
from petsync.core.models import NewPet, Pet, parse_pet

# One request's attempts (``PetstoreClient._attempts``): yields None for "send now" (the
# answer is sent back, a failure thrown in) or seconds to wait; returns the 2xx answer.
Attempts = Generator[float | None, Answer | None, tuple[int, AnswerHeaders, bytes | bytearray]]


class Creation(NamedTuple):
    """How one createPet ended: the ``pet`` created, or the ``error`` (a petsync error, as
    :meth:`~petsync.client.client.PetstoreClient.create_pet` raises it); ``retried`` when it
    waited to be sent again (a 429, a refusal). A tuple: one is made per POST."""

    key: int
    pet: Pet | None
    error: Exception | None
    retried: bool


class _Request:
    __slots__ = ("attempts", "body", "key", "retried")

    def __init__(self, key: int, attempts: Attempts, body: bytes) -> None:
        self.key = key
        self.attempts = attempts
        self.body = body
        self.retried = False


class Creations:
    """POSTs of new pets in flight together, started and collected by one thread.

    Made by :meth:`~petsync.client.client.PetstoreClient.creations`; ``attempts`` makes a
    request's attempts from its body, ``target`` is the method, URL and header fields every
    POST is sent with, ``shown`` the URL as messages show it.
    """

    def __init__(
        self,
        transfers: Transfers,
        attempts: Callable[[bytes], Attempts],
        target: tuple[str, str, RequestHeaders],
        shown: str,
        *,
        clock: Callable[[], float],
        sleep: Callable[[float], None],
    ) -> None:
        self._transfers = transfers
        self._attempts = attempts
        self._target = target
        self._shown = shown
        self._clock = clock
        self._sleep = sleep
        self._requests: dict[int, _Request] = {}
        self._parked: list[tuple[float, int]] = []  # (when, tag): waiting to be retried
        self._on_wire = 0
        self._tags = 0

    @property
    def in_flight(self) -> int:
        """POSTs started and not yet ended (on the wire, or waiting to be retried)."""
        return len(self._requests)

    def start(self, key: int, pet: NewPet) -> None:
        """Start the POST of ``pet``; it leaves at the next :meth:`wait`."""
        self._tags += 1
        body = post_body(pet)
        request = _Request(key, self._attempts(body), body)
        self._requests[self._tags] = request
        self._step(self._tags, request, next(request.attempts))

    def wait(self, timeout: float) -> list[Creation]:
        """The POSTs that ended, waiting up to ``timeout`` seconds when none has yet (the
        wire is looked at once even when ``timeout`` is 0)."""
        done: list[Creation] = []
        deadline = self._clock() + timeout
        while True:
            now = self._clock()
            while self._parked and self._parked[0][0] <= now:
                _, tag = heapq.heappop(self._parked)
                self._resume(tag, None, done)
            if done or not self._requests:
                return done
            left = deadline - now
            if self._parked:
                left = min(left, self._parked[0][0] - now)
            if self._on_wire:
                for tag, outcome in self._transfers.finished(max(0.0, left)):
                    self._on_wire -= 1
                    self._resume(tag, outcome, done)
            elif left > 0:
                self._sleep(left)  # only retries are waiting
            if done or self._clock() >= deadline:
                return done

    def _resume(self, tag: int, outcome: Answer | Exception | None, done: list[Creation]) -> None:
        request = self._requests[tag]
        try:
            if isinstance(outcome, Exception):
                step = request.attempts.throw(outcome)
            else:
                step = request.attempts.send(outcome)
        except StopIteration as ended:
            status, _, body = ended.value
            try:
                pet: Pet | None = created_pet(status, body, self._shown)
                error: Exception | None = None
            except ProtocolError as exc:
                pet, error = None, exc
            self._end(tag, request, pet, error, done)
        except Exception as exc:  # the translated failure (or a bug's, for the caller)
            self._end(tag, request, None, exc, done)
        else:
            self._step(tag, request, step)

    def _step(self, tag: int, request: _Request, step: float | None) -> None:
        if step is None:
            method, url, headers = self._target
            self._transfers.start(tag, method, url, headers, request.body)
            self._on_wire += 1
        else:
            request.retried = True
            heapq.heappush(self._parked, (self._clock() + step, tag))

    def _end(
        self,
        tag: int,
        request: _Request,
        pet: Pet | None,
        error: Exception | None,
        done: list[Creation],
    ) -> None:
        del self._requests[tag]
        done.append(Creation(request.key, pet, error, request.retried))

    def close(self) -> None:
        """Let go of the transfers; POSTs still in flight are abandoned unanswered."""
        for request in self._requests.values():
            request.attempts.close()
        self._requests.clear()
        self._parked.clear()
        self._transfers.close()

    def __enter__(self) -> Creations:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def created_pet(status: int, body: bytes | bytearray, shown: str) -> Pet:
    """The Pet a createPet's 2xx answer (``status``, ``body``) holds; ``shown`` is its URL.

    msgspec reads a body it can read in a fraction of ``json.loads``' time, to the same
    values; one it refuses (NaN, a number beyond a double, UTF-16, ...) is read by
    ``json.loads`` as before, with its reasons.
    """
    try:
        try:
            try:
                value = _decode_json(body)
            except msgspec.DecodeError:
                value = parse_json(body)
            return parse_pet(value)
        except RecursionError:
            raise ProtocolError("the body is JSON nested too deeply to be a Pet") from None
    except (ProtocolError, ValueError) as exc:
        raise ProtocolError(
            f"POST {shown} answered {status} but its body is not "
            f"a Pet ({reason_of(exc)}); the pet was probably created: list the pets to check "
            "before sending it again"
        ) from exc


def post_body(pet: NewPet) -> bytes:
    """createPet's body: the NewPet as httpx's ``json=`` encodes it (compact, UTF-8, no NaN).

    msgspec writes the same bytes for a NewPet's name, number and status, in a fraction of
    the time; what it cannot write goes through ``json`` as before, to fail as before.
    """
    value = pet.to_json()
    try:
        return _encode_fast(value)
    except Exception:  # a name that is not text UTF-8 can carry (a lone surrogate)
        return _encode_json(value).encode("utf-8")


_encode_json = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode
_encode_fast = msgspec.json.Encoder().encode
_decode_json = msgspec.json.Decoder().decode
