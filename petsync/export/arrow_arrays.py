"""Arrow arrays built from Python lists without ``pa.array()``, cheaply and without pandas.

On its first call ``pa.array()`` imports pandas (its array-like check), which costs about
0.6 s of CPU and 40 MiB of RSS in an export that never uses pandas; building the buffers
directly is also about 4x cheaper for strings.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import numpy as np
import numpy.typing as npt
import pyarrow as pa

_OFFSET_MAX = 2**31 - 1  # Arrow string offsets are int32


def int64_array(values: npt.NDArray[np.int64]) -> pa.Array:
    """An Arrow int64 array over a numpy array's buffer (no copy)."""
    return pa.Array.from_buffers(pa.int64(), len(values), [None, pa.py_buffer(values)])


def string_array(values: Sequence[str | None]) -> pa.Array:
    """An Arrow string array; None becomes null.

    Built from one encoded buffer and its offsets: about 4x cheaper than appending the
    strings one by one. Text that is all ASCII (the usual case) has as many bytes as
    characters, so only other text encodes each string again to count its bytes.
    """
    count = len(values)
    validity = None
    try:
        text = "".join(values)  # type: ignore[arg-type]  # a None raises: handled below
    except TypeError:
        present = np.array([value is not None for value in values], dtype=np.bool_)
        validity = pa.py_buffer(np.packbits(present, bitorder="little"))
        values = [value if value is not None else "" for value in values]
        text = "".join(values)  # type: ignore[arg-type]
    data = text.encode()  # a lone surrogate raises UnicodeEncodeError, as pa.array() did
    if len(data) > _OFFSET_MAX:  # beyond int32 offsets (16k names of 128 KiB each)
        builder = pa.lib.StringBuilder()
        builder.append_values(values)
        return builder.finish()
    texts = cast("Sequence[str]", values)
    lengths = map(len, texts) if len(data) == len(text) else map(len, map(str.encode, texts))
    offsets = np.zeros(count + 1, dtype=np.int32)
    np.cumsum(np.fromiter(lengths, dtype=np.int32, count=count), out=offsets[1:])
    return pa.StringArray.from_buffers(count, pa.py_buffer(offsets), pa.py_buffer(data), validity)
