"""What the API sends (listPets pages, Link and cursor headers, Date headers): any answer
ends in records (each one writable to the snapshot), quarantined records, or a petsync
error (ProtocolError, PaginationError: exit 1); never another exception."""

from __future__ import annotations

import json

import httpx
from hypothesis import given
from hypothesis import strategies as st

from petsync.client.pagination import FetchedPage, PageRequest, make_strategy, next_link
from petsync.client.records import decode_page
from petsync.core.errors import PaginationError, ProtocolError
from petsync.core.interface import LINK_LENGTH_LIMIT
from petsync.export.clock import server_time
from tests.fuzz.budget import fuzz

_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),  # lone surrogates included
    st.sampled_from(["available", "pending", "sold", "\ud800", "Rex\x00"]),
)
_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=12), inner, max_size=5)
    ),
    max_leaves=40,
)
_PET_KEYS = st.sampled_from(["id", "name", "categoryId", "status", "extra"])
_PETS = st.lists(st.dictionaries(_PET_KEYS, _JSON, max_size=5), max_size=20)


def _check(body: bytes) -> None:
    try:
        records = decode_page(body, 200, "http://127.0.0.1/v1/pets")
    except ProtocolError:
        return
    columns = records.columns
    for name, status in zip(columns.names, columns.statuses, strict=True):
        name.encode()  # what the snapshot writers need: valid UTF-8 text
        if status is not None:
            status.encode()
    assert len(records.keys) == len(columns) + len(records.invalid)


@fuzz
@given(page=st.one_of(_PETS, _JSON), ascii_only=st.booleans())
def test_any_json_page_gives_writable_records_or_a_protocol_error(
    page: object, ascii_only: bool
) -> None:
    _check(json.dumps(page, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass"))


@fuzz
@given(body=st.binary(max_size=2_000))
def test_any_bytes_as_a_page_give_records_or_a_protocol_error(body: bytes) -> None:
    _check(body)


_HEADER_TEXT = st.text(
    alphabet=st.characters(min_codepoint=0x20, max_codepoint=0xFF, exclude_characters="\x7f"),
    max_size=300,
)
_LINKS = st.one_of(
    _HEADER_TEXT,
    st.builds(
        lambda target, rel: f"<{target}>; rel={rel}",
        _HEADER_TEXT,
        st.sampled_from(['"next"', "next", '"prev next"', "last", '"NEXT"']),
    ),
    st.builds(lambda n: f'</v1/pets?after={"x" * n}>; rel="next"', st.integers(0, 9_000)),
)


@fuzz
@given(link=_LINKS, rows=st.integers(0, 3), style=st.sampled_from(["link", "auto"]))
def test_any_link_header_gives_a_next_request_an_end_or_a_paging_error(
    link: str, rows: int, style: str
) -> None:
    headers = httpx.Headers([(b"link", link.encode("latin-1"))])  # as they come off the wire
    target = next_link(headers)
    assert target is None or isinstance(target, str)
    url = httpx.URL("http://127.0.0.1:8080/v1/pets?limit=3")
    strategy = make_strategy(style, url, 3)
    first = strategy.first()
    page = FetchedPage(PageRequest(first.url, first.via), headers, list(range(rows)))
    try:
        step = strategy.next(page)
    except (PaginationError, ProtocolError):
        return
    if step.next is not None:
        assert len(step.next.text) <= len(str(url)) + LINK_LENGTH_LIMIT


@fuzz
@given(dates=st.lists(st.one_of(st.none(), _HEADER_TEXT), max_size=5))
def test_any_date_header_parses_or_is_skipped(dates: list[str | None]) -> None:
    found = server_time(dates)
    assert found is None or found.tzinfo is not None
