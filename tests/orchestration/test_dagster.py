"""petsync_definitions() in-process: Dagster's materialize, sensor and schedule contexts,
against the reference server on an ephemeral port, with the repo's own job files."""

from __future__ import annotations

import datetime as dt
import json
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from petsync.client.config import ClientConfig
from petsync.export.config import ExportConfig
from petsync.export.run import run_export
from petsync.orchestration import process
from petsync.orchestration.dagster import PetsyncTarget, petsync_definitions
from petsync.orchestration.dagster_import import _sha256
from petsync.server.faults import Faults
from petsync.server.runner import RunningServer
from tests.cli.test_run import install_jobs

# Dagster's own resolution of a schedule or sensor passes beta parameters internally.
pytestmark = pytest.mark.filterwarnings("ignore::dagster.BetaWarning")

EXPORT_JOB = "jobs/nightly-export.toml"
IMPORT_JOB = "jobs/bulk-import.toml"
SNAPSHOT = dg.AssetKey("nightly_export_snapshot")


def utc_today() -> dt.date:
    # The child `petsync run` names its snapshot by its own clock: the partition must match.
    return dt.datetime.now(dt.UTC).date()


@pytest.fixture
def workdir(isolated: Path) -> Path:
    return isolated


def served(workdir: Path, monkeypatch: pytest.MonkeyPatch, srv: RunningServer) -> dg.Definitions:
    install_jobs(workdir, srv)
    return loaded(monkeypatch, srv)


def loaded(monkeypatch: pytest.MonkeyPatch, srv: RunningServer) -> dg.Definitions:
    """The definitions as Dagster loads them now (the partitions read the stored nights)."""
    monkeypatch.setenv("PETSYNC_PRODUCTION_API_KEY", srv.api_key.reveal())
    return petsync_definitions(
        export_jobs=[EXPORT_JOB], import_jobs=[IMPORT_JOB], start_date="2026-01-01"
    )


def materialize(defs: dg.Definitions, day: dt.date, **kwargs: Any) -> dg.ExecuteInProcessResult:
    assets = list(defs.assets or [])
    return dg.materialize(
        assets,  # type: ignore[arg-type]
        partition_key=day.isoformat(),
        selection=[SNAPSHOT],
        resources={"petsync": PetsyncTarget()},
        **kwargs,
    )


def check_passed(result: dg.ExecuteInProcessResult) -> bool:
    (evaluation,) = result.get_asset_check_evaluations()
    return evaluation.passed


def test_todays_partition_runs_the_export_job_and_records_its_snapshot(
    workdir: Path, monkeypatch: pytest.MonkeyPatch, petstore_server: Callable[..., RunningServer]
) -> None:
    defs = served(workdir, monkeypatch, petstore_server(seed_pets=130))
    today = utc_today()
    result = materialize(defs, today)
    assert result.success
    (event,) = result.get_asset_materialization_events()
    meta = event.materialization.metadata
    folder = Path("snapshots") / "pets" / f"snapshot_date={today}"
    assert meta["snapshot_path"].value == str(folder)
    assert (workdir / folder / "pets.parquet").is_file()
    assert meta["pets"].value == 130
    assert sum(meta["pets_by_status"].value.values()) == 130
    assert meta["fetched"].value is True
    assert meta["api_key_source"].value == "PETSYNC_PRODUCTION_API_KEY"
    assert meta["pages"].value > 0 and meta["duration_seconds"].value > 0
    assert check_passed(result)


def test_an_export_with_unproven_end_fails_the_check_but_keeps_the_snapshot(
    workdir: Path, monkeypatch: pytest.MonkeyPatch, petstore_server: Callable[..., RunningServer]
) -> None:
    # A server with no paging beyond `limit`: a full page's end cannot be proven (exit 4).
    defs = served(workdir, monkeypatch, petstore_server(seed_pets=300, pagination="none"))
    result = materialize(defs, utc_today())
    assert result.success  # the snapshot is written, flagged, as the export command does
    (evaluation,) = result.get_asset_check_evaluations()
    assert not evaluation.passed
    assert evaluation.metadata["complete"].value is False
    assert evaluation.metadata["exit_code"].value == 4
    assert evaluation.metadata["incomplete_reasons"].value  # says why


def test_a_past_partition_is_read_from_its_stored_snapshot_without_a_request(
    workdir: Path, monkeypatch: pytest.MonkeyPatch, petstore_server: Callable[..., RunningServer]
) -> None:
    srv = petstore_server(seed_pets=40)
    past = utc_today() - dt.timedelta(days=3)
    client = ClientConfig(srv.base_url, srv.api_key)
    run_export(ExportConfig(client=client, out_dir=workdir / "snapshots"), today=past)
    defs = served(workdir, monkeypatch, srv)
    srv.stop()  # any request now would fail
    result = materialize(defs, past)
    assert result.success
    (event,) = result.get_asset_materialization_events()
    assert event.materialization.metadata["fetched"].value is False
    assert event.materialization.metadata["pets"].value == 40
    assert check_passed(result)


def stored_night(workdir: Path, srv: RunningServer, day: dt.date) -> None:
    client = ClientConfig(srv.base_url, srv.api_key)
    run_export(ExportConfig(client=client, out_dir=workdir / "snapshots"), today=day)


def first_partition(defs: dg.Definitions) -> str:
    (snapshot,) = [a for a in defs.assets or [] if SNAPSHOT in getattr(a, "keys", ())]
    return snapshot.partitions_def.get_first_partition_key()  # type: ignore[union-attr, no-any-return]


def test_the_partitions_begin_at_the_first_stored_night_or_start_date_the_later(
    workdir: Path, monkeypatch: pytest.MonkeyPatch, petstore_server: Callable[..., RunningServer]
) -> None:
    srv = petstore_server(seed_pets=5)
    install_jobs(workdir, srv)
    today = utc_today()
    assert first_partition(loaded(monkeypatch, srv)) == today.isoformat()  # none stored yet
    stored_night(workdir, srv, dt.date(2026, 3, 2))
    assert first_partition(loaded(monkeypatch, srv)) == "2026-03-02"
    later = petsync_definitions(export_jobs=[EXPORT_JOB], start_date="2026-05-01")
    assert first_partition(later) == "2026-05-01"


def test_a_past_partition_with_no_stored_snapshot_is_skipped_not_failed(
    workdir: Path, monkeypatch: pytest.MonkeyPatch, petstore_server: Callable[..., RunningServer]
) -> None:
    srv = petstore_server(seed_pets=10)
    stored_night(workdir, srv, utc_today() - dt.timedelta(days=3))
    defs = served(workdir, monkeypatch, srv)
    gap = utc_today() - dt.timedelta(days=2)  # a night the job did not run

    result = dg.materialize(
        list(defs.assets or []),  # type: ignore[arg-type]
        partition_key=gap.isoformat(),
        resources={"petsync": PetsyncTarget()},
    )

    assert result.success  # a backfill goes on past it
    assert result.get_asset_materialization_events() == []
    (evaluation,) = result.get_asset_check_evaluations()
    assert not evaluation.passed and evaluation.severity == dg.AssetCheckSeverity.WARN
    assert evaluation.description is not None
    assert f"partition {gap} is not fetchable: no snapshot of {gap} is stored" in (
        evaluation.description
    )
    assert "a past night cannot be fetched again; skipped" in evaluation.description
    (observed,) = [e for e in result.all_events if e.event_type_value == "ASSET_OBSERVATION"]
    metadata = observed.asset_observation_data.asset_observation.metadata  # type: ignore[union-attr]
    assert metadata["fetchable"].value is False
    skipped = [e.step_key for e in result.all_events if e.event_type_value == "STEP_SKIPPED"]
    assert skipped == ["nightly_export_history"]  # nothing to fold in for that night
    assert sorted(p.name for p in (workdir / "snapshots" / "pets").iterdir()) == [
        f"snapshot_date={utc_today() - dt.timedelta(days=3)}"
    ]  # today's catalogue was not written under the old date


def test_a_future_partition_fails(
    workdir: Path, monkeypatch: pytest.MonkeyPatch, petstore_server: Callable[..., RunningServer]
) -> None:
    defs = served(workdir, monkeypatch, petstore_server(seed_pets=10))
    with pytest.raises(dg.DagsterUnknownPartitionError):  # the partitions end with today
        materialize(defs, utc_today() + dt.timedelta(days=1))
    assert not (workdir / "snapshots" / "pets").exists()


def test_a_missing_key_fails_before_the_child_starts_with_petsyncs_message(
    workdir: Path, monkeypatch: pytest.MonkeyPatch, petstore_server: Callable[..., RunningServer]
) -> None:
    defs = served(workdir, monkeypatch, petstore_server(seed_pets=10))
    monkeypatch.delenv("PETSYNC_PRODUCTION_API_KEY")
    result = materialize(defs, utc_today(), raise_on_error=False)
    assert not result.success
    (failure,) = [e for e in result.all_events if e.is_step_failure]
    assert "no API key" in failure.step_failure_data.error.message  # type: ignore[union-attr]


def test_a_cancelled_run_stops_the_export_as_sigterm_does_and_publishes_nothing(
    workdir: Path, monkeypatch: pytest.MonkeyPatch, petstore_server: Callable[..., RunningServer]
) -> None:
    # Slow pages: the sweep (20 pages) outlasts the first status listing by far.
    srv = petstore_server(seed_pets=2000, faults=Faults(latency_ms=150))
    defs = served(workdir, monkeypatch, srv)
    lines: list[str] = []
    real = process.run_job

    def run_job(command: list[str], **kwargs: Any) -> process.JobProcess:
        forward = kwargs.pop("on_line")

        def on_line(line: str) -> None:
            forward(line)
            lines.append(line)
            if '"export.listing_done"' in line and len(lines) == 1:
                # What Dagster's cancel does to the run worker: a signal to its main thread.
                signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)

        return real(command, on_line=on_line, **kwargs)

    monkeypatch.setattr("petsync.orchestration.dagster.run_job", run_job)
    with pytest.raises((KeyboardInterrupt, dg.DagsterExecutionInterruptedError)):
        materialize(defs, utc_today())
    events = [json.loads(line) for line in lines if line.startswith("{")]
    assert any("SIGTERM" in json.dumps(event) for event in events), lines  # petsync's own stop
    assert not any(event.get("event") == "export.published" for event in events)
    pets = workdir / "snapshots" / "pets"
    assert not pets.exists() or not [p for p in pets.iterdir() if p.name.startswith("snapshot_")]


def test_the_schedule_asks_for_the_night_it_runs_on(
    workdir: Path, monkeypatch: pytest.MonkeyPatch, petstore_server: Callable[..., RunningServer]
) -> None:
    install_jobs(workdir, petstore_server())
    night = dt.datetime(2026, 11, 25, 2, 30, tzinfo=dt.UTC)
    # Loaded that night, before any snapshot: the partitions begin with that night.
    defs = petsync_definitions(
        export_jobs=[EXPORT_JOB], start_date="2026-01-01", clock=lambda: night
    )
    schedule = defs.resolve_schedule_def("nightly_export_schedule")
    assert schedule.cron_schedule == "30 2 * * *"  # cron.example's line
    repository = defs.get_repository_def()
    context = dg.build_schedule_context(scheduled_execution_time=night, repository_def=repository)
    (request,) = schedule.evaluate_tick(context).run_requests or []
    assert request.partition_key == "2026-11-25"


def test_the_sensor_launches_one_import_per_new_file_and_none_for_a_known_one(
    workdir: Path, monkeypatch: pytest.MonkeyPatch, petstore_server: Callable[..., RunningServer]
) -> None:
    srv = petstore_server()
    defs = served(workdir, monkeypatch, srv)
    sensor = defs.resolve_sensor_def("bulk_import_inbox")
    first = sensor.evaluate_tick(dg.build_sensor_context())
    (request,) = first.run_requests or []
    assert request.tags["petsync/file"] == "inbox/new-animals.csv"
    again = sensor.evaluate_tick(dg.build_sensor_context(cursor=first.cursor))
    assert again.run_requests == []  # the same file, the same content: nothing new
    (workdir / "inbox" / "more.csv").write_text("name,categoryId\nKit,4\n,5\n")
    third = sensor.evaluate_tick(dg.build_sensor_context(cursor=first.cursor))
    (new,) = third.run_requests or []
    assert new.tags["petsync/file"] == "inbox/more.csv"

    job = defs.resolve_job_def("bulk_import_import")
    result = job.execute_in_process(
        run_config=new.run_config, resources={"petsync": PetsyncTarget()}
    )
    assert result.success
    assert [pet.name for pet in srv.store.all()] == ["Kit"]  # only the launched file
    (output,) = [e for e in result.all_events if e.event_type_value == "STEP_OUTPUT"]
    meta = output.event_specific_data.metadata  # type: ignore[union-attr]
    assert (meta["created"].value, meta["rejected"].value) == (1, 1)
    assert meta["exit_code"].value == 4  # a row rejected: the staff's reject file, not a failure


def test_the_history_asset_folds_the_stored_snapshots_after_the_snapshot(
    workdir: Path, monkeypatch: pytest.MonkeyPatch, petstore_server: Callable[..., RunningServer]
) -> None:
    srv = petstore_server(seed_pets=60)
    defs = served(workdir, monkeypatch, srv)
    past = utc_today() - dt.timedelta(days=1)
    client = ClientConfig(srv.base_url, srv.api_key)
    run_export(ExportConfig(client=client, out_dir=workdir / "snapshots"), today=past)
    result = dg.materialize(
        list(defs.assets or []),  # type: ignore[arg-type]
        partition_key=utc_today().isoformat(),
        resources={"petsync": PetsyncTarget()},
    )
    assert result.success
    history = next(
        e.materialization.metadata
        for e in result.get_asset_materialization_events()
        if e.asset_key == dg.AssetKey("nightly_export_history")
    )
    nights = [night["date"] for night in history["nights"].value]
    assert nights == [past.isoformat(), utc_today().isoformat()]  # both stored nights, in order
    assert history["current"].value == 60
    assert (workdir / "snapshots" / "history" / "_history.json").is_file()


def test_the_sensor_never_hashes_what_is_no_regular_file() -> None:
    # A FIFO swapped in after the glob would block the sensor; a device is read the same way.
    assert _sha256(Path("/dev/null")) is None
