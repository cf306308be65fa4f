"""Pagination strategies for listPets, as small classes behind one tiny protocol.

The interface says listPets is paginated but shows no control beyond ``limit``. Each
strategy knows its first request and, given a fetched page, what comes next (:class:`Step`):
another request, or the end, proven (``complete``) or not (with a reason and a fix). The one
paging loop in :mod:`petsync.client.client` drives them and adds the checks common to all: the page
cap, repeated requests and pages of records already seen (loops).

How each style proves the end:

* ``link`` / ``cursor``: the server stops sending ``Link: <...>; rel="next"`` (or the
  ``X-Next-Cursor`` header). A *full* first page without one proves nothing (the server may
  page some other way), so it is flagged incomplete.
* ``offset`` / ``page``: an empty page, or a page shorter than both ``limit`` and the longest
  page seen before (a server that caps pages below ``limit`` still pages on).
* ``none``: a short page; a full one is flagged incomplete.
* ``auto``: follows a next link or cursor when the first page has one; otherwise probes
  ``offset`` and then ``page`` and accepts one only when the probe page is non-empty and shares
  no record with the first page (the probe page is then used, not thrown away).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Protocol

import httpx

from petsync.client.exchange import AnswerHeaders
from petsync.client.origins import origin, origin_text, same_origin_target
from petsync.core.errors import PaginationError, ProtocolError
from petsync.core.interface import CURSOR_HEADER, CURSOR_PARAM, LINK_LENGTH_LIMIT
from petsync.core.text import shown_text

OFFSET_PARAM = "offset"
PAGE_PARAM = "page"
LIMIT_PARAM = "limit"
FIRST_REQUEST = "the first request"


class PageRequest:
    """A page to fetch: its absolute URL and how paging got there (for messages).

    ``text`` is the URL as httpx writes it: what is sent, and what the paging loop compares
    to find a repeat. The parsed ``url`` is built only when asked for (a message, a link to
    resolve against it): parsing costs more than fetching a page's worth of records.
    """

    __slots__ = ("__dict__", "text", "via")

    def __init__(self, url: httpx.URL | str, via: str, *, text: str | None = None) -> None:
        if isinstance(url, httpx.URL):
            self.__dict__["url"] = url
            url = str(url) if text is None else text
        self.text = url
        self.via = via

    @cached_property
    def url(self) -> httpx.URL:
        return httpx.URL(self.text)

    def __repr__(self) -> str:
        return f"PageRequest({self.text!r}, {self.via!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PageRequest) and (self.text, self.via) == (other.text, other.via)

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True)
class FetchedPage:
    """What a strategy sees of a fetched page: the request, its headers, its record keys.

    ``keys`` identify the records in order (the pet id, or the raw record for one that has
    no valid id); ``rows`` counts every record the server sent, valid or not. ``url`` is the
    page's URL (petsync follows no redirect, so it is the request's).
    """

    request: PageRequest
    headers: AnswerHeaders
    keys: Sequence[Hashable]

    @property
    def url(self) -> httpx.URL:
        return self.request.url

    @property
    def rows(self) -> int:
        return len(self.keys)


@dataclass(frozen=True)
class Step:
    """A strategy's verdict on a page: keep it?, and the next request or the end."""

    keep: bool
    next: PageRequest | None
    complete: bool = True
    reason: str | None = None


class Strategy(Protocol):
    """The protocol every pagination strategy follows.

    ``name`` is the style in use; ``auto`` renames itself once it has detected one.
    """

    name: str

    def first(self) -> PageRequest: ...

    def next(self, page: FetchedPage) -> Step: ...


def make_strategy(style: str, list_url: httpx.URL, limit: int) -> Strategy:
    """The strategy for ``style`` over ``list_url`` (the listPets URL with limit/status)."""
    try:
        strategy = _STRATEGIES[style]
    except KeyError:
        raise ValueError(f"unknown pagination style {style!r}") from None
    return strategy(list_url, limit)


# Linear in the header's length whatever the server sends: a target stops at the next "<"
# (so a run of "<" without ">" costs one pass, not one pass per "<"), and the parameters'
# separators ";" cannot be matched by the text between them. tests/client/test_pagination.py
# runs every pattern here over hostile values at the size libcurl lets a header line reach.
_LINK = re.compile(r"<([^<>]*)>((?:[ \t]*;[ \t]*[^;,]+)*)")
_REL = re.compile(r"""(?i)(?:^|;)\s*rel\s*=\s*(?:"([^"]*)"|([^\s;,"]+))""")


def next_link(headers: AnswerHeaders) -> str | None:
    """The target of the first RFC 8288 link with relation type ``next``, as written."""
    for value in headers.get_list("link"):
        for match in _LINK.finditer(value):
            rel = _REL.search(match.group(2))
            if rel and "next" in (rel.group(1) or rel.group(2) or "").lower().split():
                return match.group(1).strip()
    return None


def next_cursor(headers: AnswerHeaders) -> str | None:
    value = headers.get(CURSOR_HEADER, "").strip()
    return value or None


def _check_length(page: FetchedPage, token: str, what: str) -> None:
    """Refuse a next link or cursor over :data:`LINK_LENGTH_LIMIT` characters: each one
    followed is kept (as a digest) and sent back, so its length must be bounded."""
    if len(token) > LINK_LENGTH_LIMIT:
        raise PaginationError(
            f"the server at {shown_text(str(page.url), 200)} sent a {what} of {len(token)} "
            f"characters, more than the {LINK_LENGTH_LIMIT} petsync follows "
            f"('{shown_text(token, 80)}'); the server's paging is broken: report it to the "
            "API owner"
        )


def _full_page_reason(page: FetchedPage, style: str, missing: str) -> str:
    return (
        f"the server sent a full page ({page.rows} records) at {page.url} and {missing}, so "
        f"petsync cannot tell whether more records follow (pagination {style}); use pagination "
        "auto, or set the style the server really uses (link, cursor, offset or page)"
    )


_NO_LINK = 'no Link rel="next" header'
_NO_CURSOR = f"no {CURSOR_HEADER} header"


def _end_of_tokens(page: FetchedPage, style: str, limit: int, seen: bool, missing: str) -> Step:
    """The end rule of the server-driven styles when a page brings no next token.

    After a token has been seen, its absence (or an empty page) is the server saying "done";
    on the first page only a short page proves the end, a full one is flagged incomplete.
    """
    if seen or page.rows < limit:
        return Step(keep=True, next=None)
    return Step(
        keep=True, next=None, complete=False, reason=_full_page_reason(page, style, missing)
    )


class _TokenPaging:
    """What the server-driven styles share: the first request, and whether a token came."""

    def __init__(self, list_url: httpx.URL, limit: int) -> None:
        self._list_url = list_url
        self._limit = limit
        self._seen = False  # a next token has come, so its absence now means "done"

    def first(self) -> PageRequest:
        return PageRequest(self._list_url, FIRST_REQUEST)


class LinkPaging(_TokenPaging):
    """Follows RFC 8288 ``Link: <...>; rel="next"``, resolved against the response URL.

    A next link to another origin (scheme, host, port) is refused: the bearer key must not
    leave the API's host. A plain path on the listing's own origin (the usual next link,
    :func:`same_origin_target`) is resolved by concatenation, without parsing a URL.
    """

    name = "link"

    def __init__(self, list_url: httpx.URL, limit: int) -> None:
        super().__init__(list_url, limit)
        self._origin = origin_text(list_url)

    def next(self, page: FetchedPage) -> Step:
        target = next_link(page.headers)
        if target is None or page.rows == 0:
            return _end_of_tokens(page, self.name, self._limit, self._seen, _NO_LINK)
        _check_length(page, target, "next link")
        if same_origin_target(target):
            self._seen = True
            via = f"the next link '{shown_text(target)}'"
            return Step(keep=True, next=PageRequest(self._origin + target, via))
        try:
            url = page.url.join(target)
        except httpx.InvalidURL as exc:  # a URL parse error, not a transport error
            raise ProtocolError(
                f"the server sent a next link '{shown_text(target)}' at {page.url} that is not "
                f"a URL: {shown_text(str(exc))}"
            ) from exc
        if origin(url) != origin(self._list_url):
            raise PaginationError(
                f"the server at {page.url} sent a next link to another origin ({url.scheme}://"
                f"{shown_text(url.netloc.decode('ascii'), 100)}); petsync refuses to follow it "
                "because the API key would go to that host. Ask the API owner to keep next "
                "links on the API's own host"
            )
        self._seen = True
        return Step(keep=True, next=PageRequest(url, f"the next link '{shown_text(target)}'"))


class CursorPaging(_TokenPaging):
    """Sends the ``X-Next-Cursor`` response header back as the ``cursor`` query parameter."""

    name = "cursor"

    def next(self, page: FetchedPage) -> Step:
        cursor = next_cursor(page.headers)
        if cursor is None or page.rows == 0:
            return _end_of_tokens(page, self.name, self._limit, self._seen, _NO_CURSOR)
        _check_length(page, cursor, "cursor")
        self._seen = True
        url = self._list_url.copy_set_param(CURSOR_PARAM, cursor)
        return Step(keep=True, next=PageRequest(url, f"the cursor '{shown_text(cursor)}'"))


_MARKER = 918273645546372819  # a number no listing URL holds (else: copy_set_param)


class _CountingPaging:
    """Shared end rule of ``offset`` and ``page``: empty, or shorter than limit and longest.

    Both know the requests ahead (:meth:`ahead`): the next page numbers, or the next
    offsets if every page until then holds as many records as the longest so far.
    """

    param: str

    def __init__(self, list_url: httpx.URL, limit: int, *, position: int, longest: int) -> None:
        self._list_url = list_url
        self._limit = limit
        self._longest = longest
        self._position = position  # the offset or number of the last request made
        # A page's URL as httpx writes it, around the number (written alike, digits being
        # kept as they are): each request ahead is then a string, parsed only if sent.
        marker = str(_MARKER)
        text = str(list_url.copy_set_param(self.param, _MARKER))
        self._around = text.split(marker) if text.count(marker) == 1 else None

    def first(self) -> PageRequest:
        return PageRequest(self._list_url, FIRST_REQUEST)

    def _ends(self, page: FetchedPage) -> bool:
        short = page.rows < self._limit and page.rows < self._longest
        self._longest = max(self._longest, page.rows)
        return page.rows == 0 or short

    def _at(self, position: int) -> PageRequest:
        via = f"{self.param} {position}"
        if self._around is None:  # the listing's URL holds the marker's digits
            return PageRequest(self._list_url.copy_set_param(self.param, position), via)
        before, after = self._around
        return PageRequest(f"{before}{position}{after}", via)

    def ahead(self, count: int) -> list[PageRequest]:
        """The ``count`` requests expected after the last one :meth:`next` gave."""
        step = self._longest if self.param == OFFSET_PARAM else 1
        return [self._at(self._position + step * k) for k in range(1, count + 1)]


class OffsetPaging(_CountingPaging):
    """``offset=N``, stepping by the records actually received (never by ``limit``)."""

    name = param = OFFSET_PARAM

    def __init__(
        self, list_url: httpx.URL, limit: int, *, offset: int = 0, longest: int = 0
    ) -> None:
        super().__init__(list_url, limit, position=offset, longest=longest)

    def next(self, page: FetchedPage) -> Step:
        self._position += page.rows
        if self._ends(page):
            return Step(keep=True, next=None)
        return Step(keep=True, next=self._at(self._position))


class PageNumberPaging(_CountingPaging):
    """``page=N``, 1-based; the first request sends no page (the server's page 1)."""

    name = param = PAGE_PARAM

    def __init__(self, list_url: httpx.URL, limit: int, *, number: int = 1, longest: int = 0):
        super().__init__(list_url, limit, position=number, longest=longest)

    def next(self, page: FetchedPage) -> Step:
        if self._ends(page):
            return Step(keep=True, next=None)
        self._position += 1
        return Step(keep=True, next=self._at(self._position))


class NoPaging:
    """One request; a full page cannot be proven to be the whole catalogue."""

    name = "none"

    def __init__(self, list_url: httpx.URL, limit: int) -> None:
        self._list_url = list_url
        self._limit = limit

    def first(self) -> PageRequest:
        return PageRequest(self._list_url, FIRST_REQUEST)

    def next(self, page: FetchedPage) -> Step:
        if page.rows < self._limit:
            return Step(keep=True, next=None)
        return Step(
            keep=True,
            next=None,
            complete=False,
            reason=_full_page_reason(page, self.name, "petsync was told not to page"),
        )


class AutoPaging:
    """Detects the server's style from the first page, and proves it before trusting it.

    A next link or cursor on the first page decides at once. Otherwise a non-empty first
    page is followed by a probe with ``offset`` and, if the server ignored that, ``page=2``
    (even after a short first page: the server may cap pages below ``limit``). A probe is
    accepted only when it brings records and none of them was on the first page; an empty
    probe answer proves the end. When the first page was short (n records) and the server
    ignored both probes, a last probe asks for ``limit=n-1``: if the server honours it, the
    short page proves the end (style ``none``); if it sends n again, it ignores ``limit`` and
    the listing is flagged incomplete. When the first page was full and nothing worked, the
    listing is flagged incomplete.
    """

    def __init__(self, list_url: httpx.URL, limit: int) -> None:
        self.name = "auto"
        self._list_url = list_url
        self._limit = limit
        self._delegate: Strategy | None = None
        self._first_page: FetchedPage | None = None
        self._probing: str | None = None

    def first(self) -> PageRequest:
        return PageRequest(self._list_url, FIRST_REQUEST)

    def next(self, page: FetchedPage) -> Step:
        if self._delegate is not None:
            return self._delegate.next(page)
        if self._first_page is None:
            return self._after_first(page)
        return self._after_probe(self._first_page, page)

    def ahead(self, count: int) -> list[PageRequest]:
        """What the detected style knows of the pages ahead (nothing while probing)."""
        ahead = getattr(self._delegate, "ahead", None)
        return [] if ahead is None else list(ahead(count))

    def _use(self, strategy: Strategy, page: FetchedPage) -> Step:
        self._delegate = strategy
        self.name = strategy.name
        return strategy.next(page)

    def _after_first(self, page: FetchedPage) -> Step:
        self._first_page = page
        if next_link(page.headers) is not None:
            return self._use(LinkPaging(self._list_url, self._limit), page)
        if next_cursor(page.headers) is not None:
            return self._use(CursorPaging(self._list_url, self._limit), page)
        if page.rows == 0:
            self.name = "none"
            return Step(keep=True, next=None)
        return self._probe(OFFSET_PARAM, page.rows)

    def _probe(self, param: str, value: int) -> Step:
        self._probing = param
        url = self._list_url.copy_set_param(param, value)
        return Step(
            keep=True, next=PageRequest(url, f"{param} {value} (probing how the server pages)")
        )

    def _after_probe(self, first: FetchedPage, probe: FetchedPage) -> Step:
        if self._probing == LIMIT_PARAM:
            return self._after_limit_probe(first, probe)
        if probe.rows == 0:
            # A server honouring the parameter has nothing after the first page; one
            # ignoring it would have sent the first page again, not an empty one.
            self.name = "none"
            return Step(keep=False, next=None)
        if not set(first.keys) & set(probe.keys):
            if self._probing == OFFSET_PARAM:
                strategy: Strategy = OffsetPaging(
                    self._list_url, self._limit, offset=first.rows, longest=first.rows
                )
            else:
                strategy = PageNumberPaging(
                    self._list_url, self._limit, number=2, longest=first.rows
                )
            return self._use(strategy, probe)
        if self._probing == OFFSET_PARAM:
            # Also after a short first page: a server paging by number may cap pages below
            # `limit`, and then its short first page is not the end.
            return Step(keep=False, next=self._probe(PAGE_PARAM, 2).next)
        if first.rows < self._limit:
            if first.rows < 2:
                self.name = "none"  # one record: no smaller limit can test the server
                return Step(keep=False, next=None)
            # A short page proves the end only if the server honours `limit`: one that
            # ignores it and always sends its own page size (the interface's default is 20)
            # would otherwise pass off its first page as the whole catalogue.
            return Step(keep=False, next=self._probe(LIMIT_PARAM, first.rows - 1).next)
        self.name = "unknown"
        return Step(
            keep=False,
            next=None,
            complete=False,
            reason=(
                f"the server sent a full first page ({first.rows} records) at {first.url} "
                f'with no Link rel="next" or {CURSOR_HEADER} header, and answered the '
                f"{OFFSET_PARAM} and {PAGE_PARAM} probes with records already on the first "
                "page; petsync cannot prove it has the whole catalogue. Ask the API owner how "
                "listPets pages and set that pagination style (link, cursor, offset or page)"
            ),
        )

    def _after_limit_probe(self, first: FetchedPage, probe: FetchedPage) -> Step:
        if probe.rows == first.rows - 1:
            self.name = "none"  # limit is honoured, so the short first page is everything
            return Step(keep=False, next=None)
        self.name = "unknown"
        return Step(
            keep=False,
            next=None,
            complete=False,
            reason=(
                f"the server sent {first.rows} records at {first.url} when asked for up to "
                f"{self._limit}, offers no way to the next page, and answered "
                f"limit={first.rows - 1} with {probe.rows} records: it does not honour "
                "`limit`, so its short first page does not prove the end of the catalogue. "
                "Ask the API owner how listPets pages and set that pagination style"
            ),
        )


# Each style's strategy; one more style is one class and one line here.
_STRATEGIES: dict[str, Callable[[httpx.URL, int], Strategy]] = {
    "link": LinkPaging,
    "cursor": CursorPaging,
    "offset": OffsetPaging,
    "page": PageNumberPaging,
    "none": NoPaging,
    "auto": AutoPaging,
}
