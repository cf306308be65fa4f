"""The deterministic demo catalogue behind ``petsync serve --seed-pets N``.

Pet ``i`` (1-based, also its id) is a pure function of ``i``: the same N always gives the
same pets, and the first N of a bigger catalogue are the catalogue of N. It is built to
exercise what downstream files must survive: every tenth pet or so has no status (the
interface does not say what an omitted status becomes), and some names carry commas,
double quotes, newlines, non-ASCII letters, emoji, or a leading ``=`` (a spreadsheet
formula if written to CSV carelessly). Category ids include values beyond 2**53, which a
float64 would round.
"""

from __future__ import annotations

from collections.abc import Iterator

from petsync.core.models import STATUS_VALUES
from petsync.server.store import Row

BASE_NAMES: tuple[str, ...] = (
    "Rex",
    "Bella",
    "Milo",
    "Luna",
    "Charlie",
    "Nala",
    "Oscar",
    "Coco",
    "Max",
    "Kiwi",
    "Pepper",
    "Biscuit",
)

# Awkward names, placed at fixed positions (see :func:`seed_row`).
SPECIAL_NAMES: tuple[str, ...] = (
    "Rex, the Brave",
    'Bella "Boo" Smith',
    "Zoë Müller",
    "Line\nBreak",
    "=1+2",
    "Cat 🐈 Emoji",
    'Ñandú, "el" rápido',
    "猫咪",
    '=HYPERLINK("http://example.com")',
    "Tab\tand\r\nCRLF",
)

STATUSES: tuple[str, ...] = STATUS_VALUES  # the order pets take them in: 1, 2, 3, 1, ...
NO_STATUS_EVERY = 10  # pets 3, 13, 23, ... have no status
SPECIAL_EVERY = 7  # pets 2, 9, 16, ... have an awkward name
BIG_CATEGORY = 2**53 + 1  # not representable as a float64


def seed_row(i: int) -> Row:
    """The ``i``-th demo pet (1-based) as ``(id, name, categoryId, status)``.

    >>> seed_row(1)
    (1, 'Rex 1', 1, 'available')
    >>> seed_row(3)[3] is None
    True
    """
    if i % SPECIAL_EVERY == 2:
        name = SPECIAL_NAMES[(i // SPECIAL_EVERY) % len(SPECIAL_NAMES)]
    else:
        name = f"{BASE_NAMES[(i - 1) % len(BASE_NAMES)]} {i}"
    status = None if i % NO_STATUS_EVERY == 3 else STATUSES[(i - 1) % len(STATUSES)]
    category = BIG_CATEGORY + i if i % 50 == 17 else 1 + (i - 1) % 12
    return (i, name, category, status)


def seed_rows(n: int) -> Iterator[Row]:
    """The demo catalogue of ``n`` pets, ids 1..n."""
    return (seed_row(i) for i in range(1, n + 1))
