"""An exact, compact set of the record keys one listing has already sent.

A listing must drop records it already sent and detect a page holding only such records (a
loop), so it remembers every key. A Python ``set`` of a million ints costs about 64 bytes
per id (the int object plus its slot); :class:`SeenIds` keeps the same answer in about 8:
recent ids live in a small Python set, which is flushed, once it holds
:data:`FLUSH_IDS` ids, into a sorted numpy ``int64`` array. The sorted arrays are merged
like a log-structured merge tree (two neighbours of similar size become one), so there are
only a logarithmic number of them, and a page's ids are looked up in each with one
vectorised ``np.searchsorted``.

Exact, not probabilistic: no id is ever reported as seen unless it was. Keys that are not
int64 ids (a record with no valid id is keyed by its text) stay in a plain set; they are rare.
numpy is imported on the first flush only, so short listings (``petsync check``) never load it.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

_INT_ONLY = frozenset({int})
FLUSH_IDS = 32_768  # ids held as Python ints before they move into a sorted array (~3 MiB)


class SeenIds:
    """Keys seen so far in one listing; :meth:`add_page` marks a page's keys and says which
    were new.

    >>> seen = SeenIds()
    >>> seen.add_page([1, 2, 2])
    [True, True, False]
    >>> seen.add_page([2, 3, ("raw", "'x'")])
    [False, True, True]
    >>> len(seen)
    4
    """

    def __init__(self, flush_ids: int = FLUSH_IDS) -> None:
        self._flush_ids = flush_ids
        self._recent: set[int] = set()
        self._other: set[Hashable] = set()
        # Sorted, pairwise disjoint arrays, larger ones first.
        self._levels: list[npt.NDArray[np.int64]] = []
        self._low = self._high = 0  # the smallest and largest id in the arrays
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def __contains__(self, key: Hashable) -> bool:
        in_levels = self._in_levels([key], type(key) is int)[0]
        return in_levels or key in self._recent or key in self._other

    def add_page(self, keys: Sequence[Hashable]) -> list[bool]:
        """Add ``keys`` in order; True for each key not seen before (in earlier pages or
        earlier in ``keys``), False for a repeat."""
        recent, other = self._recent, self._other
        all_ints = set(map(type, keys)) <= _INT_ONLY
        in_levels = self._in_levels(keys, all_ints)
        if all_ints and not any(in_levels) and recent.isdisjoint(keys):
            distinct = cast("set[int]", set(keys))  # all ints: checked above
            if len(distinct) == len(keys):  # the usual page: all new, no repeat inside
                recent |= distinct
                return self._added([True] * len(keys))
        result: list[bool] = []
        append = result.append
        for key, found in zip(keys, in_levels, strict=True):
            if found:
                append(False)
            elif type(key) is int:
                if key in recent:
                    append(False)
                else:
                    recent.add(key)
                    append(True)
            elif key in other:
                append(False)
            else:
                other.add(key)
                append(True)
        return self._added(result)

    def _added(self, result: list[bool]) -> list[bool]:
        self._size += result.count(True)
        if len(self._recent) >= self._flush_ids:
            self._flush()
        return result

    def _in_levels(self, keys: Sequence[Hashable], all_ints: bool) -> list[bool]:
        """Per key: True when it is an int already in one of the sorted arrays."""
        if not self._levels or not keys:
            return [False] * len(keys)
        if all_ints:
            ints = cast("Sequence[int]", keys)
            if min(ints) > self._high or max(ints) < self._low:
                # Beyond every id in the arrays: the usual page of a listing ordered by id.
                return [False] * len(keys)
        import numpy as np

        if all_ints:
            positions = None
            ids = np.array(keys, dtype=np.int64)
        else:
            positions = [i for i, key in enumerate(keys) if type(key) is int]
            ids = np.array([keys[i] for i in positions], dtype=np.int64)
        levels = iter(self._levels)
        first = next(levels)
        found = first.take(first.searchsorted(ids), mode="clip") == ids
        for level in levels:
            found |= level.take(level.searchsorted(ids), mode="clip") == ids
        if positions is None:
            hits: list[bool] = found.tolist()
            return hits
        result = [False] * len(keys)
        for i, hit in zip(positions, found.tolist(), strict=True):
            result[i] = hit
        return result

    def _flush(self) -> None:
        import numpy as np

        level = np.fromiter(self._recent, dtype=np.int64, count=len(self._recent))
        level.sort()
        self._recent = set()
        self._levels.append(level)
        if len(self._levels) == 1:
            self._low, self._high = int(level[0]), int(level[-1])
        else:
            self._low, self._high = min(self._low, int(level[0])), max(self._high, int(level[-1]))
        # Merge while the newest array is at least half as big as the one before it: each
        # id is copied a logarithmic number of times, and there are few arrays to search.
        while len(self._levels) > 1 and 2 * len(self._levels[-1]) >= len(self._levels[-2]):
            newest = self._levels.pop()
            merged = np.concatenate((self._levels.pop(), newest))
            merged.sort(kind="stable")  # two sorted runs: timsort merges them in linear time
            self._levels.append(merged)
