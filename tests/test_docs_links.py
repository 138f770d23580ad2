"""The docs a clone ships: every relative link and image resolves to a file (and a heading) in
the repository, the README stays short, user-facing docs name releases rather than project
history, and the package's version is the changelog's newest release."""

from __future__ import annotations

import configparser
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

USER_DOCS = ("README.md", "CHANGELOG.md", "docs/OPERATING.md", "docs/UPGRADING.md")
README_MAX_LINES = 250

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
EXTERNAL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")  # http:, https:, mailto:, ...
HISTORY = re.compile(r"\bRound \d")
ISSUE_NUMBER = re.compile(r"(?<![\w&/])#\d+\b")
RELEASE_HEADING = re.compile(r"^## (\d+\.\d+\.\d+)\b(?! — unreleased)", re.MULTILINE)  # not one in the making


def markdown_files() -> list[Path]:
    files = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
    return [path for path in files if path.exists()]


def prose_lines(text: str) -> list[tuple[int, str]]:
    """The lines outside fenced code blocks, numbered from 1."""
    lines, fence = [], None
    for number, line in enumerate(text.splitlines(), 1):
        opened = FENCE.match(line)
        if fence is None and opened:
            fence = opened.group(1)[0]
        elif fence is not None and opened and opened.group(1)[0] == fence:
            fence = None
        elif fence is None:
            lines.append((number, line))
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: inline markup dropped, lowercase, punctuation other than
    hyphens and underscores stripped, each space a hyphen."""
    text = INLINE_CODE.sub(lambda m: m.group(2), heading)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link in a heading: its text
    text = re.sub(r"[*_]{1,3}(\S(?:.*?\S)?)[*_]{1,3}", r"\1", text)  # emphasis
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every anchor the headings of a markdown file make, duplicates numbered as GitHub does."""
    seen: dict[str, int] = {}
    result = set()
    for _, line in prose_lines(path.read_text(encoding="utf-8")):
        match = HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        result.add(base if count == 0 else f"{base}-{count}")
    return result


def links(path: Path) -> list[tuple[int, str]]:
    """Every markdown link and image target outside code, with its line number."""
    found = []
    for number, line in prose_lines(path.read_text(encoding="utf-8")):
        line = INLINE_CODE.sub(lambda m: "code" if "](" in m.group(2) else m.group(0), line)
        found += [(number, match.group(1)) for match in LINK.finditer(line)]
    return found


def broken_links(path: Path) -> list[str]:
    broken = []
    for number, target in links(path):
        if not target or EXTERNAL.match(target):
            continue
        where = f"{path.relative_to(ROOT)}:{number}: {target}"
        file_part, _, anchor = target.partition("#")
        linked = path if not file_part else (path.parent / file_part).resolve()
        if file_part and (not linked.exists() or not linked.is_relative_to(ROOT)):
            broken.append(f"{where} (no such file in the repository)")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{where} (no heading #{anchor} in {linked.relative_to(ROOT)})")
    return broken


@pytest.mark.parametrize("name", [p.relative_to(ROOT).as_posix() for p in markdown_files()])
def test_every_relative_link_resolves(name):
    assert broken_links(ROOT / name) == []


def test_the_docs_exist():
    for name in ("README.md", "CHANGELOG.md", "docs/UPGRADING.md", "docs/OPERATING.md"):
        assert (ROOT / name).is_file(), name


def test_the_readme_is_short():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines"


def test_the_readme_shows_its_picture():
    assert "docs/serve.png" in [target for _, target in links(ROOT / "README.md")]


@pytest.mark.parametrize("name", USER_DOCS)
def test_user_docs_name_releases_not_history(name):
    text = (ROOT / name).read_text(encoding="utf-8")
    offending = [f"{name}:{number}: {line.strip()}" for number, line in enumerate(text.splitlines(), 1)
                 if HISTORY.search(line) or ISSUE_NUMBER.search(line)]
    assert offending == []


def test_the_package_version_is_the_newest_release():
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg", encoding="utf-8")
    releases = RELEASE_HEADING.findall((ROOT / "CHANGELOG.md").read_text(encoding="utf-8"))
    assert releases, "CHANGELOG.md has no '## X.Y.Z' heading"
    assert config["metadata"]["version"] == releases[0]


def test_the_slug_rule():
    assert slug("Failures, retries and seals") == "failures-retries-and-seals"
    assert slug("Reading the comments in a browser: `docketeer serve`") == (
        "reading-the-comments-in-a-browser-docketeer-serve")
    assert slug("0.2.0 — 2026-12-02") == "020--2026-12-02"
    assert slug("Campaigns (form letters) and exports") == "campaigns-form-letters-and-exports"
