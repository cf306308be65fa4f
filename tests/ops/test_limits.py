"""The client limits' sizes: what parses, what is refused."""

from __future__ import annotations

import pytest

from petsync.ops.limits import format_size, parse_size


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("1048576", 1_048_576),
        ("32MiB", 32 * 1024**2),
        ("32 mib", 32 * 1024**2),
        ("32M", 32 * 1024**2),
        ("500kB", 500_000),
        ("1.5GB", 1_500_000_000),
        ("2G", 2 * 1024**3),
        ("1b", 1),
    ],
    ids=["bytes", "mib", "lower-case-spaced", "m-is-binary", "kb-is-decimal", "fraction", "g", "b"],
)
def test_sizes_parse(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("32XB", "'32XB' is not a size; use e.g. 32MiB, 500kB or 1048576"),
        ("-1", "'-1' is not a size"),
        ("0", "'0' is not a size of at least 1 byte"),
        ("MiB", "'MiB' is not a size"),
        ("", "'' is not a size"),
    ],
    ids=["unknown-unit", "negative", "zero", "no-number", "empty"],
)
def test_non_sizes_are_refused(text: str, message: str) -> None:
    with pytest.raises(ValueError) as err:
        parse_size(text)
    assert str(err.value).startswith(message)


def test_a_size_shows_in_the_largest_exact_binary_unit() -> None:
    assert [format_size(n) for n in (3 * 1024**3, 32 * 1024**2, 2048, 1000)] == [
        "3 GiB",
        "32 MiB",
        "2 KiB",
        "1000 bytes",
    ]
