"""An exact, compact set of the record keys one listing has already sent.

A listing must drop records it already sent and detect a page holding only such records (a
loop), so it remembers every key. A Python ``set`` of a million ints costs about 64 bytes
per id (the int object plus its slot); :class:`SeenIds` keeps the same answer in about 8:
recent ids live in a small Python set, which is flushed, once it holds
:data:`FLUSH_IDS` ids, into a sorted numpy ``int64`` array.

The usual page of a listing ordered by id needs no look-up at all: its ids increase and the
first is past the largest id seen, so none can be a repeat. Such a page is proven so by one
comparison per id in C, and its ids are appended to a list that is sorted as it grows,
which becomes the next sorted array as it is (no hashing, no sorting). The sorted arrays are merged
like a log-structured merge tree (two neighbours of similar size become one), so there are
only a logarithmic number of them, and a page's ids are looked up in each with one
vectorised ``np.searchsorted``.

Exact, not probabilistic: no id is ever reported as seen unless it was. Keys that are not
int64 ids (a record with no valid id is keyed by its text) stay in a plain set; they are rare.
numpy is imported on the first flush only, so short listings (``petsync check``) never load it.

Within a memory budget: given ``budget`` bytes and a ``scratch`` directory, arrays beyond the
budget are written there as sorted runs (:class:`_DiskRun`), and only every
:data:`FENCE_EVERY`-th id of a run stays in memory. A page's ids are looked up in a run only
when they fall within its smallest and largest id (never, for a listing ordered by id: its new
ids lie beyond every run), and then by reading the one block of the run that can hold each.
"""

from __future__ import annotations

import bisect
import operator
import uuid
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

_INT_ONLY = frozenset({int})
FLUSH_IDS = 32_768  # ids held as Python ints before they move into a sorted array (~3 MiB)
FENCE_EVERY = 512  # ids per block of a run on disk (4 KiB); one id per block stays in memory
PYTHON_INT_BYTES = 72  # an int in a set: the object and its slot


@dataclass(frozen=True)
class SeenBudget:
    """How much memory a listing's record of ids may hold, and where the rest goes."""

    bytes: int
    scratch: Path


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

    def __init__(
        self,
        flush_ids: int = FLUSH_IDS,
        *,
        budget: int | None = None,
        scratch: Path | None = None,
    ) -> None:
        self._budget = budget if scratch is not None else None
        self._scratch = scratch
        if self._budget is not None:  # the Python ints count against the budget too
            flush_ids = max(1, min(flush_ids, self._budget // (4 * PYTHON_INT_BYTES)))
        self._flush_ids = flush_ids
        self._runs: list[_DiskRun] = []
        self._run_names = f"seen-{uuid.uuid4().hex[:12]}-"
        self.spilled_bytes = 0
        self._recent: set[int] = set()
        self._ordered: list[int] = []  # ids past every one before them, increasing
        self._top: int | None = None  # the largest int id seen
        self._other: set[Hashable] = set()
        # Sorted, pairwise disjoint arrays, larger ones first.
        self._levels: list[npt.NDArray[np.int64]] = []
        self._low = self._high = 0  # the smallest and largest id in the arrays
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def __contains__(self, key: Hashable) -> bool:
        in_levels = self._in_levels([key], type(key) is int)[0]
        return in_levels or key in self._recent or key in self._other or self._in_ordered(key)

    def _in_ordered(self, key: Hashable) -> bool:
        ordered = self._ordered
        if type(key) is not int or not ordered:
            return False
        at = bisect.bisect_left(ordered, key)
        return at < len(ordered) and ordered[at] == key

    def add_page(self, keys: Sequence[Hashable], *, ints: bool = False) -> list[bool]:
        """Add ``keys`` in order; True for each key not seen before (in earlier pages or
        earlier in ``keys``), False for a repeat. ``ints`` says every key is an ``int``
        (a page the typed decoder read), which then goes unchecked."""
        all_ints = ints or set(map(type, keys)) <= _INT_ONLY
        if all_ints and keys:
            ids = cast("Sequence[int]", keys)  # all ints: checked above
            top = self._top
            # A page past every id seen, increasing: all new, no repeat inside (operator.lt
            # over the pairs runs in C, one comparison per id).
            if (top is None or ids[0] > top) and all(map(operator.lt, ids, ids[1:])):
                self._ordered.extend(ids)
                self._top = ids[-1]
                self._size += len(ids)
                if len(self._recent) + len(self._ordered) >= self._flush_ids:
                    self._flush()
                return [True] * len(ids)
        if self._ordered:  # the look-ups below read the arrays and the set, not this list
            self._flush_ordered()
        recent, other = self._recent, self._other
        in_levels = self._in_levels(keys, all_ints)
        if all_ints and not any(in_levels):
            distinct = cast("set[int]", set(keys))  # all ints: checked above
            # The usual page: all new, no repeat inside.
            if len(distinct) == len(keys) and recent.isdisjoint(distinct):
                recent |= distinct
                if distinct:
                    self._raise_top(max(distinct))
                self._size += len(keys)
                if len(recent) >= self._flush_ids:
                    self._flush()
                return [True] * len(keys)
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
                    self._raise_top(key)
                    append(True)
            elif key in other:
                append(False)
            else:
                other.add(key)
                append(True)
        return self._added(result)

    def _raise_top(self, key: int) -> None:
        if self._top is None or key > self._top:
            self._top = key

    def _added(self, result: list[bool]) -> list[bool]:
        self._size += result.count(True)
        if len(self._recent) >= self._flush_ids:
            self._flush()
        return result

    def _in_levels(self, keys: Sequence[Hashable], all_ints: bool) -> list[bool]:
        """Per key: True when it is an int already in one of the sorted arrays or runs."""
        if not (self._levels or self._runs) or not keys:
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
        found = np.zeros(len(ids), dtype=bool)
        for level in self._levels:
            found |= level.take(level.searchsorted(ids), mode="clip") == ids
        for run in self._runs:
            found |= run.contains(ids)
        if positions is None:
            hits: list[bool] = found.tolist()
            return hits
        result = [False] * len(keys)
        for i, hit in zip(positions, found.tolist(), strict=True):
            result[i] = hit
        return result

    def _flush(self) -> None:
        import numpy as np

        if self._ordered:
            self._flush_ordered()
        if not self._recent:
            return
        level = np.fromiter(self._recent, dtype=np.int64, count=len(self._recent))
        level.sort()
        self._recent = set()
        self._add_level(level)

    def _flush_ordered(self) -> None:
        """The ids of ordered pages become a sorted array as they are."""
        import numpy as np

        level = np.array(self._ordered, dtype=np.int64)
        self._ordered = []
        self._add_level(level)

    def _add_level(self, level: npt.NDArray[np.int64]) -> None:
        """Put a sorted array among the others (disjoint from them), merging and spilling."""
        import numpy as np

        self._levels.append(level)
        if len(self._levels) == 1 and not self._runs:  # the first array: its bounds
            self._low, self._high = int(level[0]), int(level[-1])
        else:
            self._low, self._high = min(self._low, int(level[0])), max(self._high, int(level[-1]))
        # Merge while the newest array is at least half as big as the one before it: each
        # id is copied a logarithmic number of times, and there are few arrays to search.
        while len(self._levels) > 1 and 2 * len(self._levels[-1]) >= len(self._levels[-2]):
            newest = self._levels.pop()
            older = self._levels.pop()
            merged = np.concatenate((older, newest))
            if older[-1] > newest[0]:  # else already in order: a listing ordered by id
                merged.sort(kind="stable")  # two sorted runs: timsort merges them linearly
            self._levels.append(merged)
        if self._budget is not None and self._scratch is not None:
            # Over the budget: the largest arrays go to disk, the newest stay in memory.
            while self._levels and sum(level.nbytes for level in self._levels) > self._budget:
                level = self._levels.pop(0)
                path = self._scratch / f"{self._run_names}{len(self._runs)}.i64"
                self._runs.append(_DiskRun(path, level))
                self.spilled_bytes += level.nbytes

    def close(self) -> None:
        """Remove the runs written to the scratch directory."""
        for run in self._runs:
            run.path.unlink(missing_ok=True)
        self._runs.clear()


class _DiskRun:
    """A sorted array of ids on disk: its bounds and one id per block stay in memory."""

    def __init__(self, path: Path, ids: npt.NDArray[np.int64]) -> None:
        import numpy as np

        path.parent.mkdir(parents=True, exist_ok=True)
        ids.tofile(path)
        self.path = path
        self._size = len(ids)
        self._low, self._high = int(ids[0]), int(ids[-1])
        self._fences = np.array(ids[::FENCE_EVERY])  # a copy: the array itself is dropped

    def contains(self, ids: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
        """Per id: True when it is in this run (reads only the blocks that can hold them)."""
        import numpy as np

        found = np.zeros(len(ids), dtype=bool)
        inside = np.flatnonzero((ids >= self._low) & (ids <= self._high))
        if not len(inside):
            return found
        blocks = np.searchsorted(self._fences, ids[inside], side="right") - 1
        with self.path.open("rb") as source:
            for block in np.unique(blocks).tolist():
                source.seek(block * FENCE_EVERY * 8)
                values = np.fromfile(source, dtype=np.int64, count=FENCE_EVERY)
                mine = inside[blocks == block]
                wanted = ids[mine]
                found[mine] = values.take(values.searchsorted(wanted), mode="clip") == wanted
        return found
