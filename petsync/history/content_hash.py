"""The hash of a version's content: the same value in every run, machine and language."""

from __future__ import annotations

import hashlib
from json.encoder import encode_basestring

import numpy as np
import pyarrow as pa

from petsync.core.arrow_arrays import int64_array


def content_hash(table: pa.Table) -> pa.Array:
    """A 64-bit hash of each row's ``name``, ``categoryId`` and ``status`` (null included).

    The first 8 bytes of BLAKE2b over the row's content as a compact JSON array
    (``["Rex",1,"sold"]``, ``null`` for no status), read as a signed big-endian int64: the
    same content gives the same value in every run, on every machine and in any language.
    Versions are told apart by comparing their content itself; the hash is a convenience
    for readers (equal content, equal hash).
    """
    # The JSON built by hand, as json.dumps(row, ensure_ascii=False, separators=(",", ":"))
    # writes it (encode_basestring is its escaping): a quarter of the time.
    statuses = {
        value: "null" if value is None else encode_basestring(value)
        for value in set(table.column("status").to_pylist())
    }
    rows = (
        f"[{encode_basestring(name)},{category},{statuses[status]}]".encode()
        for name, category, status in zip(
            table.column("name").to_pylist(),
            table.column("categoryId").to_pylist(),
            table.column("status").to_pylist(),
            strict=True,
        )
    )
    blake2b = hashlib.blake2b
    digests = b"".join(blake2b(row, digest_size=8).digest() for row in rows)
    return int64_array(np.frombuffer(digests, dtype=">i8").astype(np.int64))
