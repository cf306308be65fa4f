"""Text from outside, made safe to show: control characters escaped, length cut and said."""

from __future__ import annotations

import unicodedata

import pytest

from petsync.core.text import SHOWN_TEXT_LIMIT, shown_text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("name must not be empty", "name must not be empty"),
        ("\x1b[2J\x1b[H cleared", "\\x1b[2J\\x1b[H cleared"),
        ("\x1b]0;pwned\x07title", "\\x1b]0;pwned\\x07title"),
        ("line one\r\nline two\tend", "line one\\r\\nline two\\tend"),
        ("nul\x00 del\x7f c1\x9b", "nul\\x00 del\\x7f c1\\x9b"),
        ("abc\u202edcba", "abc\\u202edcba"),
        ("zero\u200bwidth", "zero\\u200bwidth"),
        ("sep\u2028arator", "sep\\u2028arator"),
        ("lone \ud800 surrogate", "lone \\ud800 surrogate"),
        ("tag \U000e0041", "tag \\U000e0041"),
        ("Ærø 😀 名前 nbsp\u00a0", "Ærø 😀 名前 nbsp\u00a0"),
    ],
    ids=[
        "plain",
        "clear-screen",
        "window-title",
        "line-breaks",
        "nul-del-c1",
        "bidi-override",
        "zero-width",
        "line-separator",
        "lone-surrogate",
        "tag-character",
        "other-scripts-kept",
    ],
)
def test_control_characters_are_escaped_readably(text: str, expected: str) -> None:
    assert shown_text(text) == expected


def test_a_long_text_is_cut_and_says_how_long_it_was() -> None:
    text = "\x1b[2J" + "x" * 5_242_876
    shown = shown_text(text)
    assert shown == "\\x1b[2J" + "x" * (SHOWN_TEXT_LIMIT - 7) + "... (5242880 characters, cut)"


def test_the_cut_counts_escapes_so_the_result_stays_short() -> None:
    shown = shown_text("\x07" * 10_000, limit=20)
    assert shown == "\\x07" * 5 + "... (10000 characters, cut)"


def test_text_at_the_limit_is_not_cut() -> None:
    assert shown_text("y" * 12, limit=12) == "y" * 12
    assert shown_text("y" * 13, limit=12) == "y" * 12 + "... (13 characters, cut)"


def test_the_result_can_always_be_encoded_and_printed_on_one_line() -> None:
    hostile = "".join(chr(c) for c in range(0x3000)) + "\ud800\udfff"
    shown = shown_text(hostile, limit=100_000)
    shown.encode("utf-8")  # no lone surrogate left
    assert "\n" not in shown and "\r" not in shown and "\x1b" not in shown
    assert all(char.isprintable() or unicodedata.category(char) == "Zs" for char in shown)


def test_an_excerpt_reports_the_length_of_the_whole_text() -> None:
    assert shown_text("start of it", length=5_000) == "start of it... (5000 characters, cut)"
    assert shown_text("all of it", length=9) == "all of it"
