"""The README and the docs pages render as their authors meant on the MkDocs site.

The site is built with Python-Markdown, which is stricter than GitHub's renderer:

- a list must start after a blank line (or a heading): a list item written on the line just
  after a paragraph or table line is glued onto that paragraph, or becomes a table row;
- a nested list needs four spaces of indentation: with two, it is flattened into its parent;
- TeX math (``\\(...\\)``, ``$$...$$``) would need a math extension and a MathJax or KaTeX script
  served with the site; the site loads neither, so formulas are written in Unicode text (with
  ``<sub>`` for indices) and TeX would show raw.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
LIST_ITEM = re.compile(r"^(?P<indent>[ ]*)(?:[-*+]|\d+[.)])[ ]+\S")
FENCE = re.compile(r"^[ ]*(```|~~~)")
HEADING = re.compile(r"^#{1,6}[ ]")
TEX = re.compile(r"\\\(|\\\[|\$\$|\$\\[A-Za-z]")
CODE_SPAN = re.compile(r"(`+).*?\1")


def _pages() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def _prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) of a page outside fenced code blocks; a fence line becomes blank."""
    out, fence = [], None
    for number, line in enumerate(text.splitlines(), start=1):
        match = FENCE.match(line)
        if fence is None and match:
            fence = match.group(1)
            out.append((number, ""))
        elif fence is not None:
            if line.strip().startswith(fence):
                fence = None
            out.append((number, ""))
        else:
            out.append((number, line))
    return out


def list_problems(text: str) -> list[tuple[int, str]]:
    """Lines where Python-Markdown would not render the list its author wrote.

    A block is a run of non-blank lines (a heading also ends one). A list item is rendered as one
    only at the start of a block, or inside a block that starts with a list item (its items,
    their lazy continuation lines and its nested items). A nested item must be indented by at
    least four spaces more than the item it belongs to.
    """
    problems: list[tuple[int, str]] = []
    block_is_list = False
    indents: list[int] = []  # indentation of the enclosing list items, outermost first
    previous_blank = True
    for number, line in _prose_lines(text):
        if not line.strip():
            previous_blank = True
            continue
        item = LIST_ITEM.match(line)
        if previous_blank or HEADING.match(line):
            block_is_list = item is not None
            if item is None:
                indents = [] if not line.startswith(" ") else indents
        elif item is not None and not block_is_list:
            problems.append((number, "a list item (or a line that reads as one) right after a "
                                     "paragraph or table line: add a blank line before it"))
            block_is_list = True  # the rest of this list is the same problem
        if item is not None:
            indent = len(item.group("indent"))
            while indents and indent < indents[-1]:
                indents.pop()
            if indents and indents[-1] < indent < indents[-1] + 4:
                problems.append((number, "nested list item indented by fewer than four spaces"))
            elif not indents or indent >= indents[-1] + 4:
                indents.append(indent)
        previous_blank = bool(HEADING.match(line))
    return problems


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Some text:\n- a\n- b\n", [2]),
        ("Some text:\n\n- a\n- b\n", []),
        ("Steps\n1. a\n", [2]),
        ("## Heading\n- a\n", []),
        ("| a | b |\n|---|---|\n| 1 | 2 |\n- x\n", [4]),
        ("- a\nlazy continuation\n- b\n", []),
        ("- a\n    - nested\n- b\n", []),
        ("- a\n  - nested by two\n", [2]),
        ("1. a\n    continued\n\n    paragraph of a\n- b\n", [5]),
        ("```\ntext\n- not a list\n```\n", []),
        ("Text with a *star* and -1 and 2020 on one line\n", []),
    ],
)
def test_list_check_finds_what_python_markdown_would_misrender(text, expected):
    assert [number for number, _ in list_problems(text)] == expected


@pytest.mark.parametrize("page", _pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_lists_render_as_lists(page: Path):
    problems = list_problems(page.read_text(encoding="utf-8"))
    where = page.relative_to(REPO)
    assert not problems, "\n".join(f"{where}:{number}: {what}" for number, what in problems)


class _AnyTagLoader(yaml.SafeLoader):
    """Reads mkdocs.yml even if it holds ``!!python/name:`` tags (they become None)."""


_AnyTagLoader.add_multi_constructor("", lambda loader, suffix, node: None)


def test_math_extension_only_with_a_local_renderer():
    config = yaml.load((REPO / "mkdocs.yml").read_text(encoding="utf-8"), Loader=_AnyTagLoader)
    names = [e if isinstance(e, str) else next(iter(e)) for e in config["markdown_extensions"]]
    if "pymdownx.arithmatex" in names:
        scripts = [str(s) for s in config.get("extra_javascript", [])]
        assert scripts, "arithmatex is on but no MathJax/KaTeX script is loaded: formulas show raw"
        assert not [s for s in scripts if "://" in s], "the math script must be served locally"


def tex_lines(text: str) -> list[int]:
    """Line numbers with TeX math delimiters outside code blocks and code spans."""
    return [n for n, line in _prose_lines(text) if TEX.search(CODE_SPAN.sub("", line))]


def test_tex_check():
    assert tex_lines("the rate \\(\\alpha\\) and $$x^2$$\n`\\(code\\)`\n$\\beta$\n") == [1, 3]
    assert tex_lines("costs $5 and $PREFDUEL_LLM_CACHE\n```\n$$\n```\n") == []


@pytest.mark.parametrize("page", _pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_no_tex_math(page: Path):
    config = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    if "arithmatex" in config:
        pytest.skip("a math renderer is configured")
    lines = tex_lines(page.read_text(encoding="utf-8"))
    assert not lines, f"{page.relative_to(REPO)}: TeX math on lines {lines} would show raw"
