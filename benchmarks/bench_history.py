"""Benchmark the history (``petsync history``) and its report (``petsync report``).

Three parts, each on snapshots made here (a catalogue of random pets, published the way an
export publishes them), every program a whole process measured with ``os.wait4``:

* ``update``: one night's update of a history that holds the night before, at ``--pets``
  pets with ``--changed`` of them changed (most of them changed content, a tenth removed, a
  tenth new), side by side with reading that night's snapshot with pyarrow
  (``pq.read_table``), alternating (and with ``--old-tree DIR``, the update by the petsync
  package in DIR). Targets: <= 2.0x the read at 5,000,000 pets, peak RSS <= 400 MiB at
  5,000,000 and at 20,000,000 pets (flat), the table growing by the changed rows only.
* ``rebuild``: ``petsync history --rebuild`` over each of ``--nights`` nights at
  ``--rebuild-pets`` pets (with ``--old-tree``, the old code's right after): time per night
  should stay flat (linear in nights) and peak RSS flat.
* ``report``: ``petsync report`` over ``--report-nights`` nights (the bundle cache warm, as
  after the first report on a machine) and the page's render time in headless Chromium
  (navigation to every chart drawn). Targets: <= 2 s, HTML <= 5 MB.

    python benchmarks/bench_history.py                         # 1M pets, 3 rounds
    python benchmarks/bench_history.py --pets 100000 --rounds 1 --nights 2,4 --report-nights 30
    python benchmarks/bench_history.py --pets 5000000 --only update --old-tree /tmp/old
    python benchmarks/bench_history.py --pets 20000000 --only update --data /tmp/history-data

Snapshots are written as an export writes them: row groups of 131,072 rows, in the order
the listings stored them. ``--layout listings`` (the default): listing after listing, each
in id order; ``--layout pages``: pages of 1,000 pets from each listing in turn, as listings
running concurrently store them. ``--data DIR`` keeps the update's two snapshots and the
first night's history in DIR, and the next run with the same sizes starts from them
(delete DIR when the snapshots' writing changes).

``--table-format delta`` or ``iceberg`` commits the update's two nights to a table of that
format instead, through petsync's own writer (as an export commits them), and reads the
night with the table's library (``DeltaTable.to_pyarrow_table``; pyiceberg's scan) beside
the update:

    python benchmarks/bench_history.py --pets 5000000 --only update --table-format delta
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench_export import compile_tree
from harness import (
    REPO,
    Run,
    Variant,
    print_footer,
    print_header,
    print_table,
    run_process,
    run_rounds,
    summarise,
)

if TYPE_CHECKING:
    import numpy as np

START = dt.date(2026, 1, 1)
STATUS_VALUES = ["available", "pending", "sold", None]


def petsync_cmd(tree: Path | None = None) -> list[str]:
    """``python -m petsync``; with ``tree``, the petsync package found in that folder."""
    if tree is None:
        return [sys.executable, "-m", "petsync"]
    # The folder first on the path: it wins over the installed (editable) petsync.
    code = (
        f"import runpy, sys; sys.path.insert(0, {str(tree)!r}); sys.argv[0] = 'petsync'; "
        "runpy.run_module('petsync', run_name='__main__', alter_sys=True)"
    )
    return [sys.executable, "-c", code]


def catalogue(pets: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """A catalogue as arrays: ids, categories and status codes (an index into
    :data:`STATUS_VALUES`, 3 for no status). A pet's name is ``pet {id}``, made when the
    snapshot is written: 20,000,000 Python strings would take longer than the benchmark."""
    import numpy as np

    return {
        "id": np.arange(1, pets + 1, dtype=np.int64),
        "categoryId": rng.integers(1, 50, pets, dtype=np.int64),
        "status": rng.integers(0, 4, pets, dtype=np.int8),
    }


def next_night(
    pets: dict[str, np.ndarray], fraction: float, rng: np.random.Generator, next_id: int
) -> tuple[dict[str, np.ndarray], int, int]:
    """The catalogue a night later: ``fraction`` of pets touched (80% changed, 10% removed,
    10% new). Returns the new catalogue, the next free id and how many were touched."""
    import numpy as np

    n = len(pets["id"])
    touched = max(int(n * fraction), 10)
    picks = rng.choice(n, touched, replace=False)
    change, remove = picks[: touched * 8 // 10], picks[touched * 8 // 10 : touched * 9 // 10]
    added = touched - len(change) - len(remove)
    status = pets["status"].copy()
    status[change] = (rng.integers(1, 4, len(change)) + status[change]) % 4  # another status
    keep = np.ones(n, dtype=bool)
    keep[remove] = False
    out = {
        "id": np.concatenate([pets["id"][keep], np.arange(next_id, next_id + added)]),
        "categoryId": np.concatenate([pets["categoryId"][keep], rng.integers(1, 50, added)]),
        "status": np.concatenate([status[keep], rng.integers(0, 4, added, dtype=np.int8)]),
    }
    return out, next_id + added, touched


PAGE = 1_000  # pets a page, in the ``pages`` layout


def night_table(pets: dict[str, np.ndarray], layout: str) -> Any:
    """The night's pets in the snapshot schema, in an export's order: its listings
    (available, pending, sold, then the status-less pets the sweep finds), each in id order,
    one after the other or page by page in turn."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from petsync.formats.schema import PET_SCHEMA

    listing = pets["status"]
    order = np.argsort(listing, kind="stable")
    if layout == "pages":
        rank = np.empty(len(order), dtype=np.int64)  # a pet's place in its listing
        for code in range(4):
            members = order[listing[order] == code]
            rank[members] = np.arange(len(members))
        order = np.lexsort((listing, rank // PAGE))
    ids = pa.array(pets["id"][order], pa.int64())
    columns = {
        "id": ids,
        "name": pc.binary_join_element_wise("pet ", pc.cast(ids, pa.string()), ""),
        "categoryId": pa.array(pets["categoryId"][order], pa.int64()),
        "status": pa.array(STATUS_VALUES, pa.string()).take(pa.array(listing[order])),
    }
    return pa.table(columns).cast(PET_SCHEMA)


def publish(
    out: Path,
    date: dt.date,
    pets: dict[str, np.ndarray],
    complete: bool = True,
    layout: str = "listings",
) -> Path:
    """A snapshot as an export publishes it: pets.parquet and a manifest, in its partition."""
    import pyarrow.parquet as pq

    from petsync.formats.folders import ROW_GROUP_ROWS, UNDICTIONARIED
    from petsync.storage.layout import MANIFEST_NAME, PARQUET_NAME, partition_path

    folder = partition_path(out, date)
    folder.mkdir(parents=True, exist_ok=True)
    table = night_table(pets, layout)
    dictionaries = [name for name in table.column_names if name not in UNDICTIONARIED]
    pq.write_table(
        table,
        folder / PARQUET_NAME,
        compression="zstd",
        row_group_size=ROW_GROUP_ROWS,
        use_dictionary=dictionaries,
    )
    manifest = {"snapshot_date": date.isoformat(), "complete": complete, "pets": table.num_rows}
    (folder / MANIFEST_NAME).write_text(json.dumps(manifest))
    return folder / PARQUET_NAME


class _Rows:
    """A night's rows as petsync's table writers read them (``NightRows``)."""

    def __init__(self, table: Any) -> None:
        self.table = table

    def batches(self, extra_columns: object = None) -> Any:
        return iter(self.table.to_batches())


def commit(
    out: Path, date: dt.date, pets: dict[str, np.ndarray], table_format: str, layout: str
) -> None:
    """A night committed to a Delta or Iceberg table at ``out`` by petsync's own writer, its
    manifest in the commit's properties (as an export commits it)."""
    import uuid

    from petsync.formats.night import Night
    from petsync.formats.registry import format_named
    from petsync.formats.table_steps import TableFormat
    from petsync.storage.location import parse_location

    kind = format_named(table_format)
    assert isinstance(kind, TableFormat)
    location = parse_location(str(out), what="out")
    table = night_table(pets, layout)
    run_id = uuid.uuid4().hex
    night = Night(  # what write() reads of a night; the rest is the export's business
        date=date,
        location=location,
        run_id=run_id,
        rows=_Rows(table),
        columns={},
        trusted=True,
        csv=False,
        keep=None,
        store=None,  # type: ignore[arg-type]
        staged=None,  # type: ignore[arg-type]
        lock=None,  # type: ignore[arg-type]
    )
    manifest = {
        "snapshot_date": date.isoformat(),
        "complete": True,
        "pets": table.num_rows,
        "run_id": run_id,
    }
    kind.write(night, kind.open(location), json.dumps(manifest))


def run_json(run: Run) -> dict[str, object]:
    parsed: dict[str, object] = json.loads(run.stdout)
    return parsed


# -- making snapshots (in a child process: the driver never holds numpy or pyarrow, whose
# memory every benchmarked child would otherwise count from its start) ----------------------


def in_child(target: Any, *args: Any) -> dict[str, Any]:
    """Run ``target(*args, result_path)`` in a spawned process; return what it wrote."""
    import multiprocessing

    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as handle:
        result = Path(handle.name)
    process = multiprocessing.get_context("spawn").Process(target=target, args=(*args, result))
    process.start()
    process.join()
    if process.exitcode != 0:
        raise SystemExit(f"making snapshots failed (exit {process.exitcode})")
    data: dict[str, Any] = json.loads(result.read_text())
    result.unlink()
    return data


def make_update(master: Path, pets: int, fraction: float, layout: str, result: Path) -> None:
    import numpy as np

    rng = np.random.default_rng(1)
    night1 = catalogue(pets, rng)
    publish(master, START, night1, layout=layout)
    night2, _, touched = next_night(night1, fraction, rng, pets + 1)
    parquet = publish(master, START + dt.timedelta(days=1), night2, layout=layout)
    result.write_text(json.dumps({"touched": touched, "parquet": str(parquet)}))


def make_table_night(
    out: Path, pets: int, fraction: float, layout: str, table_format: str, night: int, result: Path
) -> None:
    """Commit the update's night 1 or 2 (the same catalogues as :func:`make_update`'s)."""
    import numpy as np

    rng = np.random.default_rng(1)
    night1 = catalogue(pets, rng)
    night2, _, touched = next_night(night1, fraction, rng, pets + 1)
    date = START + dt.timedelta(days=night - 1)
    commit(out, date, night1 if night == 1 else night2, table_format, layout)
    result.write_text(json.dumps({"touched": touched, "date": date.isoformat()}))


def make_nights(
    out: Path, pets: int, nights: int, fraction: float, layout: str, result: Path
) -> None:
    import numpy as np

    rng = np.random.default_rng(2)
    now = catalogue(pets, rng)
    next_id = pets + 1
    for n in range(nights):
        publish(out, START + dt.timedelta(days=n), now, complete=n % 17 != 5, layout=layout)
        now, next_id, _ = next_night(now, fraction, rng, next_id)
    result.write_text("{}")


# -- update ------------------------------------------------------------------------------------


def bench_update(
    work: Path,
    pets: int,
    fraction: float,
    rounds: int,
    layout: str,
    old_tree: Path | None,
    data: Path | None,
    table_format: str = "parquet",
) -> None:
    kept = {"parquet": "dated folders", "delta": "a Delta table", "iceberg": "an Iceberg table"}[
        table_format
    ]
    print(
        f"\n## One night's update: {pets:,} pets, {fraction:.1%} changed, {layout} layout, "
        f"{kept}\n",
        flush=True,
    )
    # With --data, the two snapshots and the first night's history are made once and kept.
    tag = "" if table_format == "parquet" else f"-{table_format}"
    master = (data or work) / f"update-{pets}-{fraction}-{layout}{tag}"
    ready = master / "ready.json"
    out = master / "out"

    def build_first() -> int:
        first = run_process(
            "build", [*petsync_cmd(), "history", str(out), "--json"], dict(os.environ), work
        )
        assert first.ok, first.problem
        shutil.move(out / "history", master / "history-night1")
        return int(run_json(first)["versions"])  # type: ignore[call-overload]

    if not ready.exists():
        shutil.rmtree(master, ignore_errors=True)
        started = time.monotonic()
        if table_format == "parquet":
            made = in_child(make_update, out, pets, fraction, layout)
            # The history of the first night only: the second snapshot moved aside meanwhile.
            parquet = Path(made["parquet"])
            aside = master / "aside"
            shutil.move(parquet.parent, aside)
            made["versions"] = build_first()
            shutil.move(aside, parquet.parent)
        else:  # a table's nights are committed one after the other, the history between
            out.mkdir(parents=True)
            in_child(make_table_night, out, pets, fraction, layout, table_format, 1)
            versions = build_first()
            made = in_child(make_table_night, out, pets, fraction, layout, table_format, 2)
            made["versions"] = versions
        print(f"made two snapshots in {time.monotonic() - started:.1f} s", flush=True)
        ready.write_text(json.dumps(made))
    made = json.loads(ready.read_text())
    touched = int(made["touched"])
    versions_before = int(made["versions"])
    saved = master / "history-night1"

    def update_args(tree: Path | None = None) -> Callable[[Path], list[str]]:
        def args(run_dir: Path) -> list[str]:
            run_out = run_dir / "out"
            run_out.mkdir()
            for entry in out.iterdir():  # the nights (and a table's catalog), shared
                if not entry.name.startswith("."):  # the lock file stays the run's own
                    (run_out / entry.name).symlink_to(entry)
            shutil.copytree(saved, run_out / "history")
            return [*petsync_cmd(tree), "history", str(run_out), "--json"]

        return args

    growth: list[int] = []

    def check_update(run: Run, run_dir: Path) -> str | None:
        report = run_json(run)
        growth.append(int(report["versions"]) - versions_before)  # type: ignore[call-overload]
        nights = report["nights"]
        return None if isinstance(nights, list) and len(nights) == 1 else f"folded {nights}"

    if table_format == "parquet":
        baseline = "pyarrow read_table"
        code = f"import pyarrow.parquet as pq; pq.read_table({made['parquet']!r})"
    else:  # the night read whole by the table's library, as petsync's format opens it
        baseline = f"{table_format} library read"
        code = (
            "import datetime as dt; from petsync.formats.registry import format_named; "
            "from petsync.storage.location import parse_location; "
            f"format_named({table_format!r}).scan(parse_location({str(out)!r}, what='out'), "
            f"dt.date.fromisoformat({made['date']!r}), None); "
            # deltalake 1.6 aborts at the interpreter's exit after a whole read, about one
            # time in two ("terminate called without an active exception"): the read is done.
            "import os; os._exit(0)"
        )
    read = [sys.executable, "-c", code]
    variants = [
        Variant(baseline, lambda run_dir: read),
        Variant("petsync history (one night)", update_args(), check_update),
    ]
    if old_tree is not None:
        variants.append(Variant("old petsync history", update_args(old_tree), check_update))
    comparison = run_rounds(
        variants,
        rounds,
        dict(os.environ),
        work,
    )
    print_table(summarise(comparison), baseline, count=pets, unit="pet")
    print(
        f"\nchanged pets that night: {touched:,} ({touched / pets:.1%}: 80% new content, 10% "
        f"gone, 10% new); the table grew by {growth[0] if growth else 0:,} rows "
        f"(from {versions_before:,} versions)"
    )


# -- rebuild -----------------------------------------------------------------------------------


def bench_rebuild(
    work: Path, pets: int, nights: list[int], layout: str, old_tree: Path | None
) -> None:
    print(f"\n## Rebuild: {pets:,} pets, 1% changed a night, over {nights} nights\n", flush=True)
    source = work / "rebuild-source"
    in_child(make_nights, source, pets, max(nights), 0.01, layout)
    partitions = sorted((source / "pets").iterdir())
    trees: list[tuple[str, Path | None]] = [("petsync history --rebuild", None)]
    if old_tree is not None:  # the same nights, the old code right after the new
        trees.append(("old petsync", old_tree))
    print("| program | nights | wall s | s per night | CPU s | CPU s per night | peak RSS MiB |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for count in sorted(nights):
        out = work / f"rebuild-{count}"
        (out / "pets").mkdir(parents=True)
        for partition in partitions[:count]:
            (out / "pets" / partition.name).symlink_to(partition)
        versions = []
        for name, tree in trees:
            args = [*petsync_cmd(tree), "history", str(out), "--rebuild", "--json"]
            run = run_process("rebuild", args, dict(os.environ), work)
            assert run.ok, run.problem
            versions.append(run_json(run)["versions"])
            print(
                f"| {name} | {count} | {run.wall:.2f} | {run.wall / count:.2f} | "
                f"{run.cpu:.2f} | {run.cpu / count:.2f} | {run.rss_mib:.0f} |",
                flush=True,
            )
        assert len(set(versions)) == 1, f"the trees disagree: {versions} versions"
    print(f"\nversions after {max(nights)} nights: {versions[0]:,}")


# -- report ------------------------------------------------------------------------------------


def bench_report(work: Path, nights: int, pets: int) -> None:
    print(f"\n## Report: {nights} nights of {pets:,} pets\n", flush=True)
    out = work / "report"
    in_child(make_nights, out, pets, nights, 0.02, "listings")
    built = run_process("history", [*petsync_cmd(), "history", str(out)], dict(os.environ), work)
    assert built.ok, built.problem
    env = dict(os.environ, XDG_CACHE_HOME=str(work / "cache"))
    page = work / "report.html"
    args = [*petsync_cmd(), "report", str(out), "-o", str(page)]
    cold = run_process("report (cold cache)", args, env, work)
    assert cold.ok, cold.problem
    warm = [run_process("report", args, env, work) for _ in range(3)]
    walls = sorted(r.wall for r in warm)
    size = page.stat().st_size
    print("| step | wall s | peak RSS MiB |")
    print("|---|---:|---:|")
    print(
        f"| petsync report, first on the machine (bundles Vega's JS) | {cold.wall:.2f} | "
        f"{cold.rss_mib:.0f} |"
    )
    print(
        f"| petsync report (median of 3, bundle cached) | {walls[1]:.2f} | "
        f"{max(r.rss_mib for r in warm):.0f} |"
    )
    render = browser_render(page, work)
    if render is not None:
        print(f"| Chromium: open the page until every chart is drawn | {render:.2f} | - |")
    print(f"\nHTML: {size / 1e6:.2f} MB ({size:,} bytes), {nights} nights")


def browser_render(page: Path, work: Path) -> float | None:
    sys.path.insert(0, str(REPO))
    from tests.report.browser import Browser, SinkProxy, find_chromium

    chromium = find_chromium()
    if chromium is None:
        print("Chromium not found: render time not measured (apt-get install chromium)")
        return None
    proxy = SinkProxy()
    try:
        with Browser(chromium, work / "profile", proxy) as browser:
            browser.open("about:blank", width=1000, height=900)
            started = time.monotonic()
            browser.open(page.as_uri(), width=1000, height=900)
            browser.wait_for("document.body && document.body.dataset.rendered", attempts=2000)
            return time.monotonic() - started
    finally:
        proxy.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pets", type=int, default=1_000_000)
    parser.add_argument("--changed", type=float, default=0.01)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rebuild-pets", type=int, default=1_000_000)
    parser.add_argument("--nights", default="5,10,20", help="rebuild sizes, comma-separated")
    parser.add_argument("--report-nights", type=int, default=365)
    parser.add_argument("--report-pets", type=int, default=2_000)
    parser.add_argument("--only", choices=["update", "rebuild", "report"], action="append")
    parser.add_argument("--layout", choices=["listings", "pages"], default="listings")
    parser.add_argument(
        "--table-format",
        choices=["parquet", "delta", "iceberg"],
        default="parquet",
        help="where the update's nights are kept: dated folders (default) or a table",
    )
    parser.add_argument(
        "--old-tree",
        type=Path,
        help="also time the update and the rebuild by the petsync package in this folder",
    )
    parser.add_argument(
        "--data",
        type=Path,
        help="keep the update's snapshots and first history here, and reuse them next time",
    )
    args = parser.parse_args()
    parts = args.only or ["update", "rebuild", "report"]
    print_header("petsync history and report")
    if args.old_tree is not None:
        print(compile_tree(args.old_tree), flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-history-") as tmp:
        work = Path(tmp)
        if "update" in parts:
            bench_update(
                work,
                args.pets,
                args.changed,
                args.rounds,
                args.layout,
                args.old_tree,
                args.data,
                args.table_format,
            )
        if "rebuild" in parts:
            nights = [int(n) for n in args.nights.split(",")]
            bench_rebuild(work, args.rebuild_pets, nights, args.layout, args.old_tree)
        if "report" in parts:
            bench_report(work, args.report_nights, args.report_pets)
    print_footer()


if __name__ == "__main__":
    main()
