"""What the benchmarks share: servers as subprocesses, whole-process runs, rounds and tables.

Every benchmarked program runs as its own process, so its wall time, CPU time (user + system)
and peak RSS come from ``os.wait4``'s rusage of that process alone. Programs run side by side
in rounds, the order reversed every other round (so none always runs first, on a cold page
cache, or last, after the others' writes), and the tables show medians over the rounds.

Two servers: :class:`StandIn` (``standin.py``: pre-rendered pages, its own CPU per request
on ``/_stats``, for the CPU-bound scenarios) and :class:`ReferenceServer` (``petsync serve``,
for the latency scenarios). Both listen on loopback only.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import math
import os
import platform
import re
import resource
import secrets
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent
REPO = BENCHMARKS.parent
STANDIN = BENCHMARKS / "standin.py"
URL = re.compile(r"http://[^\s)]+")
START_TIMEOUT = 900.0  # seconds for a server to build its catalogue and listen
RUN_TIMEOUT = 1800.0  # seconds for one benchmarked process before it is killed


# -- the machine and the command -------------------------------------------------------------


def describe_machine() -> list[str]:
    """Lines naming the machine, the software and the checkout, for the top of the output."""
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        model = platform.processor() or model
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    memory = ""
    try:
        kib = int(Path("/proc/meminfo").read_text().split()[1])
        memory = f", {kib / 2**20:.1f} GiB RAM"
    except (OSError, ValueError, IndexError):
        pass
    versions = []
    for name in ("petsync", "httpx", "pandas", "pyarrow"):
        try:
            versions.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            versions.append(f"{name} missing")
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return [
        f"machine: {model}, {cores} cores{memory}; {platform.system()} {platform.release()}",
        f"python {platform.python_version()} ({sys.executable}); {', '.join(versions)}",
        f"checkout: {checkout()}; load average at start {load}",
    ]


def checkout() -> str:
    """The commit benchmarked, and whether the work tree differs from it."""
    try:
        commit = subprocess.run(
            ["git", "-C", str(REPO), "log", "-1", "--format=%h %s"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "not a git checkout"
    return commit[:90] + (" (with uncommitted changes)" if dirty else "")


def command_line() -> str:
    """The exact command that produced this output."""
    script = Path(sys.argv[0]).resolve()
    shown = script.relative_to(REPO) if script.is_relative_to(REPO) else script
    return f"cd {REPO} && {shlex.join([sys.executable, str(shown), *sys.argv[1:]])}"


STARTED = time.monotonic()
LOADS: list[float] = []  # the 1-minute load average after each run: other work on the machine


def print_header(title: str) -> None:
    print(title)
    print(f"command: {command_line()}")
    for line in describe_machine():
        print(line)
    print(compile_petsync())
    sys.stdout.flush()


def compile_petsync() -> str:
    """Write petsync's bytecode caches, as an installed package has them, before measuring.

    An editable install has none, and with PYTHONDONTWRITEBYTECODE set (as on the benchmark
    machine) no run writes them: every petsync process would compile its modules from source
    (about 0.4 s more per export on the 2-core machine), which a user's install does not do.
    """
    spec = importlib.util.find_spec("petsync")
    if spec is None or not spec.submodule_search_locations:
        return "bytecode: petsync not found"
    package = list(spec.submodule_search_locations)[0]
    subprocess.run([sys.executable, "-m", "compileall", "-q", package], check=True, timeout=300)
    flag = os.environ.get("PYTHONDONTWRITEBYTECODE")
    return f"bytecode: compiled {package} (PYTHONDONTWRITEBYTECODE={flag or 'unset'})"


# -- servers ---------------------------------------------------------------------------------


def print_footer() -> None:
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"\nfinished in {(time.monotonic() - STARTED) / 60:.1f} min; load average at end {load}")
    if LOADS:
        print(
            f"1-minute load average after each run: {min(LOADS):.2f} to {max(LOADS):.2f} "
            f"(median {statistics.median(LOADS):.2f}); the benchmark itself keeps about 1 busy"
        )
    print(
        f"benchmark driver's own peak RSS {driver_rss_mib():.0f} MiB (a child's peak RSS counts "
        "from its parent's at spawn, so no figure above can read lower than this)"
    )


def driver_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def new_key() -> str:
    return "bench-" + secrets.token_hex(8)


def start_process(
    args: list[str], env: dict[str, str], log: Path, what: str
) -> tuple[subprocess.Popen[bytes], str]:
    """Start a server with its output going to ``log``; wait until the log shows its URL.

    A file, not a pipe: nobody has to keep reading it while the benchmark runs.
    """
    with log.open("wb") as out:
        proc = subprocess.Popen(
            args, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:  # bounded by START_TIMEOUT
        found = URL.search(log.read_text(errors="replace"))
        if found:
            return proc, found.group(0).rstrip(".,")
        if proc.poll() is not None:
            raise SystemExit(f"{what} exited with {proc.returncode}: {log.read_text()[-500:]}")
        time.sleep(0.05)
    stop_process(proc)
    raise SystemExit(f"{what} did not print its URL within {START_TIMEOUT:.0f} s")


def stop_process(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=60)


@dataclass(frozen=True)
class ServerCost:
    """The stand-in's share of one run: requests it answered and the CPU it spent on them."""

    requests: int
    posts: int
    cpu_seconds: float

    @property
    def cpu_per_request(self) -> float:
        return self.cpu_seconds / self.requests if self.requests else float("nan")


class StandIn:
    """``standin.py --pets N`` as a subprocess: its URL, key, and CPU cost per request."""

    def __init__(self, pets: int, workdir: Path, latency_ms: float = 0.0) -> None:
        self.pets = pets
        self.latency_ms = latency_ms
        self.key = new_key()
        self._log = workdir / f"standin-{pets}-{latency_ms:g}ms.log"
        began = time.monotonic()
        self._proc, self.base_url = start_process(
            [sys.executable, str(STANDIN), "--pets", str(pets), "--port", "0"]
            + (["--latency-ms", f"{latency_ms:g}"] if latency_ms else []),
            dict(os.environ, PETSYNC_API_KEY=self.key),
            self._log,
            "the stand-in",
        )
        self.started_in = time.monotonic() - began
        self._stats_url = self.base_url.rsplit("/v1", 1)[0] + "/_stats"

    def client_env(self) -> dict[str, str]:
        """The environment a client of this stand-in runs with: ours, plus its URL and key."""
        return dict(os.environ, PETSYNC_API_KEY=self.key, PETSYNC_BASE_URL=self.base_url)

    def stats(self) -> dict[str, float]:
        with urllib.request.urlopen(self._stats_url, timeout=60) as answer:
            data: dict[str, float] = json.load(answer)
        return data

    def _lines(self, prefix: str) -> list[str]:
        text = self._log.read_text(errors="replace")
        return [line for line in text.splitlines() if line.startswith(prefix)]

    def describe(self) -> str:
        built = self._lines("built ")
        latency = f", {self.latency_ms:g} ms latency" if self.latency_ms else ""
        return (
            f"stand-in at {self.base_url}: {self.pets:,} pets{latency}; "
            f"{built[0] if built else 'built'} (ready after {self.started_in:.1f} s)"
        )

    def stop(self) -> str:
        """Stop it; its own summary (requests served, CPU per request over its whole life)."""
        stop_process(self._proc)
        summary = self._lines("stand-in served ")
        return summary[-1] if summary else ""


@contextmanager
def standin(pets: int, workdir: Path, latency_ms: float = 0.0) -> Iterator[StandIn]:
    server = StandIn(pets, workdir, latency_ms)
    try:
        yield server
    finally:
        summary = server.stop()
        if summary:
            print(f"  {summary}")


@contextmanager
def reference_server(
    key: str,
    workdir: Path,
    *,
    seed_pets: int = 0,
    latency_ms: float = 0.0,
    pagination: str = "link",
) -> Iterator[str]:
    """``python -m petsync serve`` on a free loopback port; yields its base URL."""
    args = [sys.executable, "-m", "petsync", "serve", "--port", "0", "--pagination", pagination]
    if seed_pets:
        args += ["--seed-pets", str(seed_pets)]
    if latency_ms:
        args += ["--latency-ms", f"{latency_ms:g}"]
    log = workdir / f"serve-{secrets.token_hex(4)}.log"
    proc, url = start_process(args, dict(os.environ, PETSYNC_API_KEY=key), log, "petsync serve")
    try:
        yield url
    finally:
        stop_process(proc)


# -- whole-process runs ----------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    """One whole process: wall and CPU seconds, peak RSS, exit code, output, server cost."""

    name: str
    wall: float
    cpu: float
    rss_mib: float
    exit_code: int
    stdout: str
    stderr: str
    server: ServerCost | None = None
    problem: str | None = None  # why the run does not count (failed, or wrong result)

    @property
    def ok(self) -> bool:
        return self.problem is None


def run_process(
    name: str, args: Sequence[str], env: dict[str, str], cwd: Path, timeout: float = RUN_TIMEOUT
) -> Run:
    """Run one process to its end (killed after ``timeout``); measure it with ``os.wait4``."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.monotonic()
        proc = subprocess.Popen(
            list(args), env=env, cwd=cwd, stdout=out, stderr=err, stdin=subprocess.DEVNULL
        )
        watchdog = threading.Timer(timeout, proc.kill)
        watchdog.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            watchdog.cancel()
        wall = time.monotonic() - started
        proc.returncode = code = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode(errors="replace")
        stderr = err.read().decode(errors="replace")
    problem = None if code == 0 else f"exit {code}: {stderr.strip()[-300:]}"
    return Run(
        name,
        wall,
        usage.ru_utime + usage.ru_stime,
        usage.ru_maxrss / 1024,
        code,
        stdout,
        stderr,
        problem=problem,
    )


@dataclass(frozen=True)
class Variant:
    """A program in a comparison: its name, how to run it in a fresh directory, its check.

    ``args(run_dir)`` gives the command line; ``check(run, run_dir)`` says what is wrong with
    a finished run's result (None when it is right).
    """

    name: str
    args: Callable[[Path], list[str]]
    check: Callable[[Run, Path], str | None] = lambda run, run_dir: None


@dataclass
class Comparison:
    """All rounds of a set of variants: the runs of each, in variant order."""

    variants: list[Variant]
    runs: dict[str, list[Run]] = field(default_factory=dict)

    def good(self, name: str) -> list[Run]:
        return [r for r in self.runs.get(name, []) if r.ok]


def run_rounds(
    variants: list[Variant],
    rounds: int,
    env: dict[str, str],
    workdir: Path,
    server: StandIn | None = None,
) -> Comparison:
    """Run every variant once per round, reversing the order every other round."""
    comparison = Comparison(variants, {v.name: [] for v in variants})
    width = max(len(v.name) for v in variants)
    for round_no in range(rounds):
        order = variants if round_no % 2 == 0 else list(reversed(variants))
        for variant in order:
            run_dir = Path(tempfile.mkdtemp(prefix="run-", dir=workdir))
            before = server.stats() if server is not None else None
            # A state home of its own: the import keeps its journals there (not beside its
            # outputs), so a shared one would make every run after the first send nothing.
            own_env = {**env, "XDG_STATE_HOME": str(run_dir / "state")}
            run = run_process(variant.name, variant.args(run_dir), own_env, run_dir)
            if server is not None and before is not None:
                after = server.stats()
                cost = ServerCost(
                    int(after["requests"] - before["requests"]),
                    int(after["posts"] - before["posts"]),
                    after["cpu_seconds"] - before["cpu_seconds"],
                )
                run = dataclasses.replace(run, server=cost)
            if run.ok:
                problem = variant.check(run, run_dir)
                if problem:
                    run = dataclasses.replace(run, problem=problem)
            comparison.runs[variant.name].append(run)
            shutil.rmtree(run_dir)
            os.sync()  # the run's files reach the disk now, not during the next run
            LOADS.append(os.getloadavg()[0])
            line = (
                f"  round {round_no + 1}/{rounds}  {variant.name:<{width}}  wall {run.wall:7.2f} s"
                f"  cpu {run.cpu:7.2f} s  peak RSS {run.rss_mib:7.1f} MiB"
            )
            if run.server is not None and run.server.requests:
                line += (
                    f"  stand-in {run.server.cpu_per_request * 1e6:5.1f} us/request"
                    f" ({run.server.requests} requests)"
                )
            print(line + ("" if run.ok else f"  NOT COUNTED: {run.problem}"), flush=True)
    return comparison


# -- tables ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Summary:
    """Medians of one variant's good runs (peak RSS: the largest)."""

    name: str
    runs: int
    failed: int
    wall: float
    cpu: float
    rss_mib: float
    server_us: float  # stand-in CPU per request, microseconds (nan without a stand-in)
    requests: float  # requests per run (median)


def summarise(comparison: Comparison) -> dict[str, Summary]:
    result: dict[str, Summary] = {}
    for variant in comparison.variants:
        runs = comparison.runs[variant.name]
        good = [r for r in runs if r.ok]
        if not good:
            continue
        costs = [r.server for r in good if r.server is not None and r.server.requests]
        result[variant.name] = Summary(
            name=variant.name,
            runs=len(good),
            failed=len(runs) - len(good),
            wall=statistics.median(r.wall for r in good),
            cpu=statistics.median(r.cpu for r in good),
            rss_mib=max(r.rss_mib for r in good),
            server_us=statistics.median(c.cpu_per_request * 1e6 for c in costs)
            if costs
            else float("nan"),
            requests=statistics.median(c.requests for c in costs) if costs else float("nan"),
        )
    return result


def print_table(summaries: dict[str, Summary], base: str, *, count: int, unit: str) -> None:
    """A Markdown table of medians, with ratios to the ``base`` program's wall and CPU.

    ``count`` items (pets, rows) make the per-item column; the stand-in's columns appear when
    the programs ran on it.
    """
    floor = summaries.get(base)
    on_standin = any(not math.isnan(s.server_us) for s in summaries.values())
    columns = ["program", "wall s", f"x {base}", "CPU s", f"CPU x {base}", "peak RSS MiB"]
    columns.append(f"wall us per {unit}")
    if on_standin:
        columns += ["stand-in CPU us/request", "stand-in share"]
    print()
    print("| " + " | ".join(columns) + " |")
    print("|---" + "|---:" * (len(columns) - 1) + "|")
    for s in summaries.values():
        cells = [
            s.name + (f" ({s.failed} run(s) not counted)" if s.failed else ""),
            f"{s.wall:.2f}",
            f"{s.wall / floor.wall:.2f}" if floor else "-",
            f"{s.cpu:.2f}",
            f"{s.cpu / floor.cpu:.2f}" if floor else "-",
            f"{s.rss_mib:.0f}",
            f"{s.wall / count * 1e6:.1f}",
        ]
        if on_standin:
            if math.isnan(s.server_us):
                cells += ["-", "-"]
            else:
                cells += [f"{s.server_us:.1f}", f"{s.server_us / 1e6 / (s.wall / s.requests):.1%}"]
        print("| " + " | ".join(cells) + " |")
    rounds = max((s.runs + s.failed for s in summaries.values()), default=0)
    note = f"\nMedians of {rounds} round(s); peak RSS is the largest of the rounds."
    if on_standin:
        note += (
            " Stand-in share: the stand-in's CPU per request over the program's wall time per "
            "request."
        )
    print(note)
    sys.stdout.flush()


def standin_condition(summaries: dict[str, Summary], base: str) -> None:
    """Print the stand-in's cost per page beside the base program's time per page."""
    floor = summaries.get(base)
    if floor is None or math.isnan(floor.server_us) or not floor.requests:
        print("stand-in condition: not checked (the base program did not run on the stand-in)")
        return
    per_page = floor.wall / floor.requests
    share = floor.server_us / 1e6 / per_page
    verdict = "holds" if share <= 0.10 else "DOES NOT HOLD: the server may set the pace"
    worst = max(s.server_us for s in summaries.values() if not math.isnan(s.server_us))
    print(
        f"stand-in cost: {floor.server_us:.1f} us CPU per request during the {base} "
        f"(at most {worst:.1f} us in any program's median) against the {base}'s "
        f"{per_page * 1e6:.0f} us wall per request: {share:.1%} (condition <= 10%: {verdict})"
    )
