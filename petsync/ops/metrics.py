"""The metrics file: Prometheus text format for node_exporter's textfile collector.

After each run of a job (``--metrics-file PATH``, name it ``*.prom`` in the collector's
directory) :func:`record_run` writes::

    # HELP petsync_last_run_timestamp_seconds When the last run of the job ended (Unix time).
    # TYPE petsync_last_run_timestamp_seconds gauge
    petsync_last_run_timestamp_seconds{petsync_job="nightly-export"} 1.795833e+09
    ...

The text is rendered by prometheus_client (a custom collector of gauge families, one
registry per write), so its escaping and number format are the reference client's.

The label is ``petsync_job``, not ``job``: Prometheus sets ``job`` on every scraped sample
itself (the scrape job, node_exporter's) and, under its default ``honor_labels: false``,
renames a ``job`` label found in the file to ``exported_job``, so an alert written with
``job="..."`` would never match.

The file is written to a temporary file in the same directory and renamed over the old one
(:func:`petsync.core.files.atomic_write_text`), so the collector never reads half a file.
Two timestamps survive a later run that does not earn them (read back from the old file):

- ``petsync_last_completed_timestamp_seconds``: the last run that did its work, exit 0 or 4
  (an import that rejected some rows, an export flagged incomplete). An alert on
  ``time() - petsync_last_completed_timestamp_seconds > 26 * 3600`` fires when the job itself
  is broken or did not run: a missed night, a failure, a refused key, a stuck lock.
- ``petsync_last_success_timestamp_seconds``: the last run that exited 0, with nothing to
  look at. Rows to fix show as ``petsync_exit_code == 4`` and the counts.

Samples of other jobs found in the old file are kept, so several jobs may share one file
(one file per job is still simpler: the collector reads every ``*.prom``). Samples an older
petsync wrote with a ``job`` label are read as ``petsync_job``, so an upgrade keeps the times.
"""

from __future__ import annotations

import contextlib
import logging
import re
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from petsync.core.errors import ConfigError, ExitCode, PetsyncError
from petsync.core.files import atomic_write_text, check_writable_file
from petsync.core.interface import METRICS_FILE_LIMIT
from petsync.core.reading import read_regular
from petsync.core.settings_table import METRICS_FILE

logger = logging.getLogger(__name__)

# (name, help) in the order they are written; all gauges labelled petsync_job="<name>".
RUN_METRICS: tuple[tuple[str, str], ...] = (
    ("petsync_last_run_timestamp_seconds", "When the last run of the job ended (Unix time)."),
    (
        "petsync_last_completed_timestamp_seconds",
        "When the last run that did its work (exit 0, or 4: rows rejected, result flagged) "
        "ended (Unix time); kept when a later run fails.",
    ),
    (
        "petsync_last_success_timestamp_seconds",
        "When the last run that exited 0 ended (Unix time); kept when a later run does not.",
    ),
    ("petsync_run_duration_seconds", "How long the last run took."),
    (
        "petsync_exit_code",
        "Exit code of the last run (0 ok, 1 failure, 2 config, 3 key, 4 incomplete, "
        "75 skipped: locked, 130/143 stopped by a signal).",
    ),
    ("petsync_complete", "1 when the last run's result is whole, 0 otherwise."),
)
# The counts a job's report gives (``metric_counts()``), keyed without the ``petsync_`` prefix.
COUNT_METRICS: tuple[tuple[str, str], ...] = (
    ("petsync_pets_exported", "Pets written to the snapshot by the last export."),
    ("petsync_rows_created", "Spreadsheet rows the last import created."),
    ("petsync_rows_rejected", "Spreadsheet rows the last import rejected (locally or by the API)."),
    ("petsync_rows_uncertain", "Spreadsheet rows whose creation the last import cannot confirm."),
)
METRICS: tuple[tuple[str, str], ...] = RUN_METRICS + COUNT_METRICS
PREFIX = "petsync_"
LABEL = "petsync_job"  # not "job": Prometheus renames that one to exported_job when scraping
LEGACY_LABEL = "job"  # what older files hold; read, never written
COMPLETED_EXIT_CODES = frozenset({ExitCode.OK, ExitCode.INCOMPLETE})
COUNT_NAMES: tuple[str, ...] = tuple(name.removeprefix(PREFIX) for name, _ in COUNT_METRICS)
_NAMES = frozenset(name for name, _ in METRICS)
_SAMPLE = re.compile(
    rf'^(petsync_[a-z_]+)\{{(?:{LABEL}|{LEGACY_LABEL})="((?:[^"\\]|\\.)*)"\}}\s+(\S+)\s*$'
)
FILE_MODE = 0o644  # node_exporter usually runs as another user and must read the file


@dataclass(frozen=True)
class RunMetrics:
    """What one run of a job reports to monitoring.

    ``counts`` are the report's :meth:`metric_counts` (``{"pets_exported": 250}``), empty
    when the run ended before it had a report; a count not given is not written.

    >>> RunMetrics("nightly", 1.0, 2.0, exit_code=4, complete=False,
    ...            counts={"rows_created": 3}).succeeded
    False
    """

    job: str
    finished_at: float
    duration_seconds: float
    exit_code: int
    complete: bool
    counts: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown = sorted(set(self.counts) - set(COUNT_NAMES))
        if unknown:
            raise ValueError(f"unknown metric counts {unknown}; known: {', '.join(COUNT_NAMES)}")

    @property
    def succeeded(self) -> bool:
        """Exit 0: the run did its work and left nothing to look at."""
        return self.exit_code == 0

    @property
    def completed(self) -> bool:
        """Exit 0 or 4: the run did its work (rows may be rejected, a result flagged)."""
        return self.exit_code in COMPLETED_EXIT_CODES


class MeasuredReport(Protocol):
    """A job's report as metrics see it: its counts by metric name without ``petsync_``."""

    def metric_counts(self) -> Mapping[str, int]: ...


class RunRecord:
    """Handed to the block of :func:`record_run`; the command gives it the report it got."""

    def __init__(self) -> None:
        self.counts: Mapping[str, int] = {}
        self.complete: bool | None = None

    def report(self, report: MeasuredReport, *, complete: bool | None = None) -> None:
        """Take the run's counts from ``report``; ``complete`` None means "exited 0"."""
        self.counts = dict(report.metric_counts())
        self.complete = complete


def exit_code_of(exc: BaseException | None) -> int:
    """The exit code a run ends with: 0, a petsync error's own code, else 1."""
    if exc is None:
        return int(ExitCode.OK)
    if isinstance(exc, PetsyncError):
        return int(exc.exit_code)
    if isinstance(exc, SystemExit):
        return exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    return int(ExitCode.FAILURE)


@contextlib.contextmanager
def record_run(
    path: Path | None,
    job: str,
    *,
    on_write_error: Callable[[PetsyncError], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
    wall_clock: Callable[[], float] = time.time,
) -> Iterator[RunRecord]:
    """Time the block and write the metrics file at ``path`` however the block ends.

    Nothing is recorded when ``path`` is None. The path is checked before the block runs
    (fail before the run, not after it). The exit code is taken from the exception that
    ends the block, if any; the file is written even then. When writing fails after a
    failed run, ``on_write_error`` gets the error (by default it is logged) and the run's
    own error goes on; after a successful run the write error is raised::

        with record_run(Path("export.prom"), "nightly-export") as run:
            report = run_export(config)
            run.report(report, complete=report.complete)
            report.raise_for_outcome()
    """
    record = RunRecord()
    if path is None:
        yield record
        return
    check_metrics_path(path)
    started = clock()
    ended_by: BaseException | None = None
    try:
        yield record
    except BaseException as exc:
        ended_by = exc
        raise
    finally:
        exit_code = exit_code_of(ended_by)
        run = RunMetrics(
            job=job,
            finished_at=wall_clock(),
            duration_seconds=round(clock() - started, 3),
            exit_code=exit_code,
            complete=record.complete if record.complete is not None else exit_code == 0,
            counts=record.counts,
        )
        try:
            write_metrics(path, run)
        except PetsyncError as exc:
            if ended_by is None:
                raise
            # The run's own error is the one to exit with; this one is only reported.
            (on_write_error or _log_write_error)(exc)


def _log_write_error(exc: PetsyncError) -> None:
    logger.error("metrics.unwritable", extra={"fields": {"error": exc.words}})


def check_metrics_path(path: Path) -> None:
    """Fail before the run, not after it, when the metrics file cannot be written there."""
    if not path.parent.is_dir():
        raise ConfigError(
            f"metrics file {path}: directory {path.parent} does not exist; create it or point "
            + METRICS_FILE
            + " at node_exporter's textfile directory"
        )
    if path.is_dir():
        raise ConfigError(f"metrics file {path} is a directory; name a file like petsync.prom")
    check_writable_file(path, "metrics file")  # a read-only file system fails here, not after


def read_metrics(path: Path) -> dict[tuple[str, str], float]:
    """The petsync samples of an existing metrics file, by (metric, job); {} when absent."""
    try:
        data = read_regular(path, "metrics file", limit=METRICS_FILE_LIMIT, error=ConfigError)
    except ConfigError as exc:  # a FIFO or device at the name, or too big: raised
        if isinstance(exc.__cause__, FileNotFoundError):
            return {}
        if not isinstance(exc.__cause__, OSError):
            raise
        logger.warning(
            "metrics.unreadable", extra={"fields": {"path": str(path), "error": str(exc)}}
        )
        return {}
    text = data.decode("utf-8", errors="replace")
    samples: dict[tuple[str, str], float] = {}
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if match is None or match.group(1) not in _NAMES:
            continue
        try:
            value = float(match.group(3))
        except ValueError:
            continue
        samples[(match.group(1), _unescape(match.group(2)))] = value
    return samples


def render_metrics(samples: dict[tuple[str, str], float]) -> str:
    """The text format, written by prometheus_client: each metric's HELP, TYPE and samples
    together (in :data:`METRICS` order), jobs sorted."""
    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client.core import GaugeMetricFamily
    from prometheus_client.registry import Collector

    class Samples(Collector):
        def collect(self) -> Iterator[GaugeMetricFamily]:
            for name, help_text in METRICS:
                jobs = sorted(job for metric, job in samples if metric == name)
                if not jobs:
                    continue
                family = GaugeMetricFamily(name, help_text, labels=[LABEL])
                for job in jobs:
                    family.add_metric([job], samples[(name, job)])
                yield family

    registry = CollectorRegistry(auto_describe=False)
    registry.register(Samples())
    return generate_latest(registry).decode("utf-8")


def write_metrics(path: Path, run: RunMetrics) -> None:
    """Replace this job's samples in the metrics file, atomically (temp file + rename)."""
    check_metrics_path(path)
    previous = read_metrics(path)
    samples = {key: value for key, value in previous.items() if key[1] != run.job}
    job = run.job
    samples[("petsync_last_run_timestamp_seconds", job)] = run.finished_at
    for name, earned in (
        ("petsync_last_completed_timestamp_seconds", run.completed),
        ("petsync_last_success_timestamp_seconds", run.succeeded),
    ):
        if earned:
            samples[(name, job)] = run.finished_at
        elif (name, job) in previous:  # a run that did not earn it keeps the last one's
            samples[(name, job)] = previous[(name, job)]
    samples[("petsync_run_duration_seconds", job)] = run.duration_seconds
    samples[("petsync_exit_code", job)] = run.exit_code
    samples[("petsync_complete", job)] = 1 if run.complete else 0
    for name, count in run.counts.items():
        samples[(PREFIX + name, job)] = count
    try:
        # The temporary name does not end in .prom: the collector skips it while it is written.
        atomic_write_text(path, render_metrics(samples), mode=FILE_MODE)
    except OSError as exc:
        raise ConfigError(f"cannot write metrics file {path}: {exc.strerror}") from exc


def _unescape(value: str) -> str:
    return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), value)
