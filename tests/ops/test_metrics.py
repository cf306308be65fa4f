"""The metrics file: valid Prometheus text format, written atomically, last success kept."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from petsync.core.errors import ConfigError
from petsync.ops.metrics import RunMetrics, write_metrics


def parse(path: Path) -> dict[tuple[str, str], float]:
    samples: dict[tuple[str, str], float] = {}
    for family in text_string_to_metric_families(path.read_text()):
        assert family.type == "gauge"
        assert family.documentation
        for sample in family.samples:
            samples[(sample.name, sample.labels["job"])] = sample.value
    return samples


def export_run(**fields: object) -> RunMetrics:
    values: dict[str, object] = {
        "job": "nightly-export",
        "finished_at": 1_800_000_000.5,
        "duration_seconds": 12.25,
        "exit_code": 0,
        "complete": True,
        "pets_exported": 250,
    }
    values.update(fields)
    return RunMetrics(**values)  # type: ignore[arg-type]


def test_export_run_is_parsed_by_the_prometheus_parser(tmp_path: Path) -> None:
    path = tmp_path / "petsync.prom"
    write_metrics(path, export_run())
    assert parse(path) == {
        ("petsync_last_run_timestamp_seconds", "nightly-export"): 1_800_000_000.5,
        ("petsync_last_success_timestamp_seconds", "nightly-export"): 1_800_000_000.5,
        ("petsync_run_duration_seconds", "nightly-export"): 12.25,
        ("petsync_exit_code", "nightly-export"): 0.0,
        ("petsync_complete", "nightly-export"): 1.0,
        ("petsync_pets_exported", "nightly-export"): 250.0,
    }


def test_help_and_type_lines_precede_each_metric(tmp_path: Path) -> None:
    path = tmp_path / "petsync.prom"
    write_metrics(path, export_run())
    lines = path.read_text().splitlines()
    index = lines.index('petsync_pets_exported{job="nightly-export"} 250')
    assert lines[index - 2] == (
        "# HELP petsync_pets_exported Pets written to the snapshot by the last export."
    )
    assert lines[index - 1] == "# TYPE petsync_pets_exported gauge"


def test_failed_run_keeps_the_previous_success_time(tmp_path: Path) -> None:
    path = tmp_path / "petsync.prom"
    write_metrics(path, export_run(finished_at=1_800_000_000.0))
    write_metrics(
        path,
        export_run(finished_at=1_800_086_400.0, exit_code=3, complete=False, pets_exported=None),
    )
    samples = parse(path)
    assert samples[("petsync_last_run_timestamp_seconds", "nightly-export")] == 1_800_086_400.0
    assert samples[("petsync_last_success_timestamp_seconds", "nightly-export")] == 1_800_000_000.0
    assert samples[("petsync_exit_code", "nightly-export")] == 3
    assert samples[("petsync_complete", "nightly-export")] == 0
    # A count the failed run does not know is dropped, not left stale.
    assert ("petsync_pets_exported", "nightly-export") not in samples


def test_first_run_failing_writes_no_success_time(tmp_path: Path) -> None:
    path = tmp_path / "petsync.prom"
    write_metrics(path, export_run(exit_code=1, complete=False, pets_exported=None))
    assert ("petsync_last_success_timestamp_seconds", "nightly-export") not in parse(path)


def test_import_counts_and_other_jobs_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "petsync.prom"
    write_metrics(path, export_run())
    write_metrics(
        path,
        RunMetrics(
            job='bulk "import"',
            finished_at=1_800_000_100.0,
            duration_seconds=3.0,
            exit_code=4,
            complete=False,
            rows_created=97,
            rows_rejected=2,
            rows_uncertain=1,
        ),
    )
    samples = parse(path)
    assert samples[("petsync_pets_exported", "nightly-export")] == 250
    assert samples[("petsync_rows_created", 'bulk "import"')] == 97
    assert samples[("petsync_rows_rejected", 'bulk "import"')] == 2
    assert samples[("petsync_rows_uncertain", 'bulk "import"')] == 1
    assert samples[("petsync_complete", 'bulk "import"')] == 0


def test_write_is_atomic_rename_in_the_same_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "petsync.prom"
    write_metrics(path, export_run(pets_exported=1))
    old = path.read_text()
    renames: list[tuple[object, object]] = []

    def failing_replace(src: object, dst: object) -> None:
        renames.append((src, dst))
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(ConfigError) as err:
        write_metrics(path, export_run(pets_exported=2))
    assert str(err.value) == f"cannot write metrics file {path}: No space left on device"
    ((src, dst),) = renames
    assert (
        Path(str(src)).parent == tmp_path
        and not str(src).endswith(".prom")
        and str(dst) == str(path)
    )
    assert path.read_text() == old  # the collector still sees the whole previous file
    assert sorted(p.name for p in tmp_path.iterdir()) == ["petsync.prom"]  # temp cleaned


def test_file_is_readable_by_the_collector(tmp_path: Path) -> None:
    path = tmp_path / "petsync.prom"
    write_metrics(path, export_run())
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_missing_directory_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "nope" / "petsync.prom"
    with pytest.raises(ConfigError) as err:
        write_metrics(path, export_run())
    assert str(err.value) == (
        f"metrics file {path}: directory {tmp_path / 'nope'} does not exist; create it or "
        "point --metrics-file at node_exporter's textfile directory"
    )
