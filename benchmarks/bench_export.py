"""Benchmark `petsync export` where the client is the bottleneck, against a bare httpx loop.

CPU-bound scenario (issue 10): the stand-in Petstore (``standin.py``) serves pre-rendered
pages, at a measured cost of a few per cent of the bare loop's time per page, so the client
is what is measured. At each catalogue size (Link paging, limit=100) these run as whole
processes, side by side, the order reversed every other round, medians over the rounds:

* ``bare loop`` (``baseline_list_loop.py``): follow the next links for the three statuses,
  ``r.json()``, drop. The floor every listPets client pays.
* ``curl loop`` (``baseline_curl_loop.py``): the same over one pycurl handle, each page
  decoded by msgspec into typed records. The second floor: a Python client at best.
* ``naive pandas`` (``baseline_pandas.py``): list of dicts -> DataFrame -> Parquet + CSV.
* ``export --no-sweep``: ``python -m petsync export --no-sweep``, the same three listings.
* ``export``: the default, which also pages the unfiltered list (every pet fetched twice).

Each row gives wall time, CPU (user + system of the process, ``os.wait4``), peak RSS, the
ratios to the bare loop, and the stand-in's CPU per request measured during that program's
runs. Every run's result is checked (pet counts; for petsync the snapshot's exact ids), and
a wrong one is not counted.

Latency scenario: ``petsync serve --latency-ms 20`` (a real server, 20 ms per request),
where concurrency is what matters: the export with its statuses concurrently against
``--concurrency 1``, with and without the sweep, beside the (sequential) bare loop.

    python benchmarks/bench_export.py                     # 100k and 1M pets, 3 rounds, latency
    python benchmarks/bench_export.py --quick             # a small smoke run, about a minute
    python benchmarks/bench_export.py --pets 1000000,3000000,5000000 --only export --no-latency
                                                          # memory (issue 13): RSS, wall per pet
    python benchmarks/bench_export.py --pets 300000 --old-tree /tmp/old --no-latency
                                                          # beside another checkout's petsync
    python benchmarks/bench_export.py --no-cpu-bound --no-latency --latency-pets 20000 \
        --latency-styles link,cursor,offset,page --old-tree /tmp/old   # reading ahead by style

``--old-tree DIR`` adds ``old export --no-sweep`` and ``old export``: the same commands run
with the ``petsync`` package found in DIR (e.g. ``git archive main petsync | tar -x -C DIR``),
so a change of route is measured side by side with the one it replaces.

Server and clients share the machine: on 2 cores the stand-in takes a few per cent of one.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

from harness import (
    BENCHMARKS,
    Comparison,
    Run,
    Summary,
    Variant,
    new_key,
    print_footer,
    print_header,
    print_table,
    reference_server,
    run_rounds,
    standin,
    standin_condition,
    summarise,
)

STATUSES = ("available", "pending", "sold")
NO_STATUS_EVERY = 10  # the seed: pets 3, 13, 23, ... have no status (standin.seed_row)

BARE = "bare loop"
CURL = "curl loop"
PANDAS = "naive pandas"
NO_SWEEP = "export --no-sweep"
EXPORT = "export"
Check = Callable[[Run, Path], "str | None"]
OLD_NO_SWEEP = "old export --no-sweep"
OLD_EXPORT = "old export"
CHOICES = {"bare": BARE, "curl": CURL, "pandas": PANDAS, "no-sweep": NO_SWEEP, "export": EXPORT}


def with_status(pets: int) -> int:
    """How many of pets 1..N have a status: all but 3, 13, 23, ..."""
    return pets - (pets + NO_STATUS_EVERY - 3) // NO_STATUS_EVERY


def check_count(expected: int) -> Check:
    def check(run: Run, run_dir: Path) -> str | None:
        got = run.stdout.strip().splitlines()[-1:] or ["nothing"]
        return None if got == [str(expected)] else f"printed {got[0]!r}, expected {expected}"

    return check


def check_snapshot(pets: int, *, sweep: bool) -> Check:
    """The published snapshot holds exactly the expected pets (checked in another process)."""

    def check(run: Run, run_dir: Path) -> str | None:
        args = [sys.executable, str(BENCHMARKS / "check_snapshot.py"), str(run_dir / "out")]
        args += [str(pets)] + ([] if sweep else ["--with-status-only"])
        done = subprocess.run(args, capture_output=True, text=True, timeout=600)
        return None if done.returncode == 0 else done.stderr.strip()[-300:]

    return check


def export_args(*extra: str, tree: Path | None = None) -> Callable[[Path], list[str]]:
    """``python -m petsync export``; with ``tree``, the petsync package found in that folder."""

    def args(run_dir: Path) -> list[str]:
        command = ["export", "--out", str(run_dir / "out"), *extra]
        if tree is None:
            return [sys.executable, "-m", "petsync", *command]
        # The folder first on the path: it wins over the installed (editable) petsync.
        code = (
            f"import runpy, sys; sys.path.insert(0, {str(tree)!r}); sys.argv[0] = 'petsync'; "
            "runpy.run_module('petsync', run_name='__main__', alter_sys=True)"
        )
        return [sys.executable, "-c", code, *command]

    return args


def compile_tree(tree: Path) -> str:
    """Bytecode for the petsync of ``tree`` too, as the header writes it for this checkout:
    without it (PYTHONDONTWRITEBYTECODE set) every old run compiles its modules from source,
    about 0.4 s of CPU that the new runs do not pay."""
    package = tree / "petsync"
    if not package.is_dir():
        return f"bytecode: no petsync in {tree}"
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(package)], check=True, timeout=300
    )
    return f"bytecode: compiled {package} (--old-tree)"


def variants(pets: int, only: list[str], old_tree: Path | None = None) -> list[Variant]:
    every = [
        Variant(
            BARE,
            lambda run_dir: [sys.executable, str(BENCHMARKS / "baseline_list_loop.py")],
            check_count(with_status(pets)),
        ),
        Variant(
            CURL,
            lambda run_dir: [sys.executable, str(BENCHMARKS / "baseline_curl_loop.py")],
            check_count(with_status(pets)),
        ),
        Variant(
            PANDAS,
            lambda run_dir: [sys.executable, str(BENCHMARKS / "baseline_pandas.py"), str(run_dir)],
            check_count(with_status(pets)),
        ),
        Variant(
            NO_SWEEP,
            export_args("--no-sweep"),
            check_snapshot(pets, sweep=False),
        ),
        Variant(
            EXPORT,
            export_args(),
            check_snapshot(pets, sweep=True),
        ),
    ]
    chosen = [v for v in every if v.name in only]
    if old_tree is not None:
        if NO_SWEEP in only:
            chosen.append(
                Variant(
                    OLD_NO_SWEEP,
                    export_args("--no-sweep", tree=old_tree),
                    check_snapshot(pets, sweep=False),
                )
            )
        if EXPORT in only:
            chosen.append(
                Variant(OLD_EXPORT, export_args(tree=old_tree), check_snapshot(pets, sweep=True))
            )
    return chosen


def cpu_bound(
    pets: int, rounds: int, only: list[str], workdir: Path, old_tree: Path | None = None
) -> dict[str, Summary]:
    print(f"\n## {pets:,} pets on the stand-in (Link paging, limit=100), {rounds} round(s)\n")
    with standin(pets, workdir) as server:
        print(f"  {server.describe()}", flush=True)
        env = server.client_env()
        comparison = run_rounds(variants(pets, only, old_tree), rounds, env, workdir, server)
    summaries = summarise(comparison)
    floor = BARE if BARE in summaries else CURL
    print_table(summaries, floor, count=pets, unit="pet")
    standin_condition(summaries, floor)
    targets(summaries, pets)
    return summaries


def interleaved(
    sizes: list[int], rounds: int, only: list[str], workdir: Path
) -> dict[int, dict[str, Summary]]:
    """Every size's stand-in up at once, the sizes alternating round by round.

    Run one size after another, a drift in the machine's speed reads as a change in the time
    per pet between sizes; alternating puts every size under the same conditions.
    """
    print(f"\n## {', '.join(f'{p:,}' for p in sizes)} pets, interleaved, {rounds} round(s)\n")
    with ExitStack() as stack:
        servers = {pets: stack.enter_context(standin(pets, workdir)) for pets in sizes}
        comparisons: dict[int, Comparison] = {}
        for round_no in range(rounds):
            for pets in sizes if round_no % 2 == 0 else sizes[::-1]:
                server = servers[pets]
                print(f"  round {round_no + 1}/{rounds}, {pets:,} pets ({server.describe()})")
                env = server.client_env()
                order = variants(pets, only)
                one = run_rounds(
                    order if round_no % 2 == 0 else order[::-1], 1, env, workdir, server
                )
                if pets in comparisons:
                    for name, runs in one.runs.items():
                        comparisons[pets].runs[name] += runs
                else:
                    comparisons[pets] = one
    return {pets: summarise(comparison) for pets, comparison in comparisons.items()}


def across_sizes(results: dict[int, dict[str, Summary]]) -> None:
    """One table over every size: how peak RSS and wall per pet grow (issue 13)."""
    print("\n## Across sizes (medians; peak RSS the largest of the rounds)\n")
    print("| program | pets | wall s | wall us per pet | CPU s | peak RSS MiB |")
    print("|---|---:|---:|---:|---:|---:|")
    names = dict.fromkeys(name for summaries in results.values() for name in summaries)
    for name in names:
        for pets, summaries in results.items():
            s = summaries.get(name)
            if s is not None:
                print(
                    f"| {name} | {pets:,} | {s.wall:.2f} | {s.wall / pets * 1e6:.1f} | "
                    f"{s.cpu:.2f} | {s.rss_mib:.0f} |"
                )
    memory_targets(results)


def memory_targets(results: dict[int, dict[str, Summary]]) -> None:
    """Issue 13's targets between the smallest and the largest size run (1M and 5M)."""
    low, high = min(results), max(results)
    if low == high or low < 1_000_000:  # below a million the start-up cost dominates
        return
    print(f"issue 13 targets (stated for 1,000,000 -> 5,000,000 pets; here {low:,} -> {high:,}):")
    for name in (NO_SWEEP, EXPORT):
        small, large = results[low].get(name), results[high].get(name)
        if small is None or large is None:
            continue
        growth = (large.rss_mib - small.rss_mib) / ((high - low) / 1e6)
        per_pet = (large.wall / high) / (small.wall / low)
        print(f"  {_target(f'{name} peak RSS at {high:,}', large.rss_mib, 250, 'MiB')}")
        print(f"  {_target(f'{name} RSS growth', growth, 10, 'MiB per extra million')}")
        print(f"  {_target(f'{name} wall per pet, {high:,} vs {low:,}', per_pet, 1.1, 'x')}")


def targets(summaries: dict[str, Summary], pets: int) -> None:
    """The targets (issue 10's, tightened by issue 21; stated for 1,000,000 pets), at this size."""
    bare, pandas = summaries.get(BARE), summaries.get(PANDAS)
    no_sweep, export = summaries.get(NO_SWEEP), summaries.get(EXPORT)
    lines: list[str] = []
    if bare is not None and no_sweep is not None:
        lines += [
            _target("export --no-sweep wall", no_sweep.wall / bare.wall, 0.7, "x bare"),
            _target("export --no-sweep CPU", no_sweep.cpu / bare.cpu, 1.2, "x bare"),
            _target("export --no-sweep peak RSS", no_sweep.rss_mib, 200, "MiB"),
        ]
        if pandas is not None:
            lines.append(
                _target("export --no-sweep vs naive pandas", no_sweep.wall / pandas.wall, 1.0, "x")
            )
    if bare is not None and export is not None:
        lines += [
            _target("export wall", export.wall / bare.wall, 1.4, "x bare"),
            _target("export peak RSS", export.rss_mib, 200, "MiB"),
        ]
    curl = summaries.get(CURL)
    if curl is not None:  # issue 34's, against the second floor
        for name, limit in ((NO_SWEEP, 1.5), (EXPORT, 2.5)):
            if name in summaries:
                ratio = summaries[name].wall / curl.wall
                lines.append(_target(f"{name} wall", ratio, limit, "x curl loop"))
    if lines:
        print(f"targets (stated for 1,000,000 pets; here {pets:,}):")
        for line in lines:
            print(f"  {line}")


def _target(what: str, value: float, limit: float, unit: str) -> str:
    verdict = "met" if value <= limit else "not met"
    return f"{what}: {value:.2f} {unit} (target <= {limit:g}): {verdict}"


def latency(
    pets: int, latency_ms: float, rounds: int, workdir: Path, old_tree: Path | None = None
) -> None:
    print(
        f"\n## {latency_ms:g} ms latency per request: petsync serve --latency-ms {latency_ms:g}, "
        f"{pets:,} pets, {rounds} round(s)\n"
    )
    chosen = [
        Variant(
            BARE,
            lambda run_dir: [sys.executable, str(BENCHMARKS / "baseline_list_loop.py")],
            check_count(with_status(pets)),
        )
    ]
    trees: list[tuple[str, Path | None]] = [("", None)]
    if old_tree is not None:
        trees.append(("old ", old_tree))
    for prefix, tree in trees:
        chosen += [
            Variant(
                f"{prefix}no sweep, one after another",
                export_args("--no-sweep", "--concurrency", "1", tree=tree),
            ),
            Variant(f"{prefix}no sweep, concurrently", export_args("--no-sweep", tree=tree)),
            Variant(
                f"{prefix}sweep, one after another", export_args("--concurrency", "1", tree=tree)
            ),
            Variant(f"{prefix}sweep, concurrently", export_args(tree=tree)),
        ]
    key = new_key()
    with reference_server(key, workdir, seed_pets=pets, latency_ms=latency_ms) as base_url:
        env = dict(os.environ, PETSYNC_API_KEY=key, PETSYNC_BASE_URL=base_url)
        comparison = run_rounds(chosen, rounds, env, workdir)
    summaries = summarise(comparison)
    print_table(summaries, BARE, count=pets, unit="pet")
    for prefix, _ in trees:
        for concurrent, sequential, limit in (
            ("no sweep, concurrently", "no sweep, one after another", 0.39),
            ("sweep, concurrently", "sweep, one after another", 0.54),
        ):
            concurrent, sequential = prefix + concurrent, prefix + sequential
            if concurrent in summaries and sequential in summaries:
                ratio = summaries[concurrent].wall / summaries[sequential].wall
                print(_target(f"{concurrent} / one after another", ratio, limit, "x"))


def latency_styles(
    pets: int,
    latency_ms: float,
    rounds: int,
    styles: list[str],
    workdir: Path,
    old_tree: Path | None = None,
) -> None:
    """The default export against ``petsync serve --pagination STYLE --latency-ms MS``.

    The sweep, asking for one page after another, would take its pages times the latency
    (its *chain*: ``pets / 100 + 1`` pages, the last one short or empty). Issue 34's
    targets: with ``offset`` or ``page`` paging the export reads pages ahead and takes at
    most 0.4x that chain, start-up included; ``link`` and ``cursor`` are no slower than the
    code in ``--old-tree``.
    """
    chain = (pets // 100 + 1) * latency_ms / 1000
    print(
        f"\n## {latency_ms:g} ms latency per request by pagination style: petsync serve "
        f"--pagination STYLE --latency-ms {latency_ms:g}, {pets:,} pets, {rounds} round(s); "
        f"the sweep's chain is {pets // 100 + 1} pages x {latency_ms:g} ms = {chain:.2f} s\n"
    )
    key = new_key()
    lines: list[str] = []
    for style in styles:
        chosen = [Variant(f"{style}: export", export_args(), check_snapshot(pets, sweep=True))]
        if old_tree is not None:
            chosen.append(
                Variant(
                    f"{style}: old export",
                    export_args(tree=old_tree),
                    check_snapshot(pets, sweep=True),
                )
            )
        with reference_server(
            key, workdir, seed_pets=pets, latency_ms=latency_ms, pagination=style
        ) as base_url:
            env = dict(os.environ, PETSYNC_API_KEY=key, PETSYNC_BASE_URL=base_url)
            summaries = summarise(run_rounds(chosen, rounds, env, workdir))
        new = summaries[f"{style}: export"]
        print(
            f"| {style} | export | {new.wall:.2f} s | {new.wall / chain:.2f}x chain | "
            f"CPU {new.cpu:.2f} s |"
        )
        old = summaries.get(f"{style}: old export")
        if old is not None:
            print(
                f"| {style} | old export | {old.wall:.2f} s | {old.wall / chain:.2f}x chain | "
                f"CPU {old.cpu:.2f} s |"
            )
        if style in ("offset", "page"):
            lines.append(
                _target(f"{style}: export / the sweep's chain", new.wall / chain, 0.4, "x")
            )
        elif old is not None:
            lines.append(_target(f"{style}: export / old export", new.wall / old.wall, 1.0, "x"))
    for line in lines:
        print(line)


def parse_sizes(text: str) -> list[int]:
    try:
        sizes = [int(part.replace("_", "")) for part in text.split(",") if part.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(
            f"not a comma-separated list of pet counts: {text!r}"
        ) from exc
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError("pet counts must be 1 or more")
    return sizes


def parse_only(text: str) -> list[str]:
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [n for n in names if n not in CHOICES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown program {', '.join(unknown) or text!r}; choose from {', '.join(CHOICES)}"
        )
    return [CHOICES[n] for n in names]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--pets",
        type=parse_sizes,
        default=[100_000, 1_000_000],
        help="catalogue sizes, comma-separated (default 100000,1000000)",
    )
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (default 3)")
    parser.add_argument(
        "--only",
        type=parse_only,
        default=list(CHOICES.values()),
        help=f"programs to run, comma-separated, from {','.join(CHOICES)} (default all)",
    )
    parser.add_argument(
        "--old-tree",
        type=Path,
        default=None,
        help="also run the exports with the petsync package in this folder (side by side)",
    )
    parser.add_argument("--no-latency", action="store_true", help="skip the latency scenario")
    parser.add_argument(
        "--no-cpu-bound", action="store_true", help="skip the stand-in (CPU-bound) sizes"
    )
    parser.add_argument(
        "--latency-styles",
        default="",
        help="also time the default export per server pagination style at the latency "
        "(comma-separated from link,cursor,offset,page), beside --old-tree if given",
    )
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--latency-pets", type=int, default=60_000)
    parser.add_argument(
        "--quick", action="store_true", help="small sizes for a smoke run (not for publishing)"
    )
    parser.add_argument(
        "--interleave",
        action="store_true",
        help="start every size's stand-in at once and alternate the sizes round by round",
    )
    options = parser.parse_args()
    if options.rounds < 1:
        parser.error("--rounds must be 1 or more")
    if options.quick:
        options.pets, options.latency_pets = [20_000], 3_000
    print_header("# petsync export benchmark (benchmarks/bench_export.py)")
    if options.old_tree is not None:
        print(compile_tree(options.old_tree))
    with tempfile.TemporaryDirectory(prefix="petsync-bench-export-") as tmp:
        workdir = Path(tmp)
        if options.no_cpu_bound:
            results = {}
        elif options.interleave:
            results = interleaved(options.pets, options.rounds, options.only, workdir)
        else:
            results = {
                pets: cpu_bound(pets, options.rounds, options.only, workdir, options.old_tree)
                for pets in options.pets
            }
        if len(results) > 1:
            across_sizes(results)
        if not options.no_latency:
            latency(
                options.latency_pets, options.latency_ms, options.rounds, workdir, options.old_tree
            )
        styles = [part.strip() for part in options.latency_styles.split(",") if part.strip()]
        if styles:
            latency_styles(
                options.latency_pets,
                options.latency_ms,
                options.rounds,
                styles,
                workdir,
                options.old_tree,
            )
    print_footer()


if __name__ == "__main__":
    main()
