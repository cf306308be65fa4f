"""Typed models of the interface: NewPet, Pet, PetStatus and Error.

Shared by the client and the reference server. Ids and categoryIds are int64 end to end:
a JSON number that is not an integer in int64 range (a float, a bool, a string, 2**63) is a
protocol error, never coerced. A Pet without a ``status`` key is valid with status ``None``
(the interface does not say what status a pet created without one has); a status string
outside the enum is kept as it is, so callers can count it instead of crashing.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from petsync.core.errors import ProtocolError

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


class PetStatus(StrEnum):
    """Availability status (interface, PetStatus)."""

    AVAILABLE = "available"
    PENDING = "pending"
    SOLD = "sold"


STATUS_VALUES: tuple[str, ...] = tuple(s.value for s in PetStatus)


def is_int64(value: object) -> bool:
    """True for a Python ``int`` (not ``bool``) that fits in int64."""
    return type(value) is int and INT64_MIN <= value <= INT64_MAX


@dataclass(frozen=True, slots=True)
class NewPet:
    """Request body of createPet. ``status`` None means the key is not sent."""

    name: str
    categoryId: int  # noqa: N815 - the API's spelling, kept in data and files
    status: PetStatus | None = None

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"name": self.name, "categoryId": self.categoryId}
        if self.status is not None:
            body["status"] = self.status.value
        return body


@dataclass(frozen=True, slots=True)
class Pet:
    """An animal as the API returns it. ``status`` is the raw string (or None when absent)."""

    id: int
    name: str
    categoryId: int  # noqa: N815
    status: str | None = None

    @property
    def known_status(self) -> PetStatus | None:
        """The status as a :class:`PetStatus`, or None when absent or outside the enum."""
        return PetStatus(self.status) if self.status in STATUS_VALUES else None

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"id": self.id, "name": self.name, "categoryId": self.categoryId}
        if self.status is not None:
            body["status"] = self.status
        return body


def parse_pet(obj: object) -> Pet:
    """Build a :class:`Pet` from decoded JSON, or raise :class:`ProtocolError` saying why.

    >>> parse_pet({"id": 2**63 - 1, "name": "Rex", "categoryId": -1}).id
    9223372036854775807
    """
    if not isinstance(obj, dict):
        raise ProtocolError(f"a Pet must be a JSON object, got {type(obj).__name__}")
    for field in ("id", "categoryId"):
        if field not in obj:
            raise ProtocolError(f"Pet has no {field!r}")
        if not is_int64(obj[field]):
            raise ProtocolError(
                f"Pet {field!r} must be an int64 integer, got {_describe(obj[field])}"
            )
    name = obj.get("name")
    if not isinstance(name, str):
        raise ProtocolError(f"Pet 'name' must be a string, got {_describe(name)}")
    status = obj.get("status")
    if status is not None and not isinstance(status, str):
        raise ProtocolError(f"Pet 'status' must be a string, got {_describe(status)}")
    return Pet(id=obj["id"], name=name, categoryId=obj["categoryId"], status=status)


@dataclass(frozen=True, slots=True)
class ErrorBody:
    """The interface's Error: ``code``, ``message``, ``status`` (equal to the HTTP status)."""

    code: str
    message: str
    status: int

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "status": self.status}


def parse_error_body(obj: object) -> ErrorBody | None:
    """The Error body if ``obj`` is one, else None (a proxy page, problem+json, anything)."""
    if not isinstance(obj, dict):
        return None
    code, message, status = obj.get("code"), obj.get("message"), obj.get("status")
    if isinstance(code, str) and isinstance(message, str) and isinstance(status, int):
        if not is_int64(status):
            return None
        return ErrorBody(code=code, message=message, status=status)
    return None


def _describe(value: object) -> str:
    text = repr(value)
    if len(text) > 40:
        text = text[:37] + "..."
    return f"{type(value).__name__} {text}"
