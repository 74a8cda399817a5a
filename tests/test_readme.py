"""The README itself: short (what rsigym is, install, the one command, the test command, the main
results table and links into the docs), every link of it reaches a file of the repository, and
the parts the docs site's home page includes from it are there. Its code blocks and the docs
pages' run in ``test_readme_docs.py``; ``make docs`` builds the site with warnings as errors."""

from __future__ import annotations

import re

import yaml

from .conftest import REPO

README = (REPO / "README.md").read_text()


def test_the_readme_is_at_most_400_lines_and_holds_the_one_command_the_tests_and_the_main_table():
    assert README.count("\n") <= 400
    assert "make demo" in README and "make test" in README and "make docs" in README
    assert "| agent | condition | what the report finds |" in README


def test_every_relative_link_of_the_readme_reaches_a_file():
    links = [target for target in re.findall(r"\]\(([^)\s]+)\)", README) if not re.match(r"[a-z]+:", target)]
    assert len(links) >= 15
    missing = [t for t in links if not (REPO / t.split("#")[0]).exists()]
    assert missing == []
    # every environment family page is linked
    families = {p.relative_to(REPO).as_posix() for p in (REPO / "docs" / "families").glob("*.md")}
    assert families <= set(links)


def test_the_sections_the_docs_home_page_includes_are_marked_in_the_readme():
    included = re.findall(r'--8<-- "README.md:([\w-]+)"', (REPO / "docs" / "index.md").read_text())
    assert included
    for name in included:
        start, end = f"--8<-- [start:{name}]", f"--8<-- [end:{name}]"
        assert README.count(start) == 1 and README.count(end) == 1 and README.index(start) < README.index(end), name


def _nav_pages(entries) -> list[str]:
    pages = []
    for entry in entries:
        values = entry.values() if isinstance(entry, dict) else [entry]
        for value in values:
            pages += _nav_pages(value) if isinstance(value, list) else [value]
    return pages


def test_the_docs_nav_lists_every_page_and_only_pages_that_exist():
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text())
    nav = _nav_pages(config["nav"])
    pages = sorted(p.relative_to(REPO / "docs").as_posix() for p in (REPO / "docs").rglob("*.md"))
    assert sorted(nav) == pages
