"""User-facing text never cites the project's own tracker numbers ("issue 18", "issues 4 and 7").

A reader of the README, the docs site, an API docstring, a CLI message or a benchmark's output
cannot look such a number up; the text says what the change or the setting is instead. Links to
another project's issues (``.../issues/123``) are citations a reader can follow, and pass.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# "issue 18", "Issue 18's", "issue-18", "issue #18", "issues 16-17", "issues 4 and 7";
# not "issues/18" (a URL) nor "issued".
ISSUE_NUMBER = re.compile(r"\bissues?(?:[ \t_-]+#?|#)\d+", re.IGNORECASE)
TEXT_SUFFIXES = {".md", ".py", ".yaml", ".yml", ".html", ".j2", ".css", ".js", ".txt", ".toml"}


def _user_facing_files() -> list[Path]:
    files = [REPO / "README.md", REPO / "mkdocs.yml", REPO / "pyproject.toml"]
    for folder in ("docs", "src/prefduel", "benchmarks", "examples"):
        files += sorted(
            p for p in (REPO / folder).rglob("*")
            if p.is_file() and p.suffix in TEXT_SUFFIXES and "__pycache__" not in p.parts
        )
    return files


def citations(text: str) -> list[tuple[int, str]]:
    """(line number, line) of every line of ``text`` that cites an issue number."""
    return [
        (number, line.strip())
        for number, line in enumerate(text.splitlines(), start=1)
        if ISSUE_NUMBER.search(line)
    ]


@pytest.mark.parametrize(
    ("line", "cites"),
    [
        ("the rule before issue 18", True),
        ("Issue 18's targets", True),
        ("its issue-18 defaults", True),
        ("see issue #7", True),
        ("issues 16-17 changed it", True),
        ("issues 4 and 7", True),
        ("issue_3 fix", True),
        ("https://github.com/other/project/issues/123", False),
        ("each warning is also issued as a ReportWarning", False),
        ("no issue with 18 users", False),
    ],
)
def test_pattern(line: str, cites: bool):
    assert bool(citations(line)) is cites


def test_the_files_are_found():
    names = {p.relative_to(REPO).as_posix() for p in _user_facing_files()}
    assert {"README.md", "docs/coduel.md", "src/prefduel/__init__.py"} <= names
    assert any(n.startswith("benchmarks/") and n.endswith(".py") for n in names)


def test_no_tracker_numbers():
    found = [
        f"{path.relative_to(REPO)}:{number}: {line}"
        for path in _user_facing_files()
        for number, line in citations(path.read_text(encoding="utf-8"))
    ]
    assert not found, "say what the change is instead of its issue number:\n" + "\n".join(found)
