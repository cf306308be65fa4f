"""A plain next link joined without parsing is the URL as httpx would have written it."""

from __future__ import annotations

import httpx
import pytest

from petsync.client.origins import origin_text, same_origin_target

BASES = [
    "http://127.0.0.1:8080/v1/pets?limit=100&status=sold",
    "https://petstore.test/v1/pets?limit=100",
    "https://PetStore.Test:443/v1/pets",
    "http://[::1]:9000/api/v1/pets?limit=5#frag",
]
TARGETS = [
    "/v1/pets?limit=100&after=7",
    "/v1/pets",
    "/v1/pets?limit=100&status=sold&after=123456789012345",
    "/a/b-c_d.e~f/!$&'()*+,;=:@?x=%2F%20y&z=/?&q=~",
    "/v1/pets?cursor=abc%3D%3D",
]


@pytest.mark.parametrize("base", BASES)
@pytest.mark.parametrize("target", TARGETS)
def test_a_plain_target_joined_equals_the_parsed_url(base: str, target: str) -> None:
    assert same_origin_target(target)
    list_url = httpx.URL(base)
    joined = origin_text(list_url) + target  # what the client sends, unparsed
    parsed = httpx.URL(joined)
    assert parsed == list_url.join(target)
    assert str(parsed) == joined
    assert (parsed.raw_path, parsed.netloc, parsed.port) == (
        list_url.join(target).raw_path,
        list_url.netloc,
        list_url.port,
    )
