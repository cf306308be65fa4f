"""The quarantine file: invalid records as JSON lines, URLs redacted."""

from __future__ import annotations

import json
from pathlib import Path

from petsync.client.listing import InvalidRecord
from petsync.core.apikey import REDACTED, ApiKey
from petsync.export.quarantine import Quarantine
from tests.export.scripted import BASE


def lines(path: Path) -> list[object]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_records_are_written_as_sent_with_listing_reason_and_url(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    bad = [
        InvalidRecord({"id": 1.5, "name": "Float"}, "Pet 'id' is a float", f"{BASE}/pets"),
        InvalidRecord(["not", "an", "object"], "not a JSON object", f"{BASE}/pets?page=2"),
    ]

    with Quarantine(path, []) as quarantine:
        quarantine.add("sold", bad)
        quarantine.add("all", [])

    assert quarantine.count == 2
    assert lines(path) == [
        {
            "listing": "sold",
            "reason": "Pet 'id' is a float",
            "url": f"{BASE}/pets",
            "record": {"id": 1.5, "name": "Float"},
        },
        {
            "listing": "sold",
            "reason": "not a JSON object",
            "url": f"{BASE}/pets?page=2",
            "record": ["not", "an", "object"],
        },
    ]


def test_the_api_key_never_reaches_the_file(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    url = f"{BASE}/pets?api_key=k-secret-123&cursor=k-secret-123"

    with Quarantine(path, [ApiKey("k-secret-123"), None]) as quarantine:
        quarantine.add("all", [InvalidRecord({"id": None}, "Pet has no 'id'", url)])

    text = path.read_text(encoding="utf-8")
    assert "k-secret-123" not in text
    assert lines(path)[0] == {
        "listing": "all",
        "reason": "Pet has no 'id'",
        "url": f"{BASE}/pets?api_key={REDACTED}&cursor={REDACTED}",
        "record": {"id": None},
    }


def test_a_value_json_cannot_hold_is_written_as_its_repr(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"

    with Quarantine(path, []) as quarantine:
        quarantine.add("all", [InvalidRecord({"tags": {1}}, "odd", f"{BASE}/pets")])

    assert lines(path)[0] == {
        "listing": "all",
        "reason": "odd",
        "url": f"{BASE}/pets",
        "record": {"tags": "{1}"},
    }


def test_a_record_with_nan_or_infinity_is_kept_as_text_on_a_strict_line(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    record = {"id": float("nan"), "name": "Odd", "weight": [float("inf"), -float("inf")]}

    with Quarantine(path, []) as quarantine:
        quarantine.add("all", [InvalidRecord(record, "Pet 'id' is a float", f"{BASE}/pets")])

    def refuse(constant: str) -> object:
        raise AssertionError(f"bare {constant} in the file")

    (line,) = path.read_text(encoding="utf-8").splitlines()
    assert json.loads(line, parse_constant=refuse) == {
        "listing": "all",
        "reason": "Pet 'id' is a float",
        "url": f"{BASE}/pets",
        "record": None,
        "record_text": '{"id": NaN, "name": "Odd", "weight": [Infinity, -Infinity]}',
    }
