"""Benchmark `petsync import` into a large catalogue against a sequential httpx POST loop.

Every scenario runs on stand-ins (``standin.py``) that already hold a catalogue: the import
must cost what its file costs, not what the catalogue costs. Two stand-ins run at once, one
with ``--catalogue`` pets (default 1,000,000), one empty, and the programs run side by
side, the order reversed every other round, medians:

* ``POST loop`` (``baseline_post_loop.py``), on the large catalogue: the CSV read with the
  csv module, one POST per row with one httpx client, one after another, 201 required.
* ``import``, on the large catalogue: ``python -m petsync import ROWS.csv --out-dir DIR``
  at its defaults (row validation, the journal synced to disk, the output files, up to
  eight POSTs in flight from one thread). Each run gets a fresh output directory and state
  home, so a fresh journal.
* ``import, empty catalogue``: the same, on the empty stand-in: the catalogue's own cost
  is the difference between the two.
* ``import --baseline`` (only with ``--with-baseline``): the opt-in listing of the
  catalogue before the first POST, on the large catalogue.
* ``import @REV`` (only with ``--before REV``, CPU-bound scenario, as many as given): the
  same import by petsync at git revision REV (unpacked with ``git archive``, run with this
  interpreter), on the large catalogue: before and after side by side, in one run.

Each run is checked: its stand-in must have received exactly one POST per row.

CPU-bound scenario: the stand-ins answer at once (a few tens of microseconds of their own
CPU per request, measured and printed), so the client is what is measured. Latency
scenario: the same stand-ins with ``--latency-ms 20`` slept before every response, where
the import's concurrency is what matters.

    python benchmarks/bench_import.py                    # 5,000 rows, then 2,000 at 20 ms
    python benchmarks/bench_import.py --quick            # a small smoke run
    python benchmarks/bench_import.py --rows 5000 --rounds 3 --no-latency --with-baseline
    python benchmarks/bench_import.py --rows 5000 --rounds 3 --no-latency --before 0a57f7f
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path

from harness import (
    BENCHMARKS,
    REPO,
    Comparison,
    Run,
    StandIn,
    Summary,
    Variant,
    print_footer,
    print_header,
    print_table,
    run_rounds,
    standin,
    standin_condition,
    summarise,
)

LOOP = "POST loop"
IMPORT = "import"
IMPORT_EMPTY = "import, empty catalogue"
IMPORT_BASELINE = "import --baseline"
DEFAULT_CATALOGUE = 1_000_000
CPU_TARGET = 0.3  # the import's wall against the POST loop's, CPU-bound (issue 34)
NAMES = ("Rex", "Bella", "Zoë Müller", 'Bella "Boo" Smith', "Rex, the Brave", "猫咪", "Milo")
STATUSES = ("available", "pending", "sold", "")  # blank: no status sent


def write_rows(path: Path, rows: int) -> None:
    """``rows`` valid NewPet rows: awkward names (commas, quotes, non-ASCII), blank statuses."""
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["name", "categoryId", "status"])
        for i in range(rows):
            category = 2**53 + i if i % 50 == 17 else 1 + i % 12
            writer.writerow([f"{NAMES[i % len(NAMES)]} {i}", category, STATUSES[i % 4]])


def check_loop(rows: int) -> Callable[[Run, Path], str | None]:
    def check(run: Run, run_dir: Path) -> str | None:
        printed = run.stdout.strip().splitlines()[-1:] or ["nothing"]
        if printed != [str(rows)]:
            return f"printed {printed[0]!r}, expected {rows}"
        return check_posts(rows)(run, run_dir)

    return check


def check_posts(rows: int) -> Callable[[Run, Path], str | None]:
    """On the stand-in: exactly one POST per row reached it."""

    def check(run: Run, run_dir: Path) -> str | None:
        if run.server is not None and run.server.posts != rows:
            return f"the stand-in received {run.server.posts} POSTs for {rows} rows"
        return None

    return check


def import_args(
    source: Path, *options: str, tree: Path | None = None
) -> Callable[[Path], list[str]]:
    """``petsync import SOURCE`` into a fresh folder; petsync from ``tree`` when given."""

    def args(run_dir: Path) -> list[str]:
        out = ["--out-dir", str(run_dir / "out")]
        if tree is None:
            program = [sys.executable, "-m", "petsync"]
        else:  # first on the path, ahead of the working directory and the installed petsync
            path = f"import sys; sys.path.insert(0, {str(tree)!r}); "
            code = path + "from petsync.cli.main import main; main()"
            program = [sys.executable, "-c", code]
        return [*program, "import", str(source), *out, *options]

    return args


def unpack(revision: str, tree: Path) -> Path:
    """petsync at ``revision`` in the new folder ``tree``, its bytecode compiled (as installed)."""
    archive = tree.with_suffix(".tar")
    with archive.open("wb") as handle:
        subprocess.run(["git", "archive", revision], cwd=REPO, stdout=handle, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(tree, filter="data")
    archive.unlink()
    package = tree / "petsync"
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], check=True)
    return tree


def loop_variant(source: Path, rows: int) -> Variant:
    args = [sys.executable, str(BENCHMARKS / "baseline_post_loop.py"), str(source)]
    return Variant(LOOP, lambda run_dir: args, check_loop(rows))


def import_variant(source: Path, rows: int) -> Variant:
    return Variant(IMPORT, import_args(source), check_posts(rows))


def side_by_side(
    pairs: list[tuple[Variant, StandIn]], rounds: int, workdir: Path
) -> dict[str, Summary]:
    """Each variant on its own stand-in, once per round, the order reversed every other."""
    order = [variant for variant, _ in pairs]
    comparison = Comparison(order, {v.name: [] for v in order})
    for round_no in range(rounds):
        print(f"  round {round_no + 1} of {rounds} (each program's line says 1/1):", flush=True)
        for variant, server in pairs if round_no % 2 == 0 else pairs[::-1]:
            one = run_rounds([variant], 1, server.client_env(), workdir, server)
            comparison.runs[variant.name] += one.runs[variant.name]
    return summarise(comparison)


def scenario(
    title: str,
    rows: int,
    catalogue: int,
    rounds: int,
    workdir: Path,
    *,
    latency_ms: float = 0.0,
    with_baseline: bool = False,
    before: tuple[tuple[str, Path], ...] = (),
) -> dict[str, Summary]:
    print(f"\n## {title}: {rows:,} rows into {catalogue:,} pets, {rounds} round(s)\n")
    source = workdir / f"rows-{rows}.csv"
    write_rows(source, rows)
    with contextlib.ExitStack() as stack:
        large = stack.enter_context(standin(catalogue, workdir, latency_ms))
        empty = stack.enter_context(standin(0, workdir, latency_ms))
        print(f"  {large.describe()}\n  {empty.describe()}", flush=True)
        pairs = [
            (loop_variant(source, rows), large),
            (import_variant(source, rows), large),
            (Variant(IMPORT_EMPTY, import_args(source), check_posts(rows)), empty),
        ]
        if with_baseline:
            listing = import_args(source, "--baseline")
            pairs.append((Variant(IMPORT_BASELINE, listing, check_posts(rows)), large))
        for revision, tree in before:
            old = import_args(source, tree=tree)
            pairs.append((Variant(f"import @{revision}", old, check_posts(rows)), large))
        summaries = side_by_side(pairs, rounds, workdir)
    print_table(summaries, LOOP, count=rows, unit="row")
    if not latency_ms:
        standin_condition(summaries, LOOP)
    return summaries


def memory_by_size(sizes: list[int], workdir: Path) -> None:
    """The import's peak RSS at several file sizes, one run each, on the stand-in."""
    print(f"\n## memory: import of {', '.join(f'{n:,}' for n in sizes)} rows on the stand-in\n")
    with standin(0, workdir) as server:
        env = server.client_env()
        runs = []
        for rows in sizes:
            source = workdir / f"rows-{rows}.csv"
            write_rows(source, rows)
            variant = import_variant(source, rows)
            runs.append(run_rounds([variant], 1, env, workdir, server).runs[IMPORT][0])
    print("| rows | wall s | peak RSS MiB |")
    print("|---:|---:|---:|")
    for rows, run in zip(sizes, runs, strict=True):
        print(f"| {rows:,} | {run.wall:.2f} | {run.rss_mib:.0f} |")
    (small, first), (large, last) = (sizes[0], runs[0]), (sizes[-1], runs[-1])
    if large > small:
        per_row = (last.rss_mib - first.rss_mib) * 2**20 / (large - small)
        print(f"growth: {per_row:.0f} bytes of peak RSS per extra row")


def target(summaries: dict[str, Summary], limit: float, catalogue: int) -> None:
    """The targets: the import against the loop, and against itself into an empty catalogue."""
    loop, imported = summaries.get(LOOP), summaries.get(IMPORT)
    empty = summaries.get(IMPORT_EMPTY)
    if loop is None or imported is None:
        print("target: not checked (a program failed every round)")
        return
    ratio = imported.wall / loop.wall
    verdict = "met" if ratio <= limit else "not met"
    print(
        f"target: import into {catalogue:,} pets {ratio:.2f}x the POST loop's wall "
        f"(<= {limit:g}x): {verdict}"
    )
    if empty is not None:
        print(
            f"catalogue's cost: import into {catalogue:,} pets {imported.wall:.2f} s, into an "
            f"empty catalogue {empty.wall:.2f} s: {imported.wall / empty.wall:.2f}x "
            f"(CPU {imported.cpu:.2f} s against {empty.cpu:.2f} s)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5_000, help="rows, CPU-bound scenario")
    parser.add_argument(
        "--catalogue",
        type=int,
        default=DEFAULT_CATALOGUE,
        help=f"pets the large stand-in holds (default {DEFAULT_CATALOGUE:,})",
    )
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (default 3)")
    parser.add_argument("--no-latency", action="store_true", help="skip the latency scenario")
    parser.add_argument("--no-cpu", action="store_true", help="skip the CPU-bound scenario")
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--latency-rows", type=int, default=2_000)
    parser.add_argument(
        "--with-baseline",
        action="store_true",
        help="also time `import --baseline` in the CPU-bound scenario (it lists the catalogue)",
    )
    parser.add_argument(
        "--before",
        metavar="REV",
        action="append",
        default=[],
        help="also time the import of petsync at git revision REV (CPU-bound scenario; "
        "may be given more than once)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="small sizes for a smoke run (not for publishing)"
    )
    parser.add_argument(
        "--memory",
        metavar="SIZES",
        help="only the import's peak RSS at these row counts, e.g. 1000,20000,200000",
    )
    options = parser.parse_args()
    if options.rounds < 1 or options.rows < 1 or options.latency_rows < 1:
        parser.error("--rounds, --rows and --latency-rows must be 1 or more")
    if options.catalogue < 0:
        parser.error("--catalogue must be 0 or more")
    if options.quick:
        options.rows, options.latency_rows, options.catalogue = 1_000, 200, 20_000
    print_header("# petsync import benchmark (benchmarks/bench_import.py)")
    with tempfile.TemporaryDirectory(prefix="petsync-bench-import-") as tmp:
        workdir = Path(tmp)
        if options.memory:
            memory_by_size([int(n) for n in options.memory.split(",")], workdir)
            print_footer()
            return
        if not options.no_cpu:
            trees = (unpack(rev, workdir / f"before-{i}") for i, rev in enumerate(options.before))
            before = tuple(zip(options.before, trees, strict=True))
            cpu = scenario(
                "CPU-bound",
                options.rows,
                options.catalogue,
                options.rounds,
                workdir,
                with_baseline=options.with_baseline,
                before=before,
            )
            target(cpu, CPU_TARGET, options.catalogue)
        if not options.no_latency:
            latency = scenario(
                f"{options.latency_ms:g} ms latency per request",
                options.latency_rows,
                options.catalogue,
                options.rounds,
                workdir,
                latency_ms=options.latency_ms,
            )
            target(latency, 0.15, options.catalogue)
    print_footer()


if __name__ == "__main__":
    main()
