"""Row validation: the interface's rules, parsed without floats, each failure coded."""

from __future__ import annotations

import pytest

from petsync.core.models import INT64_MAX, INT64_MIN, NewPet, PetStatus
from petsync.importer.columns import ColumnMap
from petsync.importer.validation import Normalisation, parse_category_id, validate_row

COLUMNS = ColumnMap(name=0, categoryId=1, status=2, carried=(0, 1, 2))

ACCEPTED = [
    ("12", 12, False),
    (" 12 ", 12, False),
    ("12.0", 12, True),
    ("12.000", 12, True),
    ("+12", 12, False),
    ("-7", -7, False),
    ("007", 7, False),
    ("0", 0, False),
    (str(INT64_MAX), INT64_MAX, False),
    (str(INT64_MIN), INT64_MIN, False),
    ("9223372036854775806", 9223372036854775806, False),
]


@pytest.mark.parametrize(("text", "value", "integral"), ACCEPTED, ids=[c[0] for c in ACCEPTED])
def test_category_id_accepted(text: str, value: int, integral: bool) -> None:
    assert parse_category_id(text) == (value, None, integral)


REJECTED = [
    ("12.5", "category_not_integer"),
    ("1.2E+5", "category_not_integer"),
    ("1e3", "category_not_integer"),
    ("12,0", "category_not_integer"),
    ("1 000", "category_not_integer"),
    ("abc", "category_not_integer"),
    ("12.", "category_not_integer"),
    (".5", "category_not_integer"),
    ("0x10", "category_not_integer"),
    ("١٢", "category_not_integer"),  # Arabic-Indic digits: int() would take them
    ("NaN", "category_not_integer"),
    (str(INT64_MAX + 1), "category_out_of_range"),
    (str(INT64_MIN - 1), "category_out_of_range"),
    ("9" * 5000, "category_out_of_range"),
    ("", "category_missing"),
    ("   ", "category_missing"),
]


@pytest.mark.parametrize(("text", "code"), REJECTED, ids=[c[0][:20] for c in REJECTED])
def test_category_id_rejected(text: str, code: str) -> None:
    value, error, _ = parse_category_id(text)
    assert value is None
    assert error is not None and error.code == code and error.field == "categoryId"


def test_not_integer_message_names_the_value_and_the_fix() -> None:
    _, error, _ = parse_category_id("1.2E+5")
    assert error is not None
    assert error.message == (
        "categoryId '1.2E+5' is not a whole number; write it as digits only, like 12 "
        "(no decimals, exponents or separators; in Excel, store long ids as text)"
    )


def test_valid_row_becomes_a_new_pet_with_normalisations_counted() -> None:
    result = validate_row([" Rex ", "12.0", " AVAILABLE"], COLUMNS, 3)
    assert result.errors == ()
    assert result.pet == NewPet("Rex", 12, PetStatus.AVAILABLE)
    assert result.normalisations == (
        Normalisation.TRIMMED,
        Normalisation.INTEGRAL_DECIMAL,
        Normalisation.STATUS_CASE_FOLDED,
    )


def test_clean_row_has_no_normalisations() -> None:
    result = validate_row(["Rex", "12", "sold"], COLUMNS, 3)
    assert result.pet == NewPet("Rex", 12, PetStatus.SOLD)
    assert result.normalisations == ()


def test_blank_status_is_not_sent() -> None:
    result = validate_row(["Rex", "12", "  "], COLUMNS, 3)
    assert result.pet == NewPet("Rex", 12, None)
    assert result.pet is not None and "status" not in result.pet.to_json()


@pytest.mark.parametrize("name", ["NA", "None", "null", "0"])
def test_words_that_look_like_missing_values_are_names(name: str) -> None:
    result = validate_row([name, "1", ""], COLUMNS, 3)
    assert result.pet is not None and result.pet.name == name


def test_every_failure_of_a_row_is_reported() -> None:
    result = validate_row(["  ", "x", "lost"], COLUMNS, 3)
    assert result.pet is None
    assert [(e.code, e.field) for e in result.errors] == [
        ("name_missing", "name"),
        ("category_not_integer", "categoryId"),
        ("status_invalid", "status"),
    ]
    assert result.errors[2].message == (
        "status 'lost' is not one of available, pending, sold (or leave it blank)"
    )


def test_status_column_absent_means_not_sent() -> None:
    columns = ColumnMap(name=0, categoryId=1, status=None, carried=(0, 1))
    assert validate_row(["Rex", "3"], columns, 2).pet == NewPet("Rex", 3)


def test_short_row_is_padded_with_blanks() -> None:
    result = validate_row(["Rex"], COLUMNS, 3)
    assert [e.code for e in result.errors] == ["category_missing"]


def test_extra_non_blank_cells_reject_the_row() -> None:
    result = validate_row(["Rex", "1", "sold", "oops"], COLUMNS, 3)
    assert [(e.code, e.field) for e in result.errors] == [("extra_cells", None)]
    assert "extra: 'oops'" in result.errors[0].message


def test_extra_blank_cells_are_ignored() -> None:
    assert validate_row(["Rex", "1", "sold", "", " "], COLUMNS, 3).pet is not None
