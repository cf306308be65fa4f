"""Decoding a listPets page into columns: the typed fast path and the standard path agree.

The typed decoder (msgspec) only ever accepts pages whose every record the standard path
(``json.loads`` and the record-by-record checks) accepts with the same values; everything
else falls back to the standard path, so refusals and quarantine reasons are unchanged.
"""

from __future__ import annotations

import json

import pytest

from petsync.client.records import (
    InvalidRecord,
    PetColumns,
    Records,
    decode_page,
    parse_records,
    record_key,
    typed_records,
)
from petsync.core.errors import ProtocolError
from petsync.core.models import INT64_MAX, INT64_MIN, Pet, parse_pet

PARSE_CASES = [
    {"id": INT64_MAX, "name": "max", "categoryId": INT64_MIN},
    {"id": INT64_MIN, "name": "", "categoryId": INT64_MAX, "status": "sold"},
    {"id": 1, "name": "null status", "categoryId": 2, "status": None},
    {"id": 2, "name": "extra keys", "categoryId": 3, "tags": [1], "status": "weird"},
    {"id": 3, "name": '=é😀,"\n', "categoryId": 0, "status": ""},
    {"id": INT64_MAX + 1, "name": "too big", "categoryId": 1},
    {"id": 4, "name": "too small category", "categoryId": INT64_MIN - 1},
    {"id": True, "name": "bool id", "categoryId": 1},
    {"id": 5, "name": "bool category", "categoryId": False},
    {"id": 6.0, "name": "float id", "categoryId": 1},
    {"id": 7, "name": 7, "categoryId": 1},
    {"id": 8, "name": "int status", "categoryId": 1, "status": 1},
    {"name": "no id", "categoryId": 1},
    {"id": 9, "name": "no category"},
    [1, "a", 2],
    "rex",
    None,
]


def _rows(records: Records) -> list[Pet]:
    return records.columns.pets()


def test_parse_records_gives_what_parse_pet_gives() -> None:
    records = parse_records(list(PARSE_CASES), "URL")
    valid: list[Pet] = []
    invalid: list[tuple[int, InvalidRecord]] = []
    for position, record in enumerate(PARSE_CASES):
        try:
            valid.append(parse_pet(record))
        except ProtocolError as exc:
            invalid.append((position, InvalidRecord(record=record, reason=exc.message, url="URL")))
    assert _rows(records) == valid
    assert records.invalid == invalid
    assert records.keys == [record_key(record) for record in PARSE_CASES]
    assert records.keys[:5] == [INT64_MAX, INT64_MIN, 1, 2, 3]
    assert records.all_valid is False
    assert parse_records(list(PARSE_CASES[:5]), "URL").all_valid is True


# Pages the typed decoder accepts: the same values as the standard path, in order.
ACCEPTED = {
    "valid records": json.dumps(PARSE_CASES[:5]).encode(),
    "empty page": b" [ ]\n",
    "status null then string": b'[{"id": 1, "name": "a", "categoryId": 3, "status": null}]',
    "unknown status kept": b'[{"id": 1, "name": "a", "categoryId": 3, "status": "lost"}]',
    "escapes and pairs": b'[{"id": 1, "name": "\\u00e9\\ud83d\\ude00\\n\\"", "categoryId": -0}]',
    "huge unknown float": b'[{"id": 1, "name": "a", "categoryId": 3, "x": 1e999}]',
    "utf-8 text": '[{"id": 1, "name": "猫咪 Zoë", "categoryId": 3}]'.encode(),
}


@pytest.mark.parametrize("body", list(ACCEPTED.values()), ids=list(ACCEPTED))
def test_the_typed_decoder_gives_the_standard_answer(body: bytes) -> None:
    typed = typed_records(body)
    assert typed is not None and typed.typed and typed.body is body
    standard = parse_records(json.loads(body), "URL")
    assert standard.invalid == [] and typed.invalid == []
    assert _rows(typed) == _rows(standard)
    assert list(typed.keys) == list(standard.keys)
    assert decode_page(body, 200, "URL").columns.ids == typed.columns.ids


# Pages the typed decoder refuses: the standard path decides, as it always did.
REFUSED = {
    "float id": b'[{"id": 1.0, "name": "a", "categoryId": 3}]',
    "exponent id": b'[{"id": 1e2, "name": "a", "categoryId": 3}]',
    "bool id": b'[{"id": true, "name": "a", "categoryId": 3}]',
    "string id": b'[{"id": "1", "name": "a", "categoryId": 3}]',
    "2**63": b'[{"id": 9223372036854775808, "name": "a", "categoryId": 3}]',
    "-2**63-1 category": b'[{"id": 1, "name": "a", "categoryId": -9223372036854775809}]',
    "int status": b'[{"id": 1, "name": "a", "categoryId": 3, "status": 5}]',
    "no name": b'[{"id": 1, "categoryId": 3}]',
    "not an object": b'[{"id": 1, "name": "a", "categoryId": 3}, [1]]',
    "lone surrogate": b'[{"id": 1, "name": "\\ud800", "categoryId": 3}]',
    "NaN": b'[{"id": 1, "name": "a", "categoryId": 3, "x": NaN}]',
    "byte-order mark": b'\xef\xbb\xbf[{"id": 1, "name": "a", "categoryId": 3}]',
    "utf-16": '[{"id": 1, "name": "a", "categoryId": 3}]'.encode("utf-16"),
}


@pytest.mark.parametrize("body", list(REFUSED.values()), ids=list(REFUSED))
def test_the_typed_decoder_leaves_every_doubtful_page_to_the_standard_path(body: bytes) -> None:
    assert typed_records(body) is None
    decoded = decode_page(body, 200, "URL")
    standard = parse_records(json.loads(body), "URL")
    assert decoded == Records(standard.keys, decoded.columns, standard.invalid)
    assert _rows(decoded) == _rows(standard)
    assert decoded.body is None


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"[1, 2", "GET URL answered 200 with a body that is not JSON (JSONDecodeError: "),
        (b'{"id": 1}', "GET URL answered a JSON dict where listPets must return a JSON array"),
        (b"[" * 200_000 + b"]" * 200_000, "GET URL answered JSON nested deeper than 100 levels"),
    ],
    ids=["truncated", "object", "nested"],
)
def test_a_page_that_is_no_array_of_records_fails_as_before(body: bytes, message: str) -> None:
    with pytest.raises(ProtocolError) as caught:
        decode_page(body, 200, "URL")
    assert str(caught.value).startswith(message)


def test_columns_give_pets_and_keep_rows_by_mask() -> None:
    columns = PetColumns.of([Pet(1, "a", 2, None), Pet(3, "b", 4, "sold"), Pet(5, "c", 6, "")])
    assert columns.where([True, False, True]).pets() == [Pet(1, "a", 2, None), Pet(5, "c", 6, "")]
    assert len(PetColumns.empty()) == 0


def test_a_page_without_extra_fields_has_no_extras_column() -> None:
    typed = typed_records(json.dumps(PARSE_CASES[:2]).encode())
    assert typed is not None and typed.columns.extras is None


# Pages with fields beyond the interface's: the typed decoder keeps them, as JSON text per
# record, and agrees with the standard path.
EXTRA = {
    "some records": b'[{"id": 1, "name": "a", "categoryId": 3, "tag": "calm"},'
    b' {"id": 2, "name": "b", "categoryId": 3}]',
    "nested and typed": b'[{"id": 1, "name": "a", "categoryId": 3, "owner": {"n": [1, 2.5]},'
    b' "w": 2.5, "v": true, "big": 123456789012345678901234567890, "nil": null}]',
    "other case is extra": b'[{"id": 1, "name": "a", "categoryId": 3, "CategoryId": 9}]',
    "non-ascii": '[{"id": 1, "name": "a", "categoryId": 3, "tag": "猫 Zoë"}]'.encode(),
}


@pytest.mark.parametrize("body", list(EXTRA.values()), ids=list(EXTRA))
def test_extra_fields_ride_along_as_json_text_on_both_paths(body: bytes) -> None:
    typed = typed_records(body)
    assert typed is not None and typed.typed
    data = json.loads(body)
    standard = parse_records(data, "URL")
    assert typed.columns.extras == standard.columns.extras
    assert typed.columns.extras is not None
    for text, record in zip(typed.columns.extras, data, strict=True):
        extra = {k: v for k, v in record.items() if k not in ("id", "name", "categoryId", "status")}
        assert (json.loads(text) if text is not None else {}) == extra
    assert _rows(typed) == _rows(standard)


def test_an_extra_field_named_like_a_known_one_is_extra_not_merged() -> None:
    body = b'[{"id": 1, "name": "a", "categoryId": 3, "CategoryId": 9, "ID": 5}]'
    records = decode_page(body, 200, "URL")
    assert records.columns.categories == [3] and records.columns.ids == [1]
    assert records.columns.extras == ['{"CategoryId":9,"ID":5}']


def test_a_known_field_of_the_wrong_type_is_refused_even_beside_extra_fields() -> None:
    body = b'[{"id": 1, "name": "a", "categoryId": "7", "tag": "x"}, {"id": 2, "categoryId": 7}]'
    records = decode_page(body, 200, "URL")
    assert len(records.columns) == 0
    assert [r.reason for _, r in records.invalid] == [
        "Pet 'categoryId' must be an int64 integer, got str '7'",
        "Pet 'name' must be a string, got NoneType None",
    ]


def test_rows_kept_by_mask_keep_their_extra_fields() -> None:
    columns = PetColumns([1, 2, 3], ["a", "b", "c"], [7, 7, 7], [None] * 3, [None, '{"t":1}', None])
    assert columns.where([False, True, True]).extras == ['{"t":1}', None]


@pytest.mark.parametrize(
    "body",
    [
        b'[{"id": 1, "name": "a", "categoryId": 3, "x": NaN}]',
        b'[{"id": 1, "name": "a", "categoryId": 3, "x": 1e999}]',
        b'[{"id": 1, "name": "a", "categoryId": 3, "x": ["\\ud800", null]}]',
    ],
    ids=["NaN", "infinity", "lone surrogate"],
)
def test_extra_values_strict_json_cannot_hold_are_kept_exactly(body: bytes) -> None:
    records = decode_page(body, 200, "URL")
    assert records.columns.extras is not None
    (text,) = records.columns.extras
    assert text is not None
    assert repr(json.loads(text)["x"]) == repr(json.loads(body)[0]["x"])


# Records whose readers could disagree (a key sent twice) or that Python cannot read as a
# number (an id of thousands of digits) are quarantined alone; the rest of the page is kept.
GOOD = b'{"id": 7, "name": "kept", "categoryId": 3}'
ODD = {
    "id twice": (
        b'{"id": 1, "id": 2, "name": "a", "categoryId": 3}',
        "the key 'id' more than once",
    ),
    "id twice, compact": (
        b'{"id":1,"id":2,"name":"a","categoryId":3}',
        "the key 'id' more than once",
    ),
    "status twice, compact": (
        b'{"id":1,"name":"a","categoryId":3,"status":"sold","status":"available"}',
        "the key 'status' more than once",
    ),
    "status null twice": (
        b'{"id": 1, "name": "a", "categoryId": 3, "status": null, "status": null}',
        "the key 'status' more than once",
    ),
    "name twice": (
        b'{"id": 1, "name": "a", "categoryId": 3, "name": "b"}',
        "the key 'name' more than once",
    ),
    "id twice, one escaped": (
        b'{"id": 1, "\\u0069d": 2, "name": "a", "categoryId": 3}',
        "the key 'id' more than once",
    ),
    "an extra field twice": (
        b'{"id": 1, "name": "a", "categoryId": 3, "tag": 1, "tag": 2}',
        "the key 'tag' more than once",
    ),
    "twice inside an extra field": (
        b'{"id": 1, "name": "a", "categoryId": 3, "owner": {"n": [{"k": 1, "k": 2}]}}',
        "the key 'k' more than once in its field 'owner.n[0]'",
    ),
    "an id of 5,000 digits": (
        b'{"id": ' + b"9" * 5000 + b', "name": "a", "categoryId": 3}',
        "Pet 'id' must be an int64 integer, got a number of 5000 digits (99999999999999999999...",
    ),
    "a categoryId of 4,301 digits": (
        b'{"id": 1, "name": "a", "categoryId": -' + b"1" * 4301 + b"}",
        "Pet 'categoryId' must be an int64 integer, got a number of 4301 digits",
    ),
    "an extra field of 5,000 digits": (
        b'{"id": 1, "name": "a", "categoryId": 3, "n": ' + b"1" * 5000 + b"}",
        "Pet 'n' holds a number of 5000 digits",
    ),
}


@pytest.mark.parametrize(("record", "reason"), list(ODD.values()), ids=list(ODD))
def test_a_record_readers_could_misread_is_quarantined_and_the_page_kept(
    record: bytes, reason: str
) -> None:
    body = b"[" + GOOD + b", " + record + b", " + GOOD.replace(b"7", b"8") + b"]"
    assert typed_records(body) is None
    records = decode_page(body, 200, "URL")
    assert records.columns.ids == [7, 8]
    [(position, invalid)] = records.invalid
    assert position == 1 and invalid.url == "URL"
    assert reason in invalid.reason
    assert len(records.keys) == 3


def test_a_record_with_a_key_twice_is_kept_as_sent() -> None:
    body = b'[{"id": 1, "name": "a", "id": 2, "categoryId": 3}]'
    [(_, invalid)] = decode_page(body, 200, "URL").invalid
    text = json.dumps(invalid.record)
    assert text == '{"id": 1, "name": "a", "id": 2, "categoryId": 3}'
    assert "more than once" in invalid.reason and "send each key once" in invalid.reason


def test_two_records_with_different_repeats_are_two_records() -> None:
    one = b'{"id": 1, "id": 2, "name": "a", "categoryId": 3}'
    two = b'{"id": 5, "id": 2, "name": "a", "categoryId": 3}'
    records = decode_page(b"[" + one + b"," + two + b"]", 200, "URL")
    assert len(set(records.keys)) == 2 and 2 not in records.keys  # not known by a doubtful id


@pytest.mark.parametrize(
    "body",
    [
        b'[{"id": 1, "name": "id", "categoryId": 3}]',
        b'[{"id": 1, "name": "\\u0041\\u00e9", "categoryId": 3, "status": "status"}]',
    ],
    ids=["a name that reads like a key", "an escaped letter"],
)
def test_a_page_that_only_looks_doubtful_gives_the_same_pets(body: bytes) -> None:
    assert typed_records(body) is None  # the standard path looks at each object's keys
    records = decode_page(body, 200, "URL")
    assert (
        records.all_valid
        and records.columns.pets() == parse_records(json.loads(body), "URL").columns.pets()
    )


def test_the_typed_path_still_takes_pages_with_escapes_that_spell_no_letter() -> None:
    body = b'[{"id": 1, "name": "\\u00e9\\u0000\\ud83d\\ude00", "categoryId": 3}]'
    assert typed_records(body) is not None


def test_a_page_mixing_null_and_absent_status_stays_on_the_typed_path() -> None:
    body = (
        b'[{"id": 1, "name": "a", "categoryId": 3, "status": null},'
        b' {"id": 2, "name": "b", "categoryId": 3}, {"id": 3, "name": "c", "categoryId": 3,'
        b' "status": "sold"}]'
    )
    typed = typed_records(body)
    assert typed is not None and typed.columns.statuses == [None, None, "sold"]
