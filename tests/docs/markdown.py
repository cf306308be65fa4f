"""Just enough Markdown for the docs tests: pages, fenced blocks, sections, tables, anchors."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md"))]

FENCE = re.compile(r"^```(\w*)\n(.*?)^```[ \t]*$", re.S | re.M)
COMMENT = re.compile(r"<!--.*?-->", re.S)
HEADING = re.compile(r"^(#{1,6}) (.+?)\s*$", re.M)


def fenced_blocks(text: str, language: str | None = None) -> list[str]:
    """The fenced code blocks of ``text``, in order; only those of ``language`` if given."""
    return [body for lang, body in FENCE.findall(text) if language is None or lang == language]


def prose(text: str) -> str:
    """``text`` without fenced blocks and HTML comments (cog's generator lives in one)."""
    return FENCE.sub("", COMMENT.sub("", text))


def section(text: str, title: str) -> str:
    """The body of the heading named ``title``, up to the next heading of its level or above."""
    for match in HEADING.finditer(text):
        if match.group(2) == title:
            level = len(match.group(1))
            rest = text[match.end() :]
            end = re.search(rf"^#{{1,{level}}} ", prose_mask(rest), re.M)
            return rest[: end.start()] if end else rest
    raise AssertionError(f"no heading {title!r}")


def prose_mask(text: str) -> str:
    """``text`` with fenced blocks blanked out, same length, so offsets still match."""
    return FENCE.sub(lambda m: " " * len(m.group(0)), text)


def table_rows(text: str) -> list[list[str]]:
    """The body rows of the first Markdown table in ``text``, cells stripped."""
    rows: list[list[str]] = []
    for line in text.splitlines():
        if line.startswith("|"):
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
        elif rows:
            break
    return rows[2:]  # past the header and the |---| line


def slug(title: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every heading anchor of a page; a repeated heading gets -1, -2... as on GitHub."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    for match in HEADING.finditer(prose(text)):
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def paragraphs(text: str) -> list[str]:
    """Prose paragraphs and list items, joined into one line each; no tables or headings."""
    found: list[str] = []
    for chunk in re.split(r"\n[ \t]*\n", prose(text)):
        item: list[str] = []
        for line in chunk.splitlines():
            stripped = line.strip()
            if not stripped or stripped.startswith(("|", "#")):
                continue
            if re.match(r"(- |\d+\. )", stripped) and item:
                found.append(" ".join(item))
                item = []
            item.append(stripped)
        if item:
            found.append(" ".join(item))
    return found
