"""Parsing and validating what clients send: query parameters, cursors, createPet bodies.

Every refusal is a :class:`BadRequest` whose message names the parameter or field, what it
must be and what came (cut short, never more than 40 characters of it), so the 400 Error
tells the client what to fix.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any

from starlette.datastructures import QueryParams

from petsync.core.interface import CURSOR_HEADER, CURSOR_PARAM
from petsync.core.models import INT64_MAX, INT64_MIN, STATUS_VALUES, NewPet, PetStatus, is_int64

_INTEGER = re.compile(r"-?[0-9]{1,19}")
_CURSOR_PREFIX = "k1:"


class BadRequest(Exception):
    """A request the server answers 400 invalid_request; the message says what to fix."""


def _single(query: QueryParams, name: str) -> str | None:
    values = query.getlist(name)
    if len(values) > 1:
        raise BadRequest(f"query parameter {name!r} given {len(values)} times; give it once")
    return values[0] if values else None


def query_int(query: QueryParams, name: str, low: int, high: int, default: int) -> int:
    """The integer parameter ``name`` in ``low..high`` (plain decimal digits), or ``default``."""
    raw = _single(query, name)
    if raw is None:
        return default
    if not _INTEGER.fullmatch(raw) or not low <= int(raw) <= high:
        bound = f"from {low} to {high}" if high < INT64_MAX else f"of at least {low}"
        raise BadRequest(f"query parameter {name!r} must be an integer {bound}, got {raw[:40]!r}")
    return int(raw)


def query_status(query: QueryParams) -> str | None:
    """The ``status`` filter: one of the PetStatus values, or None when absent."""
    raw = _single(query, "status")
    if raw is None:
        return None
    if raw not in STATUS_VALUES:
        raise BadRequest(
            f"query parameter 'status' must be one of {', '.join(STATUS_VALUES)}, got {raw[:40]!r}"
        )
    return raw


def query_after(query: QueryParams) -> int | None:
    """The ``after`` keyset parameter of the ``link`` style: an int64 id, or None."""
    raw = _single(query, "after")
    if raw is None:
        return None
    if not _INTEGER.fullmatch(raw) or not is_int64(int(raw)):
        raise BadRequest(f"query parameter 'after' must be an int64 pet id, got {raw[:40]!r}")
    return int(raw)


def encode_cursor(after: int) -> str:
    """The opaque token of the ``cursor`` style: the last id sent, base64url-wrapped."""
    return base64.urlsafe_b64encode(f"{_CURSOR_PREFIX}{after}".encode()).decode().rstrip("=")


def query_cursor(query: QueryParams) -> int | None:
    """The id inside the ``cursor`` parameter of the ``cursor`` style, or None when absent."""
    raw = _single(query, CURSOR_PARAM)
    if raw is None:
        return None
    try:
        text = base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)).decode("ascii")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        text = ""
    number = text.removeprefix(_CURSOR_PREFIX)
    if not text.startswith(_CURSOR_PREFIX) or not _INTEGER.fullmatch(number):
        raise BadRequest(
            f"query parameter {CURSOR_PARAM!r} is not a cursor this server issued; "
            f"pass the value of the {CURSOR_HEADER} header unchanged"
        )
    return int(number)


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not valid JSON")


def _object_without_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise ValueError(f"key {key[:40]!r} appears twice")
        obj[key] = value
    return obj


def parse_new_pet(body: bytes) -> NewPet:
    """Parse and validate a createPet body strictly, or raise :class:`BadRequest` saying why.

    Strict JSON: UTF-8 only, no NaN/Infinity, no duplicate keys. NewPet: ``name`` a non-empty
    string, ``categoryId`` an int64 integer (``1.0``, ``true`` and ``"1"`` are refused),
    ``status`` absent or one of the PetStatus values. Other keys are ignored.
    """
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadRequest(f"request body is not UTF-8 (byte {exc.start} is not)") from exc
    try:
        obj = json.loads(
            text,
            parse_constant=_reject_constant,
            object_pairs_hook=_object_without_duplicates,
        )
    except (ValueError, RecursionError) as exc:
        raise BadRequest(f"request body is not valid JSON: {str(exc)[:120]}") from exc
    if not isinstance(obj, dict):
        raise BadRequest(f"request body must be a JSON object (NewPet), got {_json_type(obj)}")
    if "name" not in obj:
        raise BadRequest("'name' is required")
    name = obj["name"]
    if not isinstance(name, str):
        raise BadRequest(f"'name' must be a string, got {_json_type(name)}")
    if not name:
        raise BadRequest("'name' must not be empty")
    try:
        name.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise BadRequest("'name' contains an unpaired surrogate escape") from exc
    if "categoryId" not in obj:
        raise BadRequest("'categoryId' is required")
    category = obj["categoryId"]
    if not is_int64(category):
        raise BadRequest(
            f"'categoryId' must be an integer from {INT64_MIN} to {INT64_MAX}, "
            f"got {_json_type(category)}"
        )
    status = None
    if "status" in obj:
        raw = obj["status"]
        if raw not in STATUS_VALUES:
            shown = repr(raw[:40]) if isinstance(raw, str) else _json_type(raw)
            raise BadRequest(f"'status' must be one of {', '.join(STATUS_VALUES)}, got {shown}")
        status = PetStatus(raw)
    return NewPet(name=name, categoryId=category, status=status)


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return f"the integer {value}" if len(str(value)) <= 40 else "an integer out of range"
    if isinstance(value, float):
        return f"the number {value!r}"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def parse_pet_id(raw: str) -> int | None:
    """The int64 id in a ``petId`` path segment, or None when it is not one."""
    if not _INTEGER.fullmatch(raw):
        return None
    value = int(raw)
    return value if is_int64(value) else None
