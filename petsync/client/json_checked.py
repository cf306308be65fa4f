"""JSON read by the standard library with what it hides kept in sight: repeated keys, long numbers.

``json.loads`` keeps the last value of a key an object holds twice (``{"id":1,"id":2}`` reads as
``{"id": 2}``), and fails the whole document on an integer of more than 4,300 digits (Python's
own guard, with advice to raise it). A listPets page is read record by record: one record
must not speak for the page, and a record whose readers could disagree on its id must not be
stored as if it were clear. :func:`load_checked` reads a page so that such records stand out:

* an object holding a key more than once becomes a :class:`RepeatedKeys` (a dict with the
  last value of each key, as ``json.loads`` reads it, that remembers every pair as sent: JSON
  written from it holds both keys again);
* an integer too long for Python to read becomes a :class:`LongNumber` (its digits, as text).

:func:`problem` then names what is wrong with a record, if anything. Both costs fall only on
pages that need them: the repeated-key check is one Python call per object, paid only on the
standard path (see :mod:`petsync.client.records`), and long numbers are looked for only after
the standard library refused the page for one.
"""

from __future__ import annotations

from typing import Any

from petsync.client.body import parse_json
from petsync.core.text import shown_text

# Python's message when an integer is longer than sys.get_int_max_str_digits() allows.
_TOO_MANY_DIGITS = "integer string conversion"
_SHOWN_DIGITS = 20


class RepeatedKeys(dict[str, Any]):
    """A JSON object that holds some key more than once.

    As a dict it holds the last value of each key (what ``json.loads`` would give); ``pairs``
    holds every key and value in the order sent, and :meth:`items` gives them, so JSON
    written from it (``json.dumps`` asks a dict subclass for its items) is the object as sent.

    >>> import json
    >>> record = RepeatedKeys([("id", 1), ("id", 2)])
    >>> record["id"], json.dumps(record), record.repeated
    (2, '{"id": 1, "id": 2}', ['id'])
    """

    def __init__(self, pairs: list[tuple[str, Any]]) -> None:
        super().__init__(pairs)
        self.pairs = pairs

    def items(self) -> Any:  # the pairs as sent, repeats included
        return list(self.pairs)

    @property
    def repeated(self) -> list[str]:
        """The keys sent more than once, in the order they first came."""
        counts: dict[str, int] = {}
        for key, _ in self.pairs:
            counts[key] = counts.get(key, 0) + 1
        return [key for key, count in counts.items() if count > 1]

    def __repr__(self) -> str:
        inner = ", ".join(f"{key!r}: {value!r}" for key, value in self.pairs)
        return f"{{{inner}}}"


class LongNumber(str):
    """An integer longer than Python reads from text, kept as its digits.

    It is no int64 (nothing of more than 19 digits is), so a record holding one as its id is
    refused with its length named, and written out (to the quarantine) as its digits in a string.

    >>> LongNumber("-" + "9" * 5000).digits
    5000
    """

    __slots__ = ()

    def __repr__(self) -> str:  # as the int would show: never equal to a string's
        return str.__str__(self)

    @property
    def digits(self) -> int:
        return len(self) - self.startswith("-")

    def shown(self) -> str:
        return f"{self[:_SHOWN_DIGITS]}... ({self.digits} digits)"


def load_checked(body: bytes | bytearray) -> tuple[object, bool]:
    """``body`` decoded as :func:`~petsync.client.body.parse_json` does, and whether it holds
    a :class:`RepeatedKeys` or a :class:`LongNumber` anywhere (then :func:`problem` must look
    inside every record).

    Raises what ``parse_json`` raises for a body that is not JSON; an integer too long for
    Python is not such a body, it is read as a :class:`LongNumber`.
    """
    odd: list[bool] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        record = dict(items)
        if len(record) == len(items):
            return record
        odd.append(True)
        return RepeatedKeys(items)

    def read_int(text: str) -> int | LongNumber:
        try:
            return int(text)
        except ValueError:  # longer than sys.get_int_max_str_digits() digits
            odd.append(True)
            return LongNumber(text)

    try:
        data = parse_json(body, object_pairs_hook=pairs)
    except ValueError as exc:
        if _TOO_MANY_DIGITS not in str(exc):
            raise
        odd.clear()
        data = parse_json(body, object_pairs_hook=pairs, parse_int=read_int)
    return data, bool(odd)


def problem(record: object) -> str | None:
    """Why ``record`` (read by :func:`load_checked`) cannot be stored as read, or None: it
    holds a key twice, or a number too long to read, at any depth."""
    found = _first_odd(record)
    if found is None:
        return None
    where, odd = found
    if isinstance(odd, LongNumber):
        field = f"'{shown_text(where, 100)}'" if where else "value"
        if where in ("id", "categoryId"):
            return (
                f"Pet {field} must be an int64 integer, got a number of {odd.digits} digits "
                f"({odd.shown()})"
            )
        return (
            f"Pet {field} holds a number of {odd.digits} digits ({odd.shown()}), more than "
            "petsync reads: ask the API owner to send it as a string"
        )
    keys = ", ".join(f"'{shown_text(key, 60)}'" for key in odd.repeated)
    inside = f" in its field '{shown_text(where, 100)}'" if where else ""
    return (
        f"Pet holds the key {keys} more than once{inside}; JSON readers differ on which value "
        "counts, so petsync stores neither: ask the API owner to send each key once"
    )


def _first_odd(value: object) -> tuple[str, RepeatedKeys | LongNumber] | None:
    """The first object holding a key twice, or number too long, within ``value``, and the
    path to it; None when there is none. Iterative: no nesting can exhaust the stack."""
    pending: list[tuple[str, object]] = [("", value)]
    while pending:
        path, item = pending.pop()
        if isinstance(item, RepeatedKeys | LongNumber):
            return path, item
        children: list[tuple[str, object]] = []
        if isinstance(item, dict):
            children = [(_join(path, key), child) for key, child in item.items()]
        elif isinstance(item, list):
            children = [(_join(path, f"[{i}]"), child) for i, child in enumerate(item)]
        pending.extend(reversed(children))
    return None


def _join(path: str, step: str) -> str:
    return f"{path}{step}" if step.startswith("[") or not path else f"{path}.{step}"
