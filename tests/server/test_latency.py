"""Injected latency: every operation waits, and waiting requests do not hold up others.

The app runs in-process over httpx's ASGI transport with a fake async sleep, so no test
waits for real.
"""

from __future__ import annotations

import asyncio

import httpx

from petsync.core.apikey import ApiKey
from petsync.server.app import ServerConfig, create_app
from petsync.server.faults import Faults
from petsync.server.store import PetStore

KEY = "test-key-latency"
HEADERS = {"Authorization": f"Bearer {KEY}"}
NEW_PET = {"name": "Rex", "categoryId": 1}
STATUSES = ("available", "pending", "sold")


def test_latency_is_added_to_every_operation_but_not_the_openapi_document() -> None:
    slept: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        slept.append(seconds)

    config = ServerConfig(api_key=ApiKey(KEY), faults=Faults(latency_ms=20))
    app = create_app(config, PetStore(), sleep=fake_sleep)

    async def run() -> list[int]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t/v1") as client:
            return [
                (
                    await client.post(
                        "/pets", json={"name": "Rex", "categoryId": 1}, headers=HEADERS
                    )
                ).status_code,
                (await client.get("/pets", headers=HEADERS)).status_code,
                (await client.get("/pets/1", headers=HEADERS)).status_code,
                (await client.get("/pets")).status_code,  # refused, after the same wait
                (await client.get("/openapi.json")).status_code,
            ]

    assert asyncio.run(run()) == [201, 200, 200, 401, 200]
    assert slept == [0.02, 0.02, 0.02, 0.02]


def test_requests_waiting_out_latency_do_not_block_each_other() -> None:
    async def run() -> list[int]:
        waiting = 0
        all_waiting = asyncio.Event()

        async def gate_sleep(seconds: float) -> None:
            # Returns only once all three requests are inside their wait at the same time:
            # if the server handled them one by one this would never happen.
            nonlocal waiting
            waiting += 1
            if waiting == 3:
                all_waiting.set()
            await asyncio.wait_for(all_waiting.wait(), timeout=5)

        config = ServerConfig(api_key=ApiKey(KEY), faults=Faults(latency_ms=20), seed_pets=0)
        app = create_app(config, PetStore(), sleep=gate_sleep)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t/v1") as client:
            answers = await asyncio.gather(
                *(
                    client.get("/pets", params={"status": s}, headers=HEADERS)
                    for s in ("available", "pending", "sold")
                )
            )
        return [a.status_code for a in answers]

    assert asyncio.run(run()) == [200, 200, 200]


def test_a_read_is_answered_from_work_done_while_its_latency_runs() -> None:
    async def run() -> tuple[list[str], int]:
        steps: list[str] = []
        release = asyncio.Event()

        class Store(PetStore):
            def page_after(self, *args: object, **kwargs: object) -> list[tuple[object, ...]]:
                steps.append("read")
                return super().page_after(*args, **kwargs)  # type: ignore[arg-type]

        async def sleep(seconds: float) -> None:
            steps.append("waiting")
            await asyncio.wait_for(release.wait(), timeout=5)
            steps.append("waited")

        config = ServerConfig(api_key=ApiKey(KEY), faults=Faults(latency_ms=20))
        app = create_app(config, Store(), sleep=sleep)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t/v1") as client:
            answer = asyncio.ensure_future(client.get("/pets", headers=HEADERS))
            for _ in range(1000):  # the page is read while the wait has not ended
                if "read" in steps:
                    break
                await asyncio.sleep(0)
            assert "read" in steps and not answer.done()
            release.set()
            return steps, (await answer).status_code

    # The wait begins first, at the request's arrival; the page is read inside it.
    assert asyncio.run(run()) == (["waiting", "read", "waited"], 200)


def test_a_write_stores_nothing_before_its_latency_has_run() -> None:
    async def run() -> tuple[int, int, int]:
        release = asyncio.Event()
        waiting = asyncio.Event()

        async def sleep(seconds: float) -> None:
            waiting.set()
            await asyncio.wait_for(release.wait(), timeout=5)

        store = PetStore()
        config = ServerConfig(api_key=ApiKey(KEY), faults=Faults(latency_ms=20))
        app = create_app(config, store, sleep=sleep)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t/v1") as client:
            answer = asyncio.ensure_future(client.post("/pets", json=NEW_PET, headers=HEADERS))
            await asyncio.wait_for(waiting.wait(), timeout=5)
            before = store.count()
            release.set()
            return before, (await answer).status_code, store.count()

    assert asyncio.run(run()) == (0, 201, 1)
