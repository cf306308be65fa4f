"""Settling without a baseline (the default): a row is sent again only when no pet of its
content exists but this import's; wherever one may be its pet, it stays uncertain with the
candidate ids. Never a row twice."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from petsync.cli.render import import_summary
from petsync.core.models import NewPet, PetStatus
from petsync.importer.config import ImportConfig
from petsync.importer.run import run_import
from tests.importer.doubles import journal_of
from tests.importer.test_settle import LosingClient, StartServer, names, run, uncertain_rows


def candidates(path: Path) -> dict[str, list[int]]:
    """Per uncertain row (by name), the candidate ids the uncertain file lists."""
    return {
        row["name"]: [int(i) for i in row["petsync_candidate_ids"].split()]
        for row in uncertain_rows(path)
    }


def test_the_import_lists_nothing_before_its_first_post_by_default(
    tmp_path: Path, petstore_server: StartServer
) -> None:
    srv = petstore_server(seed_pets=250)
    path = tmp_path / "pets.csv"
    path.write_text("name,categoryId,status\nRex,1,sold\nTom,2,\n")
    with LosingClient(srv, {}) as client:
        report = run_import(ImportConfig(path), client)
        assert client.requests == 2  # the two POSTs: no listing before them
    assert report.created == 2
    assert '"baseline"' not in journal_of(path).read_text()


def test_answers_lost_after_storing_are_never_sent_again(
    tmp_path: Path, petstore_server: StartServer
) -> None:
    srv = petstore_server()
    srv.faults.fail_after_store_rate = 0.4  # the reference server stores, then answers 500
    path = tmp_path / "pets.csv"
    pets = [f"Pet{i:03}" for i in range(60)]
    path.write_text(
        "name,categoryId,status\n" + "".join(f"{n},{i % 3},sold\n" for i, n in enumerate(pets))
    )
    first = run(ImportConfig(path, concurrency=4), srv)
    assert first.uncertain > 0
    srv.faults.fail_after_store_rate = 0.0

    settled = run(ImportConfig(path, settle=True), srv)
    # Each of those pets exists, and nothing proves it was not there before the import.
    assert (settled.settled_undecided, settled.settled_not_created) == (first.uncertain, 0)
    assert (settled.created, settled.uncertain, settled.exit_code) == (0, first.uncertain, 4)
    assert names(srv) == Counter(pets)  # nothing sent twice
    ids = {p.name: p.id for p in srv.store.all()}
    found = candidates(tmp_path / "pets.uncertain.csv")
    assert found == {name: [ids[name]] for name in found}  # each row's own pet, for a person
    assert sorted(ids for _, ids in settled.settled_candidates) == sorted(
        (ids[name],) for name in found
    )


def test_a_pet_that_existed_before_keeps_the_row_uncertain(
    tmp_path: Path, petstore_server: StartServer
) -> None:
    srv = petstore_server()
    older = srv.store.create(NewPet("Rex", 1, PetStatus.AVAILABLE))  # a real Rex, there before
    path = tmp_path / "pets.csv"
    path.write_text("name,categoryId,status\nRex,1,available\nTom,2,\n")
    first = run(ImportConfig(path), srv, {"Rex": ["dropped"]})  # Rex never reached the server
    assert (first.created, first.uncertain) == (1, 1)

    settled = run(ImportConfig(path, settle=True), srv)
    # The row was not created, but nothing can prove the older Rex is not its pet.
    assert (settled.settled_undecided, settled.created, settled.uncertain) == (1, 0, 1)
    assert candidates(tmp_path / "pets.uncertain.csv") == {"Rex": [older.id]}
    (row,) = uncertain_rows(tmp_path / "pets.uncertain.csv")
    assert row["petsync_uncertain_reason"] == (
        "settle cannot tell: 1 pet(s) with this content exist that this import did not record "
        "creating, and it has no record of which existed before its first POST (it ran without "
        "--baseline); check the candidate ids by hand"
    )
    assert names(srv) == Counter({"Rex": 1, "Tom": 1})  # nothing sent


def test_a_row_with_no_matching_pet_is_sent_once(
    tmp_path: Path, petstore_server: StartServer
) -> None:
    srv = petstore_server()
    srv.store.create(NewPet("Rex", 1, PetStatus.SOLD))  # other content: another status
    srv.store.create(NewPet("Rex", 2, None))  # another category
    path = tmp_path / "pets.csv"
    path.write_text("name,categoryId,status\nRex,1,available\n")
    run(ImportConfig(path), srv, {"Rex": ["dropped"]})

    settled = run(ImportConfig(path, settle=True), srv)
    assert (settled.settled_not_created, settled.created, settled.exit_code) == (1, 1, 0)
    assert names(srv) == Counter({"Rex": 3})


def test_pets_this_import_created_are_no_candidates(
    tmp_path: Path, petstore_server: StartServer
) -> None:
    srv = petstore_server()
    path = tmp_path / "pets.csv"
    path.write_text("name,categoryId,status\nBo,3,sold\nBo,3,sold\n")
    first = run(
        ImportConfig(path, allow_duplicates=True, concurrency=1), srv, {"Bo": ["ok", "dropped"]}
    )
    assert (first.created, first.uncertain) == (1, 1)

    settled = run(ImportConfig(path, allow_duplicates=True, settle=True), srv)
    # The one Bo that exists is row 2's (the journal has its id): row 3 made none.
    assert (settled.settled_not_created, settled.created, settled.uncertain) == (1, 1, 0)
    assert names(srv) == Counter({"Bo": 2})


def test_two_rows_of_equal_content_one_stored_both_stay_uncertain(
    tmp_path: Path, petstore_server: StartServer
) -> None:
    srv = petstore_server()
    path = tmp_path / "pets.csv"
    path.write_text("name,categoryId,status\nBo,3,sold\nBo,3,sold\nKit,4,sold\n")
    first = run(
        ImportConfig(path, allow_duplicates=True, concurrency=1), srv, {"Bo": ["lost", "dropped"]}
    )
    assert first.uncertain == 2

    settled = run(ImportConfig(path, allow_duplicates=True, settle=True), srv)
    # One Bo exists: either row's, or older. Sending either row could make a second.
    assert (settled.settled_undecided, settled.created, settled.uncertain) == (2, 0, 2)
    (bo,) = [p.id for p in srv.store.all() if p.name == "Bo"]
    assert settled.settled_candidates == [((2, 3), (bo,))]
    assert [
        r["petsync_candidate_ids"] for r in uncertain_rows(tmp_path / "pets.uncertain.csv")
    ] == [
        str(bo),
        str(bo),
    ]
    assert names(srv) == Counter({"Bo": 1, "Kit": 1})

    again = run(
        ImportConfig(path, allow_duplicates=True, settle=True), srv
    )  # settling again changes nothing
    assert (again.settled_undecided, again.created, names(srv)["Bo"]) == (2, 0, 1)


def test_two_rows_of_equal_content_neither_stored_are_both_sent(
    tmp_path: Path, petstore_server: StartServer
) -> None:
    srv = petstore_server()
    path = tmp_path / "pets.csv"
    path.write_text("name,categoryId,status\nBo,3,\nBo,3,\n")
    run(
        ImportConfig(path, allow_duplicates=True, concurrency=1),
        srv,
        {"Bo": ["dropped", "dropped"]},
    )

    settled = run(ImportConfig(path, allow_duplicates=True, settle=True), srv)
    assert (settled.settled_not_created, settled.created, settled.exit_code) == (2, 2, 0)
    assert names(srv) == Counter({"Bo": 2})


def test_a_row_without_status_sees_pets_of_every_status(
    tmp_path: Path, petstore_server: StartServer
) -> None:
    srv = petstore_server()
    sold = srv.store.create(NewPet("Rex", 1, PetStatus.SOLD))
    path = tmp_path / "pets.csv"
    path.write_text("name,categoryId\nRex,1\n")
    run(ImportConfig(path), srv, {"Rex": ["dropped"]})

    settled = run(ImportConfig(path, settle=True), srv)
    # The interface does not say what status a pet created without one gets: it may be sold.
    assert (settled.settled_undecided, settled.created) == (1, 0)
    assert candidates(tmp_path / "pets.uncertain.csv") == {"Rex": [sold.id]}


def test_the_summary_and_the_report_list_the_candidate_ids(
    tmp_path: Path, petstore_server: StartServer
) -> None:
    srv = petstore_server()
    older = [srv.store.create(NewPet("Rex", 1, PetStatus.SOLD)).id for _ in range(12)]
    path = tmp_path / "pets.csv"
    path.write_text("name,categoryId,status\nRex,1,sold\n")
    run(ImportConfig(path), srv, {"Rex": ["dropped"]})

    settled = run(ImportConfig(path, settle=True), srv)
    lines = import_summary(settled)
    at = lines.index(
        "settled 1 uncertain: 0 found created, 0 not created (sent now), 1 still uncertain"
    )
    shown = ", ".join(str(i) for i in older[:10])
    assert lines[at + 1] == f"  row 2: candidate pet ids {shown} and 2 more"
    assert lines[-1] == (
        f"uncertain: {tmp_path / 'pets.uncertain.csv'}  (settle cannot tell: check the pets of "
        "petsync_candidate_ids by hand)"
    )
    assert settled.to_json()["settled"]["undecided_rows"] == [{"rows": [2], "candidate_ids": older}]
    json.dumps(settled.to_json())  # the --report file can hold it


def test_a_pet_another_journal_got_in_a_201_is_no_candidate(
    tmp_path: Path, petstore_server: StartServer
) -> None:
    srv = petstore_server()
    earlier = tmp_path / "monday.csv"
    earlier.write_text("name,categoryId,status\nRex,1,sold\n")
    assert run(ImportConfig(earlier), srv).created == 1  # Monday's Rex, answered 201
    path = tmp_path / "pets.csv"
    path.write_text("name,categoryId,status\nRex,1,sold\nTom,2,\n")
    run(ImportConfig(path), srv, {"Rex": ["dropped"]})

    settled = run(ImportConfig(path, settle=True), srv)
    # Monday's journal holds that Rex's id as the answer to its own POST: not this row's.
    assert (settled.settled_not_created, settled.created, settled.uncertain) == (1, 1, 0)
    assert names(srv) == Counter({"Rex": 2, "Tom": 1})


def test_an_id_another_settle_assigned_still_counts_as_a_candidate(
    tmp_path: Path, petstore_server: StartServer
) -> None:
    from petsync.importer.other_journals import SETTLED_CREATED

    srv = petstore_server()
    earlier = tmp_path / "monday.csv"
    earlier.write_text("name,categoryId,status\nRex,1,sold\n")
    run(ImportConfig(earlier), srv)
    monday = journal_of(earlier)
    lines = [json.loads(line) for line in monday.read_text().splitlines()]
    for line in lines:
        if line.get("state") == "created":  # as a settle with a baseline writes it
            line["message"] = SETTLED_CREATED
    monday.write_text("".join(json.dumps(line) + "\n" for line in lines))
    path = tmp_path / "pets.csv"
    path.write_text("name,categoryId,status\nRex,1,sold\nTom,2,\n")  # other bytes: a new import
    run(ImportConfig(path), srv, {"Rex": ["dropped"]})

    settled = run(ImportConfig(path, settle=True), srv)
    # A settle's conclusion is no answer from the API: the row stays for a person.
    assert (settled.settled_undecided, settled.created, settled.uncertain) == (1, 0, 1)
    assert names(srv) == Counter({"Rex": 1, "Tom": 1})


def test_a_baseline_asked_for_after_the_first_post_is_not_taken(
    tmp_path: Path, petstore_server: StartServer
) -> None:
    srv = petstore_server()
    path = tmp_path / "pets.csv"
    path.write_text("name,categoryId\nRex,1\n")
    run(ImportConfig(path), srv, {"Rex": ["lost"]})
    srv.store.create(NewPet("Tom", 2, None))  # listed now, but after the import began

    settled = run(ImportConfig(path, settle=True, baseline=True), srv)
    # A listing now is no baseline: the Rex it would show may be this row's.
    assert '"baseline"' not in journal_of(path).read_text()
    assert settled.notices == [
        "--baseline applies from a file's first POST; pets.csv was started without one, so "
        "--settle decides its rows without a baseline"
    ]
    assert (settled.settled_undecided, settled.created, names(srv)["Rex"]) == (1, 0, 1)
