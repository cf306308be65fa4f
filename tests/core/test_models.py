"""The interface's models: int64 ids end to end, status kept raw, Error bodies recognised."""

from __future__ import annotations

import json

import pytest

from petsync.core.errors import ProtocolError
from petsync.core.models import (
    INT64_MAX,
    INT64_MIN,
    ErrorBody,
    NewPet,
    Pet,
    PetStatus,
    is_int64,
    parse_error_body,
    parse_pet,
)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (INT64_MAX, True),
        (INT64_MIN, True),
        (0, True),
        (INT64_MAX + 1, False),
        (INT64_MIN - 1, False),
        (True, False),
        (1.0, False),
        ("1", False),
        (None, False),
    ],
    ids=["max", "min", "zero", "max+1", "min-1", "bool", "float", "str", "none"],
)
def test_is_int64(value: object, expected: bool) -> None:
    assert is_int64(value) is expected


def test_int64_extremes_survive_a_json_round_trip() -> None:
    text = json.dumps({"id": INT64_MAX, "name": "Rex", "categoryId": INT64_MIN})
    pet = parse_pet(json.loads(text))
    assert (pet.id, pet.categoryId) == (INT64_MAX, INT64_MIN)
    assert json.dumps(pet.to_json()) == text


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        (
            {"id": 1.5, "name": "a", "categoryId": 1},
            "Pet 'id' must be an int64 integer, got float 1.5",
        ),
        (
            {"id": False, "name": "a", "categoryId": 1},
            "Pet 'id' must be an int64 integer, got bool False",
        ),
        (
            {"id": 1, "name": "a", "categoryId": "1"},
            "Pet 'categoryId' must be an int64 integer, got str '1'",
        ),
        ({"id": 1, "name": "a"}, "Pet has no 'categoryId'"),
        ({"id": 1, "name": 5, "categoryId": 1}, "Pet 'name' must be a string, got int 5"),
        (
            {"id": 1, "name": "a", "categoryId": 1, "status": 3},
            "Pet 'status' must be a string, got int 3",
        ),
        ([1], "a Pet must be a JSON object, got list"),
    ],
    ids=["float-id", "bool-id", "str-category", "no-category", "int-name", "int-status", "list"],
)
def test_parse_pet_refuses_what_the_interface_forbids(obj: object, message: str) -> None:
    with pytest.raises(ProtocolError) as caught:
        parse_pet(obj)
    assert str(caught.value) == message


def test_status_absent_is_none_unknown_is_kept_and_extra_fields_ignored() -> None:
    absent = parse_pet({"id": 1, "name": "a", "categoryId": 1})
    unknown = parse_pet({"id": 2, "name": "b", "categoryId": 1, "status": "adopted", "x": 1})
    assert (absent.status, absent.known_status) == (None, None)
    assert (unknown.status, unknown.known_status) == ("adopted", None)
    assert "status" not in absent.to_json()
    assert unknown.to_json() == {"id": 2, "name": "b", "categoryId": 1, "status": "adopted"}


def test_new_pet_sends_status_only_when_given() -> None:
    assert NewPet("a", -3).to_json() == {"name": "a", "categoryId": -3}
    assert NewPet("a", 1, PetStatus.SOLD).to_json() == {
        "name": "a",
        "categoryId": 1,
        "status": "sold",
    }


def test_pet_known_status() -> None:
    assert Pet(1, "a", 1, "pending").known_status is PetStatus.PENDING


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        ({"code": "c", "message": "m", "status": 400}, ErrorBody("c", "m", 400)),
        ({"type": "about:blank", "title": "Forbidden", "status": 403}, None),
        ({"code": "c", "message": "m", "status": True}, None),
        ({"code": "c", "message": "m", "status": "400"}, None),
        ({"code": "c", "message": "m", "status": 2**64}, None),
        ("<html>", None),
    ],
    ids=["error", "problem-json", "bool-status", "str-status", "huge-status", "text"],
)
def test_parse_error_body(obj: object, expected: ErrorBody | None) -> None:
    assert parse_error_body(obj) == expected
