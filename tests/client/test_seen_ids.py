from __future__ import annotations

import random

import pytest

from petsync.client.seen_ids import SeenIds
from petsync.core.models import INT64_MAX, INT64_MIN


def test_new_keys_are_fresh_and_repeats_are_not() -> None:
    seen = SeenIds()
    assert seen.add_page([5, 7]) == [True, True]
    assert seen.add_page([7, 8, 5]) == [False, True, False]
    assert len(seen) == 3


def test_a_repeat_inside_one_page_counts_once() -> None:
    seen = SeenIds(flush_ids=2)
    assert seen.add_page([1, 1, 2, 1, 3, 3]) == [True, False, True, False, True, False]
    assert len(seen) == 3


def test_keys_are_remembered_across_flushes_and_merges() -> None:
    seen = SeenIds(flush_ids=3)
    rng = random.Random(7)
    ids = rng.sample(range(-(10**12), 10**12), 500)
    for start in range(0, len(ids), 7):
        assert seen.add_page(ids[start : start + 7]) == [True] * len(ids[start : start + 7])
    assert len(seen._levels) < 10  # merged, not one array per flush
    assert len(seen) == 500
    # Every id is still known, in whichever level it ended up, in any order.
    rng.shuffle(ids)
    for start in range(0, len(ids), 11):
        page = ids[start : start + 11]
        assert seen.add_page(page) == [False] * len(page)
    assert seen.add_page([10**12 + 1]) == [True]


def test_flushed_and_recent_keys_both_count_in_one_page() -> None:
    seen = SeenIds(flush_ids=2)
    seen.add_page([10, 20])  # flushed into a sorted array
    seen.add_page([5])  # not past the largest id: still in the recent set
    assert seen._levels and 5 in seen._recent
    assert seen.add_page([40, 10, 5, 40, 50]) == [True, False, False, False, True]


def test_pages_in_id_order_are_kept_as_they_come_and_still_count() -> None:
    seen = SeenIds(flush_ids=1000)
    assert seen.add_page([1, 2, 3]) == [True, True, True]
    assert seen.add_page([4, 9]) == [True, True]  # past every id seen: no look-up
    assert seen._ordered == [1, 2, 3, 4, 9] and not seen._recent
    assert 9 in seen and 2 in seen and 5 not in seen
    assert seen.add_page([10, 10, 11]) == [True, False, True]  # a repeat inside: checked
    assert seen.add_page([12, 3, 13]) == [True, False, True]  # an earlier id: found
    assert seen.add_page([14, 15]) == [True, True]
    assert len(seen) == 11
    assert seen.add_page([2, 14, 16]) == [False, False, True]


@pytest.mark.parametrize(
    "key",
    [INT64_MIN, INT64_MIN + 1, -1, 0, 1, INT64_MAX - 1, INT64_MAX],
    ids=["min", "min+1", "-1", "0", "1", "max-1", "max"],
)
def test_int64_extremes_are_exact_after_a_flush(key: int) -> None:
    seen = SeenIds(flush_ids=1)
    assert seen.add_page([key]) == [True]
    assert seen._levels  # now in a numpy array
    neighbours = [k for k in (key - 1, key + 1) if INT64_MIN <= k <= INT64_MAX]
    assert seen.add_page([key, *neighbours]) == [False] + [True] * len(neighbours)
    assert key in seen


def test_keys_that_are_not_ids_are_kept_apart() -> None:
    seen = SeenIds(flush_ids=1)
    raw = ("raw", "{'id': 1.5}")
    assert seen.add_page([raw, 1, raw]) == [True, True, False]
    assert seen.add_page([("raw", "{'id': 1.5}"), 1]) == [False, False]
    assert len(seen) == 2


def test_an_empty_page_adds_nothing() -> None:
    seen = SeenIds(flush_ids=1)
    seen.add_page([1])
    assert seen.add_page([]) == []
    assert len(seen) == 1


def test_pages_beyond_the_flushed_range_and_straddling_it() -> None:
    seen = SeenIds(flush_ids=4)
    seen.add_page([10, 11, 12, 13])  # flushed: the arrays hold 10..13
    assert seen.add_page([20, 21]) == [True, True]  # above every flushed id
    assert seen.add_page([1, 2]) == [True, True]  # below every flushed id (now flushed too)
    assert seen.add_page([30, 12, 0]) == [True, False, True]  # straddles: still looked up
    assert seen.add_page([21, 1]) == [False, False]


@pytest.mark.parametrize("ordered", [True, False], ids=["in-id-order", "shuffled"])
def test_pages_of_ints_answer_as_a_set_would(ordered: bool) -> None:
    # Pages the typed decoder read skip the type check (ints=True), and arrays flushed in id
    # order are merged without sorting: both give the answers of a plain set, repeats,
    # pages straddling merged arrays and ids out of order included.
    rng = random.Random(11)
    ids = list(range(1, 3_000)) + rng.sample(range(1, 3_000), 400)
    if not ordered:
        rng.shuffle(ids)
    seen, known = SeenIds(flush_ids=64), set()
    for start in range(0, len(ids), 37):
        page = ids[start : start + 37]
        expected = []
        for key in page:
            expected.append(key not in known)
            known.add(key)
        assert seen.add_page(page, ints=True) == expected
    assert len(seen) == len(known)
    for level in seen._levels:
        assert (level[:-1] < level[1:]).all()  # each array sorted, no repeat
