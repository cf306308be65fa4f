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
