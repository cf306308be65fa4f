"""The metrics file: valid Prometheus text format, written atomically, last success kept."""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from petsync.core.errors import (
    AuthenticationError,
    ConfigError,
    IncompleteError,
    LockedError,
    PetsyncError,
)
from petsync.core.wording import COMMAND_LINE
from petsync.ops.metrics import RunMetrics, RunRecord, record_run, write_metrics


def parse(path: Path) -> dict[tuple[str, str], float]:
    samples: dict[tuple[str, str], float] = {}
    for family in text_string_to_metric_families(path.read_text()):
        assert family.type == "gauge"
        assert family.documentation
        for sample in family.samples:
            assert set(sample.labels) == {"petsync_job"}  # no `job`: a scrape would rename it
            samples[(sample.name, sample.labels["petsync_job"])] = sample.value
    return samples


def export_run(
    *,
    finished_at: float = 1_800_000_000.5,
    exit_code: int = 0,
    complete: bool = True,
    pets_exported: int | None = 250,
) -> RunMetrics:
    return RunMetrics(
        job="nightly-export",
        finished_at=finished_at,
        duration_seconds=12.25,
        exit_code=exit_code,
        complete=complete,
        counts={} if pets_exported is None else {"pets_exported": pets_exported},
    )


def test_export_run_is_parsed_by_the_prometheus_parser(tmp_path: Path) -> None:
    path = tmp_path / "petsync.prom"
    write_metrics(path, export_run())
    assert parse(path) == {
        ("petsync_last_run_timestamp_seconds", "nightly-export"): 1_800_000_000.5,
        ("petsync_last_completed_timestamp_seconds", "nightly-export"): 1_800_000_000.5,
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
    index = lines.index('petsync_pets_exported{petsync_job="nightly-export"} 250.0')
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
    assert ("petsync_last_completed_timestamp_seconds", "nightly-export") not in parse(path)


def test_a_run_with_rejected_rows_completed_but_did_not_succeed(tmp_path: Path) -> None:
    # Exit 4 is a job that works and has rows to fix: the "job broken" alert must not fire.
    path = tmp_path / "petsync.prom"
    write_metrics(path, export_run(finished_at=1_800_000_000.0))
    write_metrics(
        path,
        RunMetrics(
            job="nightly-export",
            finished_at=1_800_086_400.0,
            duration_seconds=3.0,
            exit_code=4,
            complete=False,
            counts={"rows_created": 97, "rows_rejected": 3, "rows_uncertain": 0},
        ),
    )
    samples = parse(path)
    assert (
        samples[("petsync_last_completed_timestamp_seconds", "nightly-export")] == 1_800_086_400.0
    )
    assert samples[("petsync_last_success_timestamp_seconds", "nightly-export")] == 1_800_000_000.0
    assert samples[("petsync_rows_rejected", "nightly-export")] == 3


@pytest.mark.parametrize("code", [1, 2, 3, 75, 143], ids=["1", "2", "3", "75", "143"])
def test_a_run_that_did_not_do_its_work_keeps_the_completed_time(tmp_path: Path, code: int) -> None:
    path = tmp_path / "petsync.prom"
    write_metrics(path, export_run(finished_at=1_800_000_000.0, exit_code=4))
    write_metrics(
        path,
        export_run(finished_at=1_800_086_400.0, exit_code=code, complete=False, pets_exported=None),
    )
    samples = parse(path)
    assert (
        samples[("petsync_last_completed_timestamp_seconds", "nightly-export")] == 1_800_000_000.0
    )
    assert samples[("petsync_exit_code", "nightly-export")] == code


def test_times_written_under_the_old_job_label_survive_an_upgrade(tmp_path: Path) -> None:
    path = tmp_path / "petsync.prom"
    path.write_text(
        "# TYPE petsync_last_success_timestamp_seconds gauge\n"
        'petsync_last_success_timestamp_seconds{job="nightly-export"} 1700000000\n'
        'petsync_last_success_timestamp_seconds{job="other"} 1700000001\n'
    )
    write_metrics(path, export_run(exit_code=1, complete=False, pets_exported=None))
    samples = parse(path)  # every sample now under petsync_job
    assert samples[("petsync_last_success_timestamp_seconds", "nightly-export")] == 1_700_000_000
    assert samples[("petsync_last_success_timestamp_seconds", "other")] == 1_700_000_001


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
            counts={"rows_created": 97, "rows_rejected": 2, "rows_uncertain": 1},
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
        "point path= at node_exporter's textfile directory"
    )
    assert "point --metrics-file at" in err.value.render(COMMAND_LINE)


# -- record_run: the wrapper every job command runs in --


class Counted:
    """A report as metrics see it."""

    def __init__(self, **counts: int) -> None:
        self.counts = counts

    def metric_counts(self) -> dict[str, int]:
        return self.counts


class Ticks:
    """A monotonic clock that moves 2.5 s between readings: the run takes 2.5 s."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        value, self.now = self.now, self.now + 2.5
        return value


def record(
    path: Path | None, on_write_error: Callable[[PetsyncError], None] | None = None
) -> contextlib.AbstractContextManager[RunRecord]:
    return record_run(
        path,
        "nightly-export",
        on_write_error=on_write_error,
        clock=Ticks(),
        wall_clock=lambda: 1_800_000_000.0,
    )


def test_record_run_writes_the_reports_counts_time_and_exit_0(tmp_path: Path) -> None:
    path = tmp_path / "petsync.prom"
    with record(path) as run:
        run.report(Counted(pets_exported=250), complete=True)
    assert parse(path) == {
        ("petsync_last_run_timestamp_seconds", "nightly-export"): 1_800_000_000.0,
        ("petsync_last_completed_timestamp_seconds", "nightly-export"): 1_800_000_000.0,
        ("petsync_last_success_timestamp_seconds", "nightly-export"): 1_800_000_000.0,
        ("petsync_run_duration_seconds", "nightly-export"): 2.5,
        ("petsync_exit_code", "nightly-export"): 0.0,
        ("petsync_complete", "nightly-export"): 1.0,
        ("petsync_pets_exported", "nightly-export"): 250.0,
    }


def test_record_run_takes_the_exit_code_of_the_error_and_raises_it(tmp_path: Path) -> None:
    path = tmp_path / "petsync.prom"
    refused = AuthenticationError("refused", http_status=401, url="http://127.0.0.1:9/v1/pets")
    with pytest.raises(AuthenticationError), record(path):
        raise refused
    samples = parse(path)
    assert samples[("petsync_exit_code", "nightly-export")] == 3
    assert samples[("petsync_complete", "nightly-export")] == 0
    assert ("petsync_pets_exported", "nightly-export") not in samples  # no report, no count


def test_an_incomplete_run_keeps_its_report_counts(tmp_path: Path) -> None:
    path = tmp_path / "petsync.prom"
    with pytest.raises(IncompleteError), record(path) as run:
        run.report(Counted(rows_created=7, rows_rejected=2, rows_uncertain=0))
        raise IncompleteError("pets.csv: 2 rows rejected")
    samples = parse(path)
    assert samples[("petsync_exit_code", "nightly-export")] == 4
    assert samples[("petsync_complete", "nightly-export")] == 0  # not given: exit 0 or not
    assert samples[("petsync_rows_created", "nightly-export")] == 7
    assert samples[("petsync_rows_rejected", "nightly-export")] == 2


def test_complete_given_by_the_job_wins_over_the_exit_code(tmp_path: Path) -> None:
    # An export flagged for a suspicious drop exits 4 with a whole listing.
    path = tmp_path / "petsync.prom"
    with pytest.raises(IncompleteError), record(path) as run:
        run.report(Counted(pets_exported=70), complete=True)
        raise IncompleteError("snapshot was written but is suspicious")
    samples = parse(path)
    assert (
        samples[("petsync_exit_code", "nightly-export")],
        samples[("petsync_complete", "nightly-export")],
    ) == (4, 1)


@pytest.mark.parametrize(
    ("exc", "code"),
    [(KeyboardInterrupt(), 1), (ValueError("bug"), 1), (SystemExit(2), 2), (SystemExit(), 0)],
    ids=["ctrl-c", "foreign-error", "system-exit-2", "system-exit-none"],
)
def test_other_ways_of_ending_map_to_an_exit_code(
    tmp_path: Path, exc: BaseException, code: int
) -> None:
    path = tmp_path / "petsync.prom"
    with pytest.raises(type(exc)), record(path):
        raise exc
    assert parse(path)[("petsync_exit_code", "nightly-export")] == code


def test_no_path_records_nothing(tmp_path: Path) -> None:
    with record(None) as run:
        run.report(Counted(pets_exported=1))
    assert list(tmp_path.iterdir()) == []


def test_a_bad_path_fails_before_the_run(tmp_path: Path) -> None:
    ran: list[bool] = []
    with pytest.raises(ConfigError, match="does not exist"), record(tmp_path / "no" / "x.prom"):
        ran.append(True)
    assert ran == []


def test_write_error_after_a_failed_run_is_reported_and_the_run_error_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "petsync.prom"
    reported: list[PetsyncError] = []

    def no_space(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    with (
        pytest.raises(LockedError, match="another run"),
        record(path, on_write_error=reported.append),
    ):
        monkeypatch.setattr(os, "replace", no_space)
        raise LockedError("another run holds out/.petsync.lock")
    assert [str(e) for e in reported] == [
        f"cannot write metrics file {path}: No space left on device"
    ]


def test_write_error_after_a_successful_run_is_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "petsync.prom"
    reported: list[PetsyncError] = []

    def no_space(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    with (
        pytest.raises(ConfigError, match="No space left"),
        record(path, on_write_error=reported.append),
    ):
        monkeypatch.setattr(os, "replace", no_space)
    assert reported == []


def test_counts_must_name_a_known_metric() -> None:
    with pytest.raises(ValueError, match="unknown metric counts \\['rows_created_total'\\]"):
        RunMetrics("j", 1.0, 1.0, exit_code=0, complete=True, counts={"rows_created_total": 1})
