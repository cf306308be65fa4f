"""Text from outside petsync (a server's message, a name in a record) made safe to show.

A server can put anything in an error message or a header: megabytes of it, escape sequences
that clear a terminal or set its window title, a carriage return that overwrites the line
before, bidirectional overrides that reorder what is displayed, a lone surrogate that makes
``print`` raise. :func:`shown_text` is the one function such text passes through before it
reaches an error message, a warning or a log line.
"""

from __future__ import annotations

import unicodedata

SHOWN_TEXT_LIMIT = 300  # characters; enough for any real message, a screenful at most

# Escaped: what str.isprintable() calls unprintable (control, format such as bidi overrides
# and zero-width characters, surrogates, private use, unassigned, line and paragraph
# separators), except spaces (Zs: a no-break space is harmless). That is what can move the
# cursor, reorder or hide text, or break an encoder; letters, marks, punctuation and symbols
# of any script stay as they are.
_KEPT_UNPRINTABLE = "Zs"


def shown_text(text: str, limit: int = SHOWN_TEXT_LIMIT, *, length: int | None = None) -> str:
    """``text`` with control characters escaped, cut to about ``limit`` characters.

    Escapes read like Python's: ``\\x1b``, ``\\n``, ``\\u202e``. A cut says how long the text
    was, so nobody mistakes the start for the whole; when ``text`` is only the start of a
    longer text (an excerpt), ``length`` is the whole text's length:

    >>> shown_text("\\x1b]0;owned\\x07 bad key")
    '\\\\x1b]0;owned\\\\x07 bad key'
    >>> shown_text("x" * 5_000, limit=8)
    'xxxxxxxx... (5000 characters, cut)'

    Text that needs neither (the usual case) is returned as it is, at the cost of one scan.
    """
    whole = len(text) if length is None else length
    if whole <= limit and text.isprintable():
        return text
    out: list[str] = []
    used = 0
    taken = 0
    for char in text:
        if used >= limit:
            break
        if char.isprintable() or unicodedata.category(char) == _KEPT_UNPRINTABLE:
            piece = char
        else:
            piece = _escape(char)
        out.append(piece)
        used += len(piece)
        taken += 1
    if taken < len(text) or whole > len(text):
        out.append(f"... ({whole} characters, cut)")
    return "".join(out)


def _escape(char: str) -> str:
    code = ord(char)
    if char in _NAMED:
        return _NAMED[char]
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
