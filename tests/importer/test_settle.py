"""Settling uncertain rows with a baseline (``--baseline``): sound against pets that existed,
or appeared, alike. Without one: test_settle_without_baseline.py."""

from __future__ import annotations

import csv
import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from petsync.client.client import PetstoreClient
from petsync.client.config import ClientConfig
from petsync.core.errors import OutcomeUnknownError
from petsync.core.models import NewPet, Pet, PetStatus
from petsync.importer.config import ImportConfig
from petsync.importer.outcome import ImportReport
from petsync.importer.run import run_import
from petsync.server.runner import RunningServer
from tests.importer.doubles import journal_of

StartServer = Callable[..., RunningServer]


class LosingClient(PetstoreClient):
    """The real client, except for the pets named in ``plan``, taken in order per name:
    ``"lost"`` sends the POST and loses the answer (the pet exists), ``"dropped"`` fails
    before it reaches the server (the pet does not). Both are outcomes petsync cannot know.
    """

    def __init__(self, srv: RunningServer, plan: dict[str, list[str]]) -> None:
        super().__init__(ClientConfig(base_url=srv.base_url, api_key=srv.api_key))
        self.plan = {name: list(steps) for name, steps in plan.items()}

    def create_pet(self, pet: NewPet) -> Pet:
        steps = self.plan.get(pet.name)
        step = steps.pop(0) if steps else "ok"
        if step == "dropped":
            raise OutcomeUnknownError("connection reset while sending", url=self.base_url)
        created = super().create_pet(pet)
        if step == "lost":
            raise OutcomeUnknownError("connection reset before the answer", url=self.base_url)
        return created


def run(
    config: ImportConfig, srv: RunningServer, plan: dict[str, list[str]] | None = None
) -> ImportReport:
    with LosingClient(srv, plan or {}) as client:
        return run_import(config, client)


def names(srv: RunningServer) -> Counter[str]:
    return Counter(p.name for p in srv.store.all())


def uncertain_rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8-sig", newline="") as handle:
        return list(csv.DictReader(handle))


def test_answers_lost_after_storing_are_all_found_created(
    tmp_path: Path, petstore_server: StartServer
) -> None:
    srv = petstore_server()
    srv.faults.fail_after_store_rate = 0.4  # the reference server stores, then answers 500
    path = tmp_path / "pets.csv"
    pets = [f"Pet{i:03}" for i in range(60)]
    path.write_text(
        "name,categoryId,status\n" + "".join(f"{n},{i % 3},sold\n" for i, n in enumerate(pets))
    )
    first = run(ImportConfig(path, concurrency=4, baseline=True), srv)
    assert first.uncertain > 0
    srv.faults.fail_after_store_rate = 0.0

    settled = run(ImportConfig(path, settle=True), srv)
    assert (settled.settled_created, settled.settled_not_created) == (first.uncertain, 0)
    assert (settled.created, settled.uncertain, settled.exit_code) == (0, 0, 0)
    assert names(srv) == Counter(pets)  # nothing sent twice
    with (tmp_path / "pets.accepted.csv").open(encoding="utf-8-sig", newline="") as handle:
        accepted = {r["name"]: int(r["petsync_id"]) for r in csv.DictReader(handle)}
    assert accepted == {p.name: p.id for p in srv.store.all()}


def test_an_older_pet_with_the_same_content_is_no_proof(
    tmp_path: Path, petstore_server: StartServer
) -> None:
    srv = petstore_server()
    srv.store.create(NewPet("Rex", 1, PetStatus.AVAILABLE))  # a real Rex, there before
    path = tmp_path / "pets.csv"
    path.write_text("name,categoryId,status\nRex,1,available\nTom,2,\n")
    first = run(ImportConfig(path, baseline=True), srv, {"Rex": ["dropped"]})
    assert (first.created, first.uncertain) == (1, 1)

    settled = run(ImportConfig(path, settle=True), srv)
    # Content matching alone would have taken the older Rex for this row's pet.
    assert (settled.settled_created, settled.settled_not_created, settled.created) == (0, 1, 1)
    assert names(srv) == Counter({"Rex": 2, "Tom": 1})


def test_rows_of_equal_content_share_what_appeared(
    tmp_path: Path, petstore_server: StartServer
) -> None:
    srv = petstore_server()
    path = tmp_path / "pets.csv"
    path.write_text("name,categoryId,status\nBo,3,sold\nBo,3,sold\nKit,4,sold\n")
    two = ImportConfig(path, concurrency=1, baseline=True, allow_duplicates=True)  # two Bos
    first = run(two, srv, {"Bo": ["lost", "dropped"]})
    assert first.uncertain == 2

    settled = run(ImportConfig(path, settle=True, allow_duplicates=True), srv)
    assert (settled.settled_created, settled.settled_not_created, settled.created) == (1, 1, 1)
    assert names(srv) == Counter({"Bo": 2, "Kit": 1})


def test_more_new_pets_than_uncertain_rows_cannot_be_told_apart(
    tmp_path: Path, petstore_server: StartServer
) -> None:
    srv = petstore_server()
    path = tmp_path / "pets.csv"
    path.write_text("name,categoryId,status\nRex,1,pending\n")
    run(ImportConfig(path, baseline=True), srv, {"Rex": ["lost"]})
    other = srv.store.create(NewPet("Rex", 1, PetStatus.PENDING))  # another writer, meanwhile

    settled = run(ImportConfig(path, settle=True), srv)
    assert (settled.settled_undecided, settled.uncertain, settled.created) == (1, 1, 0)
    (row,) = uncertain_rows(tmp_path / "pets.uncertain.csv")
    ids = sorted(p.id for p in srv.store.all())
    assert row["petsync_candidate_ids"] == " ".join(str(i) for i in ids)
    assert other.id in ids
    assert row["petsync_uncertain_reason"].startswith(
        "settle cannot tell: 2 pets with this content appeared since the import began, for 1 "
        "uncertain rows: someone else added the same pet"
    )
    assert names(srv) == Counter({"Rex": 2})  # nothing sent


def test_a_journal_without_its_baseline_line_settles_as_without_one(
    tmp_path: Path, petstore_server: StartServer
) -> None:
    srv = petstore_server()
    path = tmp_path / "pets.csv"
    path.write_text("name,categoryId\nRex,1\n")
    run(ImportConfig(path, baseline=True), srv, {"Rex": ["dropped"]})
    journal = journal_of(path)
    lines = [line for line in journal.read_text().splitlines() if '"baseline"' not in line]
    journal.write_text("\n".join(lines) + "\n")  # as an older petsync wrote it

    settled = run(ImportConfig(path, settle=True), srv)
    # No Rex exists at all, so none was created: sent once, as without --baseline.
    assert (settled.settled_not_created, settled.created, settled.uncertain) == (1, 1, 0)
    assert names(srv) == Counter({"Rex": 1})


def test_the_baseline_is_recorded_before_the_first_post(
    tmp_path: Path, petstore_server: StartServer
) -> None:
    srv = petstore_server()
    srv.store.create(NewPet("Rex", 1, None))
    path = tmp_path / "pets.csv"
    path.write_text("name,categoryId,status\nRex,1,\nTom,2,sold\n")
    run(ImportConfig(path, baseline=True), srv)
    lines = [json.loads(line) for line in journal_of(path).read_text().splitlines()]
    first_sending = next(i for i, line in enumerate(lines) if line.get("state") == "sending")
    (baseline_at,) = [i for i, line in enumerate(lines) if "baseline" in line]
    assert 0 < baseline_at < first_sending
    assert lines[baseline_at]["baseline"]["matches"] == [["Rex", 1, None, [1]]]
    assert lines[baseline_at]["baseline"]["complete"] is True


def test_a_stop_during_the_baseline_records_nothing_and_sends_nothing(tmp_path: Path) -> None:
    from petsync.core.errors import StoppedError
    from petsync.core.stop import StopRequest
    from tests.importer.doubles import EmptyListing, InstantClient

    stop = StopRequest()

    class StoppedWhileListing(InstantClient):
        def list_pets(self, status: PetStatus | None = None, *, limit: int = 20) -> EmptyListing:
            stop.request("SIGTERM received", signal_number=15)
            listing = EmptyListing()
            listing.complete = None  # cut short: its end never proven
            return listing

    path = tmp_path / "pets.csv"
    path.write_text("name,categoryId\nRex,1\n")
    client = StoppedWhileListing()
    report = run_import(ImportConfig(path, baseline=True), client, stop=stop)
    assert isinstance(report.stop, StoppedError) and report.exit_code == 143
    assert (client.calls, report.pending) == (0, 1)
    text = journal_of(path).read_text()
    assert '"baseline"' not in text and '"row"' not in text  # the next run lists again


def test_an_incomplete_baseline_still_proves_the_ids_it_listed_were_there(
    tmp_path: Path, petstore_server: StartServer
) -> None:
    srv = petstore_server()
    older = srv.store.create(NewPet("Rex", 1, None))
    path = tmp_path / "pets.csv"
    path.write_text("name,categoryId\nRex,1\n")
    run(ImportConfig(path, baseline=True), srv, {"Rex": ["dropped"]})
    journal = journal_of(path)
    lines = [json.loads(line) for line in journal.read_text().splitlines()]
    for line in lines:
        if "baseline" in line:  # as if a later page of that listing had failed
            assert line["baseline"]["matches"] == [["Rex", 1, None, [older.id]]]
            line["baseline"].update(complete=False, reason="listing unfiltered: page 2 failed")
    journal.write_text("".join(json.dumps(line) + "\n" for line in lines))

    settled = run(ImportConfig(path, settle=True), srv)
    # The older Rex was listed before the first POST: it is not this row's, so the row was
    # not created. (An incomplete baseline cannot say more: it decides no row created.)
    assert (settled.settled_not_created, settled.created, settled.uncertain) == (1, 1, 0)
    assert names(srv) == Counter({"Rex": 2})
