"""The S3 run lock on moto's server: conditional creates, expiry by an injected clock, fencing.

Every lock here shares the test's botocore client (no second service model to load) and a
clock the test moves: an expiry of 6 hours is crossed by setting the clock 7 hours later.
"""

from __future__ import annotations

import datetime as dt
import io
import json
from collections.abc import Callable
from typing import Any

import pytest

from petsync.client.config import ClientConfig
from petsync.core.apikey import ApiKey
from petsync.core.errors import ExitCode, LockedError, PetsyncError
from petsync.core.models import Pet, PetStatus
from petsync.export.config import ExportConfig
from petsync.export.run import run_export
from petsync.formats.snapshots import list_snapshots, load_snapshot
from petsync.storage.location import parse_location
from petsync.storage.lock import DEFAULT_LOCK_EXPIRY, Holder, ObjectLock
from petsync.storage.store import object_lock
from tests.conftest import S3Bucket
from tests.export.scripted import BASE, ScriptedClient, ScriptedListing

T0 = dt.datetime(2026, 11, 22, 2, 0, tzinfo=dt.UTC)
LATER = T0 + DEFAULT_LOCK_EXPIRY + dt.timedelta(hours=1)  # past the first lock's expiry


def lock_at(bucket: S3Bucket, moment: dt.datetime, client: Any = None) -> ObjectLock:
    return object_lock(
        parse_location(bucket.uri()), client=client or bucket.client, now=lambda: moment
    )


def holder_of(bucket: S3Bucket) -> Holder:
    body = bucket.client.get_object(Bucket=bucket.name, Key="petsync/.petsync.lock")["Body"]
    return Holder.parse(body.read())


def owner_of(bucket: S3Bucket) -> str:
    body = bucket.client.get_object(Bucket=bucket.name, Key="petsync/.petsync.lock")["Body"]
    return str(json.loads(body.read())["owner"])


def test_an_unexpired_lock_refuses_with_exit_75_naming_the_lock_and_its_expiry(
    s3: S3Bucket,
) -> None:
    first = lock_at(s3, T0)
    first.acquire()
    holder = holder_of(s3)

    with pytest.raises(LockedError) as caught:
        lock_at(s3, T0 + dt.timedelta(hours=5, minutes=59)).acquire()

    assert caught.value.exit_code is ExitCode.LOCKED
    lock = f"{s3.uri()}/.petsync.lock"
    assert str(caught.value) == (
        f"another petsync run is writing to {s3.uri()} (it holds the lock {lock}: host "
        f"{holder.host}, pid {holder.pid}, since 2026-11-22T02:00:00+00:00; it expires at "
        "2026-11-22T08:00:00+00:00). Wait for it to finish and run again; if that run was "
        f"killed, the lock frees itself when it expires, or delete {lock} once you are sure "
        "no run is writing."
    )
    assert owner_of(s3) == first.owner


def test_an_expired_lock_is_taken_over_and_its_old_holder_can_neither_confirm_nor_release_it(
    s3: S3Bucket,
) -> None:
    killed = lock_at(s3, T0)
    killed.acquire()  # its run was killed: it never releases

    taker = lock_at(s3, LATER)
    taker.acquire()

    assert owner_of(s3) == taker.owner
    assert holder_of(s3).expires_at == LATER + DEFAULT_LOCK_EXPIRY
    with pytest.raises(LockedError, match="this run lost the lock"):
        killed.confirm()
    killed.release()
    assert owner_of(s3) == taker.owner  # not deleted by the run that lost it
    taker.confirm()
    taker.release()
    assert s3.object_keys("petsync/.petsync.lock") == []


class Interleaving:
    """A botocore client that lets another run act right after each ``get_object``."""

    def __init__(self, inner: Any, meanwhile: Callable[[], None]) -> None:
        self._inner = inner
        self._meanwhile: Callable[[], None] | None = meanwhile
        self.puts: list[dict[str, Any]] = []

    def get_object(self, **kwargs: Any) -> dict[str, Any]:
        answer: dict[str, Any] = self._inner.get_object(**kwargs)
        answer["Body"] = io.BytesIO(answer["Body"].read())
        if self._meanwhile is not None:
            meanwhile, self._meanwhile = self._meanwhile, None
            meanwhile()  # the other run reads the same expired lock and takes it over first
        return answer

    def put_object(self, **kwargs: Any) -> dict[str, Any]:
        self.puts.append({k: v for k, v in kwargs.items() if k.startswith("If")})
        return dict(self._inner.put_object(**kwargs))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def test_two_runs_taking_over_an_expired_lock_at_once_one_wins_by_if_match(
    s3: S3Bucket,
) -> None:
    lock_at(s3, T0).acquire()  # killed: expired by LATER
    winner = lock_at(s3, LATER)
    racing = Interleaving(s3.client, meanwhile=winner.acquire)
    loser = lock_at(s3, LATER, client=racing)

    with pytest.raises(LockedError) as caught:
        loser.acquire()

    assert owner_of(s3) == winner.owner
    # The loser tried to create it, then to replace the expired lock it had read: the
    # store refused that If-Match (the winner's write changed the ETag), it looked again
    # and found the winner's lock, unexpired.
    assert [sorted(p) for p in racing.puts] == [["IfNoneMatch"], ["IfMatch"]]
    assert "it expires at 2026-11-22T15:00:00+00:00" in str(caught.value)
    winner.release()


class TakenOverDuringFetch(ScriptedClient):
    """While the sold listing is paged, another run (7 hours later) takes the lock over."""

    def __init__(self, pets: list[Pet], take_over: Callable[[], None]) -> None:
        super().__init__(pets)
        self._take_over = take_over

    def list_pets(
        self,
        status: PetStatus | None = None,
        *,
        limit: int = 100,
        seen_budget: object = None,
        read_ahead: object = None,
    ) -> ScriptedListing:
        if status is PetStatus.SOLD:
            self._take_over()
        return super().list_pets(
            status, limit=limit, seen_budget=seen_budget, read_ahead=read_ahead
        )


def test_a_run_that_lost_its_lock_before_publishing_publishes_nothing(s3: S3Bucket) -> None:
    config = ExportConfig(
        client=ClientConfig(BASE, ApiKey("k")), out_dir=s3.uri(), max_drop=1.0, concurrency=1
    )
    old = [Pet(1, "Rex", 1, "available")]
    run_export(config, client=ScriptedClient(old), today=T0.date(), now=lambda: T0)
    other = lock_at(s3, LATER)
    new = [Pet(2, "Tom", 2, "sold"), Pet(3, "Kit", 3, "sold")]
    client = TakenOverDuringFetch(new, take_over=other.acquire)

    with pytest.raises(LockedError) as caught:
        run_export(config, client=client, today=(T0 + dt.timedelta(days=1)).date(), now=lambda: T0)

    assert caught.value.exit_code is ExitCode.LOCKED
    assert str(caught.value) == (
        f"this run lost the lock {s3.uri()}/.petsync.lock: it ran longer than the lock's "
        "expiry (6 h) and another run took the lock over. Nothing was published; earlier "
        "snapshots are untouched."
    )
    assert client.requests > 0  # it had fetched: the lock was lost afterwards
    assert [s.date for s in list_snapshots(s3.uri())] == [T0.date()]
    assert load_snapshot(s3.uri())["id"].tolist() == [1]
    assert [k for k in s3.object_keys("petsync/pets/") if "2026-11-23" in k] == []
    assert s3.object_keys("petsync/.petsync-tmp/") == []  # its staged files discarded
    assert owner_of(s3) == other.owner  # the lock stays with the run that took it


class RefusingPuts:
    """A botocore client whose puts the store refuses (the role lost its write permission)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def put_object(self, **kwargs: Any) -> dict[str, Any]:
        import botocore.exceptions

        error = {"Error": {"Code": "AccessDenied", "Message": "Access Denied"}}
        meta = {"ResponseMetadata": {"HTTPStatusCode": 403}}
        raise botocore.exceptions.ClientError({**error, **meta}, "PutObject")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def test_a_store_refusing_the_confirmation_fails_as_nothing_published_not_as_nothing_fetched(
    s3: S3Bucket,
) -> None:
    lock = lock_at(s3, T0)
    lock.acquire()
    lock.backend._given = RefusingPuts(s3.client)  # type: ignore[attr-defined]  # the run has fetched by now; the store changed

    with pytest.raises(PetsyncError) as caught:
        lock.confirm()

    assert caught.value.exit_code is ExitCode.FAILURE
    assert str(caught.value).startswith(
        f"cannot write the snapshot to {s3.uri()}: the store refused the credentials for "
        f"bucket '{s3.name}' while confirming the lock (An error occurred (AccessDenied) "
        "when calling the PutObject operation: Access Denied); check AWS_ACCESS_KEY_ID"
    )
    assert str(caught.value).endswith("Nothing was published; earlier snapshots are untouched.")
