from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

from petsync.client.records import PetColumns
from petsync.core.models import INT64_MAX, INT64_MIN, Pet, PetStatus
from petsync.export.collector import PetCollector, source_of
from petsync.formats.folders import write_files


def test_collected_rows_keep_exact_int64_and_null_status(tmp_path: Path) -> None:
    collector = PetCollector(tmp_path / "scratch", batch_rows=2)
    pets = [
        Pet(INT64_MAX, "max é", INT64_MIN, None),
        Pet(INT64_MIN, "", 0, "sold"),
        Pet(7, "=x", INT64_MAX, ""),
    ]
    collector.add(source_of(PetStatus.SOLD), pets)
    done = collector.finish()
    write_files(done, tmp_path / "pets.parquet", None)
    import pyarrow.parquet as pq

    rows = pq.read_table(tmp_path / "pets.parquet").to_pylist()
    assert rows == [
        {"id": p.id, "name": p.name, "categoryId": p.categoryId, "status": p.status} for p in pets
    ]
    assert done.status_mismatches == 2


def test_only_columns_with_few_values_are_written_with_a_dictionary(tmp_path: Path) -> None:
    # A dictionary of ids or names, which all differ, costs time and size for nothing.
    import pyarrow.parquet as pq

    collector = PetCollector(tmp_path / "scratch")
    collector.add(source_of(None), [Pet(i, f"pet {i}", i % 3, "sold") for i in range(50)])
    write_files(collector.finish(), tmp_path / "pets.parquet", None)
    group = pq.ParquetFile(tmp_path / "pets.parquet").metadata.row_group(0)
    dictionaried = {
        group.column(i).path_in_schema: group.column(i).has_dictionary_page
        for i in range(group.num_columns)
    }
    assert dictionaried == {"id": False, "name": False, "categoryId": True, "status": True}


def test_collecting_and_writing_do_not_import_pandas(tmp_path: Path) -> None:
    # pa.array() imports pandas on first use (~0.6 s, 35 MiB); the export never needs it.
    script = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        from petsync.export.collector import PetCollector, source_of
        from petsync.core.models import Pet
        from petsync.formats.folders import write_files
        out = Path({str(tmp_path)!r})
        collector = PetCollector(out / "scratch", batch_rows=2)
        pets = [Pet(i, "n", 1, None if i % 2 else "sold") for i in range(5)]
        collector.add(source_of(None), pets)
        done = collector.finish()
        write_files(done, out / "pets.parquet", out / "pets.csv")
        print(done.pets, "pandas" in sys.modules)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.split() == ["5", "False"]


def _rows_and_counts(
    collector: PetCollector, out: Path
) -> tuple[list[dict[str, object]], tuple[int, ...]]:
    import pyarrow.parquet as pq

    done = collector.finish()
    write_files(done, out / "pets.parquet", None)
    rows = sorted(pq.read_table(out / "pets.parquet").to_pylist(), key=lambda r: str(r["id"]))
    counts = (
        done.pets,
        done.rows_fetched,
        done.conflicting_duplicates,
        done.seen_under_two_statuses,
        done.status_mismatches,
    )
    return rows, counts


def _sweep_body(pets: list[Pet]) -> bytes:
    import json

    return json.dumps([p.to_json() for p in pets]).encode()


@pytest.mark.parametrize("budget", [1, 2**40], ids=["keys-spilled", "keys-in-memory"])
def test_sweep_ghosts_give_the_answer_of_full_rows(tmp_path: Path, budget: int) -> None:
    """Sweep rows kept as keys only resolve exactly as stored rows: the twin for an equal
    pet, the page's row for a changed pet or one no status listing saw; the sweep's copy
    wins over a status listing's, whichever was fetched last."""
    sold, available = source_of(PetStatus.SOLD), source_of(PetStatus.AVAILABLE)
    sweep = source_of(None)
    steps: list[tuple[int, list[Pet]]] = [
        (sold, [Pet(1, "same", 1, "sold"), Pet(2, "old", 1, "sold"), Pet(6, "later", 1, "sold")]),
        (
            sweep,
            [
                Pet(1, "same", 1, "sold"),  # its twin is stored: written from the sold listing
                Pet(2, "new", 1, "sold"),  # changed after the sold listing: rebuilt
                Pet(3, "unseen", 2, "available"),  # the available listing never saw it
                Pet(4, "no status", 2, None),  # stored in full: no listing has it
                Pet(5, "odd", 2, "lost"),  # an unknown status: stored in full
                Pet(6, "before", 1, "sold"),  # fetched again later by the sold listing: the
                # sweep's copy wins all the same (the order of listings, not of threads)
            ],
        ),
        (available, [Pet(7, "a", 3, "available")]),
        (sold, [Pet(6, "after", 1, "sold")]),
    ]
    answers = []
    for ghosts in (True, False):
        out = tmp_path / f"ghosts-{ghosts}"
        collector = PetCollector(
            out / "scratch",
            batch_rows=2,
            memory_budget=budget,
            listed_statuses=("sold", "available", "pending"),
        )
        for source, pets in steps:
            body = _sweep_body(pets) if ghosts and source == sweep else None
            collector.add(source, PetColumns.of(pets), body)
        answers.append(_rows_and_counts(collector, out))
    with_ghosts, without = answers
    assert with_ghosts == without
    rows, counts = with_ghosts
    assert [(r["id"], r["name"]) for r in rows] == [
        (1, "same"),
        (2, "new"),
        (3, "unseen"),
        (4, "no status"),
        (5, "odd"),
        (6, "before"),
        (7, "a"),
    ]
    assert counts == (7, 11, 2, 0, 0)


def test_a_partition_over_the_budget_is_split_and_gives_the_same_answer(tmp_path: Path) -> None:
    from petsync.export.id_keys import KeyStore, make_keys

    ids = [i % 50 for i in range(400)]  # every id fetched 8 times
    hashes = [i % 50 + (i >= 350) for i in range(400)]  # the last fetch of each id differs
    answers = []
    for name, budget in (("split", 1), ("whole", 2**40)):
        store = KeyStore(tmp_path / name, budget, min_split=0)
        for start in range(0, 400, 40):
            rows = np.arange(start, start + 40, dtype=np.int64)
            seqs = list(range(start, start + 40))
            store.append(
                make_keys(ids[start : start + 40], seqs, 1, hashes[start : start + 40], rows)
            )
        keep = np.zeros(400, dtype=bool)
        result = store.resolve(keep)
        answers.append((np.flatnonzero(keep).tolist(), result.ids, result.conflicting))
    assert answers[0] == answers[1]
    assert answers[0] == (list(range(350, 400)), 50, 50)


def test_keys_past_the_budget_go_to_one_file_and_are_split_only_when_resolved(
    tmp_path: Path,
) -> None:
    """A batch spilled while the listings run is one sequential write (they wait for it);
    the partitions are made at the end, and the answer is the one memory would give."""
    from petsync.export.id_keys import KeyStore, make_keys

    ids = [(i * 7919) % 3000 for i in range(6000)]  # every id fetched twice
    answers = []
    for name, budget in (("spilled", 4 * 29 * 1000), ("whole", 2**40)):  # 1,000 keys a piece
        store = KeyStore(tmp_path / name, budget, min_split=0)
        for start in range(0, 6000, 500):
            rows = np.arange(start, start + 500, dtype=np.int64)
            piece = ids[start : start + 500]
            store.append(make_keys(piece, [start // 500] * 500, 1, piece, rows))
        if name == "spilled":
            assert sorted(p.name for p in (tmp_path / name).iterdir()) == ["spilled"]
        keep = np.zeros(6000, dtype=bool)
        result = store.resolve(keep)
        if name == "spilled":
            assert list((tmp_path / name).iterdir()) == []  # every piece read and removed
        answers.append((np.flatnonzero(keep).tolist(), result.ids))
    assert answers[0] == answers[1]
    assert answers[0][1] == 3000


def test_a_listings_page_never_waits_for_another_listings_spill(tmp_path: Path) -> None:
    """Only a listing's first page and a batch's spill take the collector's lock: a page of a
    listing already under way goes on while another listing writes its batch."""
    collector = PetCollector(tmp_path)
    sold = source_of(PetStatus.SOLD)
    collector.add(sold, [Pet(1, "Rex", 7, "sold")])
    with collector._lock:  # another listing's thread is writing its batch
        done = threading.Event()

        def page() -> None:
            collector.add(sold, [Pet(2, "Bo", 7, "sold")])
            done.set()

        worker = threading.Thread(target=page)
        worker.start()
        assert done.wait(timeout=30), "a page waited for another listing's spill"
        worker.join()
    collector.add(source_of(None), [Pet(2, "Bo", 8, "sold")])  # the sweep's copy wins
    result = collector.finish()
    assert result.pets == 2
