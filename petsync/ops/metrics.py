"""The metrics file: Prometheus text format for node_exporter's textfile collector.

After each run of a job the command writes (``--metrics-file PATH``, name it ``*.prom`` in the
collector's directory)::

    # HELP petsync_last_run_timestamp_seconds When the last run of the job ended (Unix time).
    # TYPE petsync_last_run_timestamp_seconds gauge
    petsync_last_run_timestamp_seconds{job="nightly-export"} 1795833000.0
    ...

The file is written to a temporary file in the same directory and renamed over the old one,
so the collector never reads half a file. A failed run keeps the previous
``petsync_last_success_timestamp_seconds`` (read back from the old file), so an alert on
``time() - petsync_last_success_timestamp_seconds > 26 * 3600`` fires after a missed night.
Samples of other jobs found in the old file are kept, so several jobs may share one file
(one file per job is still simpler: the collector reads every ``*.prom``).
"""

from __future__ import annotations

import logging
import math
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from petsync.core.errors import ConfigError

logger = logging.getLogger(__name__)

# (name, help) in the order they are written; all gauges labelled job="<name>".
METRICS: tuple[tuple[str, str], ...] = (
    ("petsync_last_run_timestamp_seconds", "When the last run of the job ended (Unix time)."),
    (
        "petsync_last_success_timestamp_seconds",
        "When the last run that exited 0 ended (Unix time); kept when a later run fails.",
    ),
    ("petsync_run_duration_seconds", "How long the last run took."),
    (
        "petsync_exit_code",
        "Exit code of the last run (0 ok, 1 failure, 2 config, 3 key, 4 incomplete).",
    ),
    ("petsync_complete", "1 when the last run's result is whole, 0 otherwise."),
    ("petsync_pets_exported", "Pets written to the snapshot by the last export."),
    ("petsync_rows_created", "Spreadsheet rows the last import created."),
    ("petsync_rows_rejected", "Spreadsheet rows the last import rejected (locally or by the API)."),
    ("petsync_rows_uncertain", "Spreadsheet rows whose creation the last import cannot confirm."),
)
_NAMES = frozenset(name for name, _ in METRICS)
_SAMPLE = re.compile(r'^(petsync_[a-z_]+)\{job="((?:[^"\\]|\\.)*)"\}\s+(\S+)\s*$')


@dataclass(frozen=True)
class RunMetrics:
    """What one run of a job reports to monitoring; counts are None when not known."""

    job: str
    finished_at: float
    duration_seconds: float
    exit_code: int
    complete: bool
    pets_exported: int | None = None
    rows_created: int | None = None
    rows_rejected: int | None = None
    rows_uncertain: int | None = None

    @property
    def succeeded(self) -> bool:
        return self.exit_code == 0


def check_metrics_path(path: Path) -> None:
    """Fail before the run, not after it, when the metrics file cannot be written there."""
    if not path.parent.is_dir():
        raise ConfigError(
            f"metrics file {path}: directory {path.parent} does not exist; create it or point "
            "--metrics-file at node_exporter's textfile directory"
        )
    if path.is_dir():
        raise ConfigError(f"metrics file {path} is a directory; name a file like petsync.prom")


def read_metrics(path: Path) -> dict[tuple[str, str], float]:
    """The petsync samples of an existing metrics file, by (metric, job); {} when absent."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        logger.warning(
            "metrics.unreadable", extra={"fields": {"path": str(path), "error": str(exc)}}
        )
        return {}
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
    """The text format: each metric's HELP, TYPE and samples together, jobs sorted."""
    lines: list[str] = []
    for name, help_text in METRICS:
        jobs = sorted(job for metric, job in samples if metric == name)
        if not jobs:
            continue
        lines.append(f"# HELP {name} {help_text}")
        lines.append(f"# TYPE {name} gauge")
        for job in jobs:
            lines.append(f'{name}{{job="{_escape(job)}"}} {_number(samples[(name, job)])}')
    return "\n".join(lines) + "\n"


def write_metrics(path: Path, run: RunMetrics) -> None:
    """Replace this job's samples in the metrics file, atomically (temp file + rename)."""
    check_metrics_path(path)
    previous = read_metrics(path)
    samples = {key: value for key, value in previous.items() if key[1] != run.job}
    job = run.job
    samples[("petsync_last_run_timestamp_seconds", job)] = run.finished_at
    if run.succeeded:
        samples[("petsync_last_success_timestamp_seconds", job)] = run.finished_at
    elif ("petsync_last_success_timestamp_seconds", job) in previous:
        key = ("petsync_last_success_timestamp_seconds", job)
        samples[key] = previous[key]
    samples[("petsync_run_duration_seconds", job)] = run.duration_seconds
    samples[("petsync_exit_code", job)] = run.exit_code
    samples[("petsync_complete", job)] = 1 if run.complete else 0
    counts = {
        "petsync_pets_exported": run.pets_exported,
        "petsync_rows_created": run.rows_created,
        "petsync_rows_rejected": run.rows_rejected,
        "petsync_rows_uncertain": run.rows_uncertain,
    }
    for name, count in counts.items():
        if count is not None:
            samples[(name, job)] = count
    _write_atomically(path, render_metrics(samples))


def _write_atomically(path: Path, text: str) -> None:
    # The temporary name does not end in .prom, so the collector skips it while it is written.
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        # mkstemp makes 0600; node_exporter usually runs as another user and must read it.
        os.chmod(temp, 0o644)
        os.replace(temp, path)
    except OSError as exc:
        Path(temp).unlink(missing_ok=True)
        raise ConfigError(f"cannot write metrics file {path}: {exc.strerror}") from exc


def _number(value: float) -> str:
    if math.isfinite(value) and float(value).is_integer():
        return str(int(value))
    return repr(float(value))


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _unescape(value: str) -> str:
    return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), value)
