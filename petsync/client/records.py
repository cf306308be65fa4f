"""A listPets page's records, decoded straight into columns with every interface rule kept.

A page of a hundred pets is decoded by msgspec against a typed record (``id`` and
``categoryId`` int64, ``name`` a string, ``status`` a string or absent/null) in one C call:
no dict per record, no :class:`~petsync.core.models.Pet` per record, and the fields land in
four column lists (:class:`PetColumns`) that the export appends as they are.

The typed decoder is a fast path, never a judge: whenever it refuses a page (a float,
bool, string or out-of-range id, a record that is not an object, a lone surrogate, NaN,
a byte-order mark, a document nested too deep...) the page is decoded again with the
standard library and checked record by record (:func:`parse_records`), exactly as before,
so every record that breaks the interface is refused and quarantined with the same reason,
and a page that is not a JSON array of objects fails with the same message. Whenever the
typed decoder accepts a page, the standard path would have accepted every record with the
same values (``tests/client/test_records.py`` holds the two paths to the same answers).

Fields beyond the interface's (*extra fields*, see :data:`~petsync.core.interface.PET_FIELDS`)
are noticed, never dropped here: the typed decoder refuses unknown keys, so the usual page
(none) costs what it did; a page that has some is decoded by the same typed record
(unknown keys ignored), then once more as plain JSON for the extra keys alone. Each
record's extra fields ride along as the JSON text of one object (:attr:`PetColumns.extras`);
what becomes of them is the export's choice (``--extra-fields``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from itertools import compress
from typing import Annotated, Any

import msgspec

from petsync.client.body import (
    MAX_JSON_DEPTH,
    NestingError,
    Shown,
    nested_deeper_than,
    shown_of,
)
from petsync.client.json_checked import load_checked, problem
from petsync.core.errors import PetsyncError, ProtocolError
from petsync.core.interface import PET_FIELDS
from petsync.core.models import INT64_MAX, INT64_MIN, Pet, is_int64, parse_pet
from petsync.core.text import shown_text


@dataclass(frozen=True)
class InvalidRecord:
    """A listed record that breaks the interface (no id, float id, no name...), kept as sent."""

    record: object
    reason: str
    url: str


class PetColumns:
    """Valid pets as four parallel lists, in server order: the shape the export stores.

    >>> columns = PetColumns([1, 2], ["Rex", "Bo"], [7, 7], ["sold", None])
    >>> len(columns), columns.pets()[1]
    (2, Pet(id=2, name='Bo', categoryId=7, status=None))

    ``extras`` is None when no record carried a field beyond the interface's (the usual
    page), else one entry per row: the JSON text of the row's extra fields as one object
    (``{"tag":"calm"}``), or None for a row without any.
    """

    __slots__ = ("categories", "extras", "ids", "names", "statuses")

    def __init__(
        self,
        ids: list[int],
        names: list[str],
        categories: list[int],
        statuses: list[str | None],
        extras: list[str | None] | None = None,
    ) -> None:
        self.ids = ids
        self.names = names
        self.categories = categories
        self.statuses = statuses
        self.extras = extras

    @classmethod
    def empty(cls) -> PetColumns:
        return cls([], [], [], [])

    @classmethod
    def of(cls, pets: Iterable[Pet]) -> PetColumns:
        """Columns holding ``pets`` (for tests and callers that have Pet objects)."""
        columns = cls.empty()
        for pet in pets:
            columns.append(pet.id, pet.name, pet.categoryId, pet.status)
        return columns

    def __len__(self) -> int:
        return len(self.ids)

    def __repr__(self) -> str:
        return f"PetColumns({len(self)} pets)"

    def append(
        self, pet_id: int, name: str, category: int, status: str | None, extra: str | None = None
    ) -> None:
        if extra is not None and self.extras is None:
            self.extras = [None] * len(self.ids)
        if self.extras is not None:
            self.extras.append(extra)
        self.ids.append(pet_id)
        self.names.append(name)
        self.categories.append(category)
        self.statuses.append(status)

    def pets(self) -> list[Pet]:
        """The rows as :class:`Pet` objects (built on request; the export never asks)."""
        return list(map(Pet, self.ids, self.names, self.categories, self.statuses))

    def where(self, keep: Sequence[bool]) -> PetColumns:
        """The rows whose ``keep`` entry is True, in order.

        >>> PetColumns([1, 2, 3], ["a", "b", "c"], [7, 7, 7], [None, "sold", None]).where(
        ...     [True, False, True]
        ... ).pets()[1]
        Pet(id=3, name='c', categoryId=7, status=None)
        """
        extras = self.extras
        return PetColumns(
            list(compress(self.ids, keep)),
            list(compress(self.names, keep)),
            list(compress(self.categories, keep)),
            list(compress(self.statuses, keep)),
            None if extras is None else list(compress(extras, keep)),
        )


@dataclass(frozen=True)
class Records:
    """A fetched page's records in server order: identity keys, valid columns, invalid ones.

    ``keys`` has one entry per record sent (the id, or for a record without a valid id its
    text, see :func:`record_key`); ``columns`` holds the valid records in order, and
    ``invalid`` the others with their position in ``keys``. ``body`` is the page's JSON
    when the typed decoder read it (then every record was valid, and decoding ``body`` again
    with :func:`typed_records` gives the same columns).
    """

    keys: Sequence[Hashable]
    columns: PetColumns
    invalid: list[tuple[int, InvalidRecord]]
    body: bytes | bytearray | None = None

    @property
    def typed(self) -> bool:
        return self.body is not None

    @property
    def all_valid(self) -> bool:
        return not self.invalid


_Int64 = Annotated[int, msgspec.Meta(ge=INT64_MIN, le=INT64_MAX)]


class _Record(msgspec.Struct, gc=False, forbid_unknown_fields=True, omit_defaults=True):
    """The interface's Pet as the typed decoder reads it (an unknown key refuses the page).

    Encoded, it is the reference server's compact JSON (no ``status`` when it has none).
    """

    id: _Int64
    name: str
    categoryId: _Int64  # noqa: N815 - the API's spelling
    status: str | None = None


class _LenientRecord(_Record, forbid_unknown_fields=False):
    """The same record, unknown keys ignored: for pages that carry extra fields."""


_PAGE = msgspec.json.Decoder(list[_Record])
_LENIENT_PAGE = msgspec.json.Decoder(list[_LenientRecord])
_UNKNOWN_FIELD = "Object contains unknown field"  # msgspec's message for an unknown key
_KNOWN = frozenset(PET_FIELDS)
_ENCODE = msgspec.json.Encoder().encode
_ENCODE_PAGE = msgspec.json.Encoder().encode


def typed_records(body: bytes | bytearray) -> Records | None:
    """The page's records when every one is a valid Pet, decoded in one pass; else None.

    None sends the caller to the standard path (``json.loads`` and :func:`parse_records`),
    which decides what is wrong. A page whose records carry extra fields is decoded a second
    time, by the standard library, for those fields alone (:func:`extra_text`).
    """
    try:
        records: list[_Record] = _PAGE.decode(body)
    except msgspec.ValidationError as exc:
        if not str(exc).startswith(_UNKNOWN_FIELD):
            return None
        return _typed_with_extras(body)
    except (msgspec.MsgspecError, ValueError, RecursionError):
        return None
    if _may_repeat_keys(body, records):
        return None
    return _typed(records, body, None)


# The interface's required keys as they appear in the body; "status", which a record may
# leave out; a key spelled with an escaped ASCII letter ("\u0069d" is "id"), which could
# repeat a key without showing it.
_REQUIRED_TOKENS = (b'"id"', b'"name"', b'"categoryId"')
_STATUS_TOKEN = b'"status"'
_ESCAPED_LETTER = re.compile(rb"\\u00[4-7]")


class _Presence(msgspec.Struct, gc=False):
    """Whether a record sent ``status`` at all (null included); its other keys skipped."""

    status: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET


_PRESENCE = msgspec.json.Decoder(list[_Presence])


def _may_repeat_keys(body: bytes | bytearray, decoded: list[_Record]) -> bool:
    """False when no record of the page can hold a key twice (msgspec, like ``json.loads``,
    keeps a repeated key's last value without a word).

    A page that is the records' own compact JSON, byte for byte (what the reference server
    sends), holds each key once: that costs an encoding (about a third of the decoding).
    Otherwise the typed decoder accepted only the interface's keys, and each record holds
    each required one: a repeat shows as a key appearing more often than there are records
    (for ``status``, than records that sent one), unless it is spelled with an escape. A
    name that is itself ``"id"`` or holds an escaped letter only sends the page down the
    standard path, which checks each object's keys.
    """
    if _ENCODE_PAGE(decoded) == body:
        return False
    records = len(decoded)
    for token in _REQUIRED_TOKENS:
        if body.count(token) > records:
            return True
    statuses = body.count(_STATUS_TOKEN)
    if statuses > records - [r.status for r in decoded].count(None):  # more than named ones
        sent = sum(r.status is not msgspec.UNSET for r in _PRESENCE.decode(body))
        if statuses > sent:
            return True
    # A backslash is looked for at memchr's speed; the escapes only where there is one.
    return b"\\" in body and _ESCAPED_LETTER.search(body) is not None


def _typed(
    records: list[_Record] | list[_LenientRecord],
    body: bytes | bytearray,
    extras: list[str | None] | None,
) -> Records:
    ids = [r.id for r in records]
    columns = PetColumns(
        ids,
        [r.name for r in records],
        [r.categoryId for r in records],
        [r.status for r in records],
        extras,
    )
    return Records(ids, columns, [], body)


def _typed_with_extras(body: bytes | bytearray) -> Records | None:
    try:
        records = _LENIENT_PAGE.decode(body)
    except (msgspec.MsgspecError, ValueError, RecursionError):
        return None
    try:  # the standard library, which sees a key sent twice among the extra fields too
        data, odd = load_checked(body)
    except (ValueError, RecursionError):
        return None
    if odd or not isinstance(data, list) or len(data) != len(records):
        return None
    return _typed(records, body, [extra_text(record) for record in data])


def extra_text(record: dict[str, Any]) -> str | None:
    """The record's fields beyond the interface's as the JSON text of one object, or None.

    Keys keep the server's order; the text is compact UTF-8 JSON, so equal extra fields give
    equal text (the export's duplicate check hashes it). Values JSON cannot hold strictly
    (NaN, infinity, a lone surrogate: only the standard path reads them) are written the
    standard library's way, which reads them back.

    >>> extra_text({"id": 1, "name": "Rex", "categoryId": 7, "tag": "calm", "CategoryId": 7})
    '{"tag":"calm","CategoryId":7}'
    >>> extra_text({"id": 1, "name": "Rex", "categoryId": 7, "status": None}) is None
    True
    """
    if len(record) <= 4 and _KNOWN.issuperset(record):
        return None
    extra = {key: value for key, value in record.items() if key not in _KNOWN}
    if not extra:
        return None
    try:
        text = _ENCODE(extra)
    except (UnicodeEncodeError, TypeError, ValueError, OverflowError):
        return json.dumps(extra, separators=(",", ":"))
    if b"null" in text and not _finite(extra):  # msgspec writes NaN and infinity as null
        return json.dumps(extra, separators=(",", ":"))
    return text.decode()


def _finite(value: object) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    return True


def decode_page(body: bytes | bytearray, status_code: int, shown: Shown) -> Records:
    """A listPets answer's records: typed when every record is valid, else checked one by one.

    Raises :class:`ProtocolError` naming ``shown`` (the page's URL as shown to people) when the
    body is not a JSON array, or is nested too deep to be one of flat Pet objects. ``shown``
    is made only for a page the typed decoder refuses.
    """
    records = typed_records(body)
    if records is not None:
        return records
    shown = shown_of(shown)
    try:
        data, odd = load_checked(body)
    except NestingError as exc:
        raise ProtocolError(
            f"GET {shown} answered {exc}; listPets must return a JSON array of flat Pet "
            "objects: report it to the API owner"
        ) from None
    except ValueError as exc:
        raise ProtocolError(
            f"GET {shown} answered {status_code} with a body that is not JSON "
            f"({reason_of(exc)}); listPets must return a JSON array of Pet"
        ) from exc
    if not isinstance(data, list):
        raise ProtocolError(
            f"GET {shown} answered a JSON {type(data).__name__} where listPets must "
            "return a JSON array of Pet"
        )
    return parse_records(data, shown, checked=odd)


def reason_of(exc: Exception) -> str:
    """What went wrong, for a message: a petsync error's own text, else the exception's."""
    return exc.message if isinstance(exc, PetsyncError) else f"{type(exc).__name__}: {exc}"


def parse_records(data: list[Any], shown: str, *, checked: bool = False) -> Records:
    """Parse a decoded listPets page; records that break the interface become InvalidRecords.

    ``checked`` says that ``data`` (read by :func:`~petsync.client.json_checked.load_checked`)
    holds a key sent twice or a number too long to read somewhere: each record is then
    searched, and one holding either is invalid with what :func:`problem` says.

    A record that is an object with exactly the expected types goes into the columns inline
    (the checks of :func:`~petsync.core.models.parse_pet`, without its per-field loop and
    calls); anything else goes through ``parse_pet``, which gives the same values or the
    reason the record is invalid. Only such records are kept as sent, so only they are
    measured: one nested deeper than the page may be (:data:`MAX_JSON_DEPTH` levels, the
    page's array included) fails the page, as it could not be described or written out.
    """
    keys: list[Hashable] = []
    columns = PetColumns.empty()
    invalid: list[tuple[int, InvalidRecord]] = []
    for record in data:
        reason = problem(record) if checked else None
        if reason is not None:
            invalid.append((len(keys), InvalidRecord(record=record, reason=reason, url=shown)))
            keys.append(record_key(record))
            continue
        if type(record) is dict:
            pet_id = record.get("id")
            category = record.get("categoryId")
            name = record.get("name")
            status = record.get("status")
            if (
                type(pet_id) is int
                and type(category) is int
                and type(name) is str
                and (status is None or type(status) is str)
                and INT64_MIN <= pet_id <= INT64_MAX
                and INT64_MIN <= category <= INT64_MAX
                and (name.isascii() or _writable(name))
                and (status is None or status.isascii() or _writable(status))
            ):
                keys.append(pet_id)
                columns.append(pet_id, name, category, status, extra_text(record))
                continue
        if nested_deeper_than(record, MAX_JSON_DEPTH - 1):
            raise ProtocolError(
                f"GET {shown} answered a record nested deeper than {MAX_JSON_DEPTH} levels "
                "(the page's array included); listPets must return a JSON array of flat Pet "
                "objects: report it to the API owner"
            )
        try:
            pet = _writable_pet(parse_pet(record))
        except ProtocolError as exc:
            invalid.append((len(keys), InvalidRecord(record=record, reason=exc.message, url=shown)))
            keys.append(record_key(record))
        else:
            keys.append(pet.id)
            columns.append(pet.id, pet.name, pet.categoryId, pet.status, extra_text(record))
    return Records(keys, columns, invalid)


def _writable(text: str) -> bool:
    """True when ``text`` encodes as UTF-8: no lone surrogate, which JSON's ``\\ud800``
    escape can carry but no Parquet or CSV file can hold."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def _writable_pet(pet: Pet) -> Pet:
    """``pet`` if every text of it can be written to the snapshot; else the reason it cannot."""
    for field, text in (("name", pet.name), ("status", pet.status)):
        if text is not None and not _writable(text):
            raise ProtocolError(
                f"Pet {field!r} '{shown_text(text, 60)}' holds a lone UTF-16 surrogate (a "
                "broken string on the server), which no UTF-8 file can hold"
            )
    return pet


def record_key(record: object) -> Hashable:
    """A record's identity for loop and overlap checks: its id when that is an int64 (and
    the record sent it once: a record with a key twice is known by its text, all pairs)."""
    if type(record) is dict and is_int64(record.get("id")):
        key: Hashable = record["id"]
        return key
    return ("raw", repr(record))
