"""The documents a user has: the code cites the repository's own architecture document (never a file users do
not have), every section it cites exists, and the README's and docs' links point at files that exist."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = (
    "memory_core",
    "memory_query",
    "memory_resources",
    "memory_assets",
    "memory_explorer",
    "memory_cli",
    "evals",
)
CITATION = re.compile(r"docs/architecture\.md §(\d+(?:\.\d+)?)(?:[–-](\d+(?:\.\d+)?))?")


def _sources() -> list[Path]:
    return [
        p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*") if p.suffix in (".py", ".md", ".html", ".yaml")
    ]


def _sections() -> set[str]:
    """The numbers of docs/architecture.md's sections (## N.) and numbered items (N. under ## M.)."""
    numbers: set[str] = set()
    section = None
    for line in (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8").splitlines():
        heading = re.match(r"## (\d+)\. ", line)
        if heading:
            section = heading.group(1)
            numbers.add(section)
            continue
        item = re.match(r"(\d+)\. \*\*", line)
        if item and section:
            numbers.add(f"{section}.{item.group(1)}")
    return numbers


def test_the_code_cites_the_repository_architecture_not_a_file_users_lack():
    stale = [f"{p.relative_to(ROOT)}:{n}" for p in _sources() for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if "DESIGN" in line]  # fmt: skip
    assert not stale, stale
    sections = _sections()
    assert {"1", "3", "4", "4.4", "4.10", "4.12", "7", "12"} <= sections
    cited = {
        (str(p.relative_to(ROOT)), number)
        for p in _sources()
        for match in CITATION.finditer(p.read_text(encoding="utf-8"))
        for number in match.groups()
        if number
    }
    assert len(cited) > 20
    assert not [c for c in cited if c[1] not in sections]


def test_links_of_the_readme_and_docs_resolve():
    for doc in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", doc.read_text(encoding="utf-8")):
            if "://" in target:
                continue
            assert (doc.parent / target).exists(), f"{doc.relative_to(ROOT)} links to missing {target}"
