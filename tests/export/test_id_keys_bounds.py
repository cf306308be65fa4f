"""One id listed twice with different contents: the winner does not depend on which
listing's thread finished last (the order of listings decides, see petsync.export.id_keys)."""

from __future__ import annotations

import numpy as np
import pytest

from petsync.core.models import PetStatus
from petsync.export.collector import source_of
from petsync.export.id_keys import make_keys, resolve

AVAILABLE, PENDING, SOLD = (source_of(s) for s in PetStatus)
SWEEP = source_of(None)


def _winner(fetches: list[tuple[int, int]]) -> int:
    """The winning row among fetches of id 7, each (source, row) in the order fetched."""
    keys = np.concatenate(
        [
            make_keys([7], [seq], source, [row], np.array([row], dtype=np.int64))
            for seq, (source, row) in enumerate(fetches, start=1)
        ]
    )
    (rows,) = resolve(keys).winners
    return int(rows[0])


@pytest.mark.parametrize(
    ("fetches", "row"),
    [
        ([(AVAILABLE, 1), (SOLD, 2)], 2),
        ([(SOLD, 2), (AVAILABLE, 1)], 2),  # the same winner, fetched in the other order
        ([(PENDING, 3), (SWEEP, 4), (SOLD, 2)], 4),  # the unfiltered listing first
        ([(SWEEP, 4), (PENDING, 3)], 4),
        ([(PENDING, 3), (AVAILABLE, 1), (PENDING, 5)], 5),  # within a listing, the latest
    ],
    ids=["later-status", "later-status-swapped", "sweep", "sweep-first", "same-listing"],
)
def test_the_order_of_listings_not_of_threads_picks_the_copy(
    fetches: list[tuple[int, int]], row: int
) -> None:
    assert _winner(fetches) == row
