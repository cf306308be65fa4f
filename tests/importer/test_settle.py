"""Settling uncertain rows with a baseline (``--baseline``): sound against pets that existed,
or appeared, alike. The cases that differ without one run both ways here; the rest of
settling without one: test_settle_without_baseline.py."""

from __future__ import annotations

import csv
import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from petsync.client.client import PetstoreClient
from petsync.client.config import ClientConfig
from petsync.client.creations import Creation, Creations
from petsync.core.errors import OutcomeUnknownError
from petsync.core.models import NewPet, PetStatus
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

    def creations(self) -> Losing:
        return Losing(super().creations(), self.plan, self.base_url)


class Losing:
    """The real client's POSTs in flight, with the outcomes ``plan`` names lost."""

    def __init__(self, real: Creations, plan: dict[str, list[str]], url: str) -> None:
        self.real, self.plan, self.url = real, plan, url
        self.dropped: list[int] = []
        self.lost: set[int] = set()

    @property
    def in_flight(self) -> int:
        return self.real.in_flight + len(self.dropped)

    def start(self, key: int, pet: NewPet) -> None:
        steps = self.plan.get(pet.name)
        step = steps.pop(0) if steps else "ok"
        if step == "dropped":
            self.dropped.append(key)
            return
        if step == "lost":
            self.lost.add(key)
        self.real.start(key, pet)

    def wait(self, timeout: float) -> list[Creation]:
        reset = "connection reset while sending"
        done = [self.unknown(key, reset) for key in self.dropped]
        self.dropped.clear()
        for ended in self.real.wait(0.0 if done else timeout):
            if ended.key in self.lost and ended.pet is not None:
                ended = self.unknown(ended.key, "connection reset before the answer")
            done.append(ended)
        return done

    def unknown(self, key: int, message: str) -> Creation:
        return Creation(key, None, OutcomeUnknownError(message, url=self.url), False)

    def close(self) -> None:
        self.real.close()

    def __enter__(self) -> Losing:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


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


def candidates(path: Path) -> dict[str, list[int]]:
    """Per uncertain row (by name), the candidate ids the uncertain file lists."""
    return {
        row["name"]: [int(i) for i in row["petsync_candidate_ids"].split()]
        for row in uncertain_rows(path)
    }


def accepted_ids(path: Path) -> dict[str, list[int]]:
    """Per accepted row (by name), the id the accepted file gives it."""
    with path.open(encoding="utf-8-sig", newline="") as handle:
        return {r["name"]: [int(r["petsync_id"])] for r in csv.DictReader(handle)}


# With a baseline, a pet that appeared after it is the row's: found created. Without one,
# nothing proves it was not there before the import: the row stays uncertain, its pet a
# candidate. Either way nothing is sent twice.
@pytest.mark.parametrize(
    ("baseline", "decided", "left_uncertain", "exit_code", "listed_in"),
    [
        (True, "settled_created", False, 0, accepted_ids),
        (False, "settled_undecided", True, 4, candidates),
    ],
    ids=["with-baseline", "without-baseline"],
)
def test_answers_lost_after_storing_are_never_sent_again(
    tmp_path: Path,
    petstore_server: StartServer,
    baseline: bool,
    decided: str,
    left_uncertain: bool,
    exit_code: int,
    listed_in: Callable[[Path], dict[str, list[int]]],
) -> None:
    srv = petstore_server()
    srv.faults.fail_after_store_rate = 0.4  # the reference server stores, then answers 500
    path = tmp_path / "pets.csv"
    pets = [f"Pet{i:03}" for i in range(60)]
    path.write_text(
        "name,categoryId,status\n" + "".join(f"{n},{i % 3},sold\n" for i, n in enumerate(pets))
    )
    first = run(ImportConfig(path, concurrency=4, baseline=baseline), srv)
    assert first.uncertain > 0
    srv.faults.fail_after_store_rate = 0.0

    settled = run(ImportConfig(path, settle=True), srv)
    assert (getattr(settled, decided), settled.settled_not_created) == (first.uncertain, 0)
    uncertain = first.uncertain if left_uncertain else 0
    assert (settled.created, settled.uncertain, settled.exit_code) == (0, uncertain, exit_code)
    assert names(srv) == Counter(pets)  # nothing sent twice
    ids = {p.name: p.id for p in srv.store.all()}
    file = "pets.uncertain.csv" if left_uncertain else "pets.accepted.csv"
    found = listed_in(tmp_path / file)
    assert found == {name: [ids[name]] for name in found}  # each row's own pet
    assert len(found) == (first.uncertain if left_uncertain else len(pets))
    if left_uncertain:  # the report lists them too, for a person
        assert sorted(ids for _, ids in settled.settled_candidates) == sorted(
            (ids[name],) for name in found
        )


@pytest.mark.parametrize("baseline", [True, False], ids=["with-baseline", "without-baseline"])
def test_an_older_pet_with_the_same_content_is_no_proof_of_creation(
    tmp_path: Path, petstore_server: StartServer, baseline: bool
) -> None:
    srv = petstore_server()
    older = srv.store.create(NewPet("Rex", 1, PetStatus.AVAILABLE))  # a real Rex, there before
    path = tmp_path / "pets.csv"
    path.write_text("name,categoryId,status\nRex,1,available\nTom,2,\n")
    first = run(ImportConfig(path, baseline=baseline), srv, {"Rex": ["dropped"]})
    assert (first.created, first.uncertain) == (1, 1)  # Rex never reached the server

    settled = run(ImportConfig(path, settle=True), srv)
    assert settled.settled_created == 0  # content matching alone would take the older Rex
    if baseline:  # the older Rex was listed before the first POST: the row made none
        assert (settled.settled_not_created, settled.created, settled.uncertain) == (1, 1, 0)
        assert names(srv) == Counter({"Rex": 2, "Tom": 1})
        return
    # The row was not created, but nothing can prove the older Rex is not its pet.
    assert (settled.settled_undecided, settled.created, settled.uncertain) == (1, 0, 1)
    assert candidates(tmp_path / "pets.uncertain.csv") == {"Rex": [older.id]}
    (row,) = uncertain_rows(tmp_path / "pets.uncertain.csv")
    assert row["petsync_uncertain_reason"] == (
        "settle cannot tell: 1 pet(s) with this content exist that this import did not record "
        "creating, and it has no record of which existed before its first POST (it ran without "
        "a baseline); check the candidate ids by hand"
    )
    assert names(srv) == Counter({"Rex": 1, "Tom": 1})  # nothing sent


@pytest.mark.parametrize(
    ("baseline", "settled_as"),
    [(True, (1, 1, 0, 1, 0)), (False, (0, 0, 2, 0, 2))],
    ids=["with-baseline", "without-baseline"],
)
def test_rows_of_equal_content_share_what_appeared(
    tmp_path: Path,
    petstore_server: StartServer,
    baseline: bool,
    settled_as: tuple[int, int, int, int, int],
) -> None:
    srv = petstore_server()
    path = tmp_path / "pets.csv"
    path.write_text("name,categoryId,status\nBo,3,sold\nBo,3,sold\nKit,4,sold\n")
    two = ImportConfig(path, concurrency=1, baseline=baseline, allow_duplicates=True)  # two Bos
    first = run(two, srv, {"Bo": ["lost", "dropped"]})
    assert first.uncertain == 2

    settle = ImportConfig(path, settle=True, allow_duplicates=True)
    settled = run(settle, srv)
    # One Bo exists. With a baseline it appeared since: one row's, and the other is sent.
    # Without, it may be either row's, or older: sending either row could make a second.
    assert (
        settled.settled_created,
        settled.settled_not_created,
        settled.settled_undecided,
        settled.created,
        settled.uncertain,
    ) == settled_as
    bos = [p.id for p in srv.store.all() if p.name == "Bo"]
    assert names(srv) == Counter({"Bo": 2 if baseline else 1, "Kit": 1})
    if not baseline:
        assert settled.settled_candidates == [((2, 3), tuple(bos))]
        assert [
            r["petsync_candidate_ids"] for r in uncertain_rows(tmp_path / "pets.uncertain.csv")
        ] == [str(bos[0])] * 2
        again = run(settle, srv)  # settling again changes nothing
        assert (again.settled_undecided, again.created, names(srv)["Bo"]) == (2, 0, 1)


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
