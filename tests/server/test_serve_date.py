"""The reference server serves a chosen Date header (a server whose clock is wrong), at
once and with no waiting, and the time now again when asked."""

from __future__ import annotations

import datetime as dt
import email.utils

import httpx

from tests.conftest import StartServer


def _date(base_url: str) -> str:
    return httpx.get(f"{base_url}/pets", headers={"Authorization": "Bearer x"}).headers["date"]


def test_a_chosen_date_is_every_answers_date_until_set_back(petstore_server: StartServer) -> None:
    srv = petstore_server()
    stopped = dt.datetime(2026, 11, 27, 9, 0, tzinfo=dt.UTC)

    srv.serve_date(stopped)
    assert _date(srv.base_url) == "Fri, 27 Nov 2026 09:00:00 GMT"
    assert _date(srv.base_url) == "Fri, 27 Nov 2026 09:00:00 GMT"  # stopped there

    srv.serve_date(None)
    back = email.utils.parsedate_to_datetime(_date(srv.base_url))
    assert back.year >= 2026 and back != stopped
