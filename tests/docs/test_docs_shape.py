"""The shape the house style asks of the docs: a short README, short paragraphs, live links."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.docs.markdown import (
    PAGES,
    README,
    ROOT,
    anchors,
    fenced_blocks,
    paragraphs,
    prose,
)

README_MAX_CHARACTERS = 10_000
PARAGRAPH_MAX_CHARACTERS = 500
TASK_PAGES = [
    "export.md",
    "import.md",
    "scheduling.md",
    "orchestration.md",
    "notebooks.md",
    "server.md",
    "design.md",
    "benchmarks.md",
    "cli.md",
]
LINK = re.compile(r"\]\(([^)\s]+)\)")
HISTORY = re.compile(r"(?i)\bissues?\s*#?\d+|\b(before|after) the pass\b|\(it was\b|\bwas \d")


def test_readme_is_at_most_10000_characters() -> None:
    assert len(README.read_text(encoding="utf-8")) <= README_MAX_CHARACTERS


def test_readme_opens_with_the_demo_and_the_ci_command() -> None:
    text = README.read_text(encoding="utf-8")
    first_block = fenced_blocks(text)[0]
    demo, tests = first_block.splitlines()

    assert text.index(first_block) < text.index("\n## ")  # before any section
    assert demo.endswith(".venv/bin/petsync demo") and "install -q -e . " in demo
    assert tests in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


@pytest.mark.parametrize("name", TASK_PAGES)
def test_task_page_exists_and_the_readme_links_it(name: str) -> None:
    assert (ROOT / "docs" / name).is_file()
    assert f"](docs/{name})" in README.read_text(encoding="utf-8")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_no_project_history_in_user_docs(page: Path) -> None:
    found = [m.group(0) for m in HISTORY.finditer(prose(page.read_text(encoding="utf-8")))]

    assert not found, f"{page.name}: {found}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_paragraphs_are_short(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    long = [p for p in paragraphs(text) if len(p) > PARAGRAPH_MAX_CHARACTERS]

    assert not long, f"{page.name}: split these paragraphs: {[p[:60] for p in long]}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_relative_links_point_at_files_and_headings_that_exist(page: Path) -> None:
    broken: list[str] = []
    for target in LINK.findall(prose(page.read_text(encoding="utf-8"))):
        if re.match(r"[a-z]+:", target):
            continue  # an outside address
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        exists = linked.exists()
        if not exists or (anchor and anchor not in anchors(linked.read_text(encoding="utf-8"))):
            broken.append(target)

    assert not broken, f"{page.name}: broken links {broken}"
