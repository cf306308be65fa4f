"""Header matching, --map, and the errors that name the columns found."""

from __future__ import annotations

from pathlib import Path

import pytest

from petsync.core.errors import InputError
from petsync.importer.columns import ColumnMap, match_key, resolve_columns

PATH = Path("pets.csv")


@pytest.mark.parametrize(
    "header", ["categoryId", "category_id", "Category ID", "CATEGORYID", " category id "]
)
def test_headers_match_ignoring_case_spaces_underscores(header: str) -> None:
    assert match_key(header) == "categoryid"
    columns = resolve_columns(["Name", header], [], PATH)
    assert (columns.name, columns.categoryId, columns.status) == (0, 1, None)


def test_other_and_petsync_columns() -> None:
    header = ["notes", "name", "categoryId", "Status", "notes", "petsync_row", "petsync_error"]
    assert resolve_columns(header, [], PATH) == ColumnMap(
        name=1, categoryId=2, status=3, carried=(0, 1, 2, 3, 4)
    )


def test_an_accepted_file_is_never_imported_again() -> None:
    with pytest.raises(InputError) as info:
        resolve_columns(["name", "categoryId", "petsync_row", "petsync_id"], [], PATH)
    assert str(info.value) == (
        "pets.csv has a petsync_id column: it lists pets petsync already created (an accepted "
        "file); importing it would create them again. Import the original file, its reject "
        "file or its uncertain file instead"
    )


def test_map_names_a_column_for_a_field() -> None:
    columns = resolve_columns(["Pet", "Cat"], ["Pet=name", "cat=categoryId"], PATH)
    assert (columns.name, columns.categoryId) == (0, 1)


def test_mapped_field_wins_over_a_matching_header() -> None:
    columns = resolve_columns(["name", "Pet name", "categoryId"], ["Pet name=name"], PATH)
    assert columns.name == 1
    assert columns.carried == (0, 1, 2)


def test_missing_required_column_names_the_columns_found() -> None:
    with pytest.raises(InputError) as info:
        resolve_columns(["Name", "Cat", "Status"], [], PATH)
    assert str(info.value) == (
        "pets.csv: no column for 'categoryId'; columns found: 'Name', 'Cat', 'Status'. "
        'Name the header categoryId, or pass mappings="COLUMN=categoryId"'
    )


def test_field_mapped_twice_is_refused() -> None:
    with pytest.raises(InputError) as info:
        resolve_columns(["A", "B", "categoryId"], ["A=name", "B=name"], PATH)
    assert str(info.value) == (
        "pets.csv: field 'name' is mapped twice with mappings=; map each field once. "
        "Columns found: 'A', 'B', 'categoryId'"
    )


def test_two_headers_matching_one_field_are_refused() -> None:
    with pytest.raises(InputError) as info:
        resolve_columns(["name", "Name", "categoryId"], [], PATH)
    assert str(info.value) == (
        "pets.csv: field 'name' matches two columns, 'name' (column 1) and 'Name' (column 2); "
        'rename one, or pass mappings="COLUMN=name" to say which one holds it'
    )


def test_a_map_naming_no_column_of_this_file_is_ignored_for_it() -> None:
    # A job's map written for one sheet must not fail the inbox's other files.
    columns = resolve_columns(["name", "categoryId", "Status"], ["Kind=status"], PATH)
    assert (columns.status, columns.ignored_maps, columns.mapped) == (2, ("Kind=status",), ())


def test_a_required_field_missing_after_an_ignored_map_names_the_map() -> None:
    with pytest.raises(InputError) as info:
        resolve_columns(["Pet", "categoryId"], ["Animal=name"], PATH)
    assert str(info.value) == (
        "pets.csv: no column for 'name'; columns found: 'Pet', 'categoryId' (mappings="
        "'Animal=name' names no column of this file). Name the header name, or pass "
        'mappings="COLUMN=name"'
    )


def test_unsent_columns_and_the_map_that_would_send_one() -> None:
    header = ["name", "categoryId", "photoUrls", "tags", "id", "Pet status", ""]
    columns = resolve_columns(header, [], PATH)
    assert columns.unsent(header) == ["photoUrls", "tags", "id", "Pet status"]
    assert [str(hint) for hint in columns.map_hints(header)] == ['mappings="Pet status=status"']
    with_status = resolve_columns([*header, "status"], [], PATH)
    assert with_status.map_hints([*header, "status"]) == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("nonsense", 'must look like "Column=field"'),
        ("A=colour", "'colour' is not a field; use one of name, categoryId, status"),
    ],
    ids=["no-equals", "unknown-field"],
)
def test_bad_map_values(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        resolve_columns(["A"], [text], PATH)


def test_a_category_column_is_category_id_only_when_no_column_is_headed_so() -> None:
    alone = resolve_columns(["Name", "Category", "Status"], [], Path("p.csv"))
    assert (alone.name, alone.categoryId, alone.status) == (0, 1, 2)
    both = resolve_columns(["name", "Category", "categoryId"], [], Path("p.csv"))
    assert both.categoryId == 2 and both.unsent(["name", "Category", "categoryId"]) == ["Category"]
