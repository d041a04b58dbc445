"""Plain-text writers of `prefduel.core.document`: text, Markdown, CSV and JSON.

Each writer reads the one document model; numbers arrive already formatted in cells, so the
formats cannot disagree. Markdown links figure files and never inlines them; CSV neutralises
formula-like text for spreadsheets.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from prefduel.core.csvcells import spreadsheet_safe
from prefduel.core.document import (
    Block,
    Cell,
    Document,
    Figure,
    Items,
    Paragraph,
    Preformatted,
    Raw,
    Section,
    Settings,
    Table,
    as_cell,
)


def table_text(table: Table) -> str:
    """A table as aligned plain-text columns (numbers right-aligned, ``±`` aligned)."""
    cells = [[as_cell(c) for c in row] for row in table.rows]
    for row, tone in zip(cells, table.row_tones if table.ref_marker else (), strict=False):
        if tone == "ref" and row:
            row[0] = replace(row[0], text=f"{row[0].text} {table.ref_marker}")
    numeric = table.numeric_columns()
    widths: list[int] = []
    columns: list[list[str]] = []
    for j, head in enumerate(table.header()):
        column = [row[j] for row in cells]
        if any(c.se is not None for c in column):
            values = _aligned_pm(column)
        else:
            values = [c.plain() for c in column]
        width = max([len(head), *map(len, values)])
        pad = str.rjust if numeric[j] else str.ljust
        columns.append([pad(head, width), *(pad(v, width) for v in values)])
        widths.append(width)
    lines = ["  ".join(parts).rstrip() for parts in zip(*columns, strict=True)]
    if table.header_rule:
        lines.insert(1, "  ".join("-" * w for w in widths))
    if table.title:
        lines.insert(0, table.title)
    if table.note:
        lines.append(table.note)
    return "\n".join(lines)


def _aligned_pm(column: Sequence[Cell]) -> list[str]:
    """``mean ± se`` cells with the ``±`` signs one above the other."""
    left = max(len(c.text) for c in column)
    right = max(len(c.se or "") for c in column)
    out = []
    for c in column:
        text = c.text.rjust(left) + (f" ± {(c.se or '').rjust(right)}" if c.se is not None else "")
        out.append(f"{text} {c.flag}" if c.flag else text)
    return out


def _block_text(block: Block) -> str:
    if isinstance(block, Table):
        return table_text(block)
    if isinstance(block, Paragraph):
        return block.text
    if isinstance(block, Items):
        return "\n".join(f"- {item}" for item in block.items)
    if isinstance(block, Figure):
        return f"[figure: {block.caption}{' (' + block.path + ')' if block.path else ''}]"
    if isinstance(block, Settings):
        width = max((len(k) for k, _ in block.pairs), default=0)
        return "\n".join(f"{k.ljust(width)}  {v}" for k, v in block.pairs)
    if isinstance(block, Preformatted):
        return block.text
    return block.text


def to_text(document: Document) -> str:
    """The document as plain text (terminal output)."""
    parts = [document.title, "=" * len(document.title)] if document.title else []
    if document.subtitle:
        parts.append(document.subtitle)
    parts += [f"warning: {w}" for w in document.warnings]
    parts += [_block_text(b) for b in document.intro]

    def visit(section: Section, underline: str) -> None:
        parts.extend(["", section.title, underline * len(section.title)])
        parts.extend(t for t in map(_block_text, section.blocks) if t)
        for sub in section.subsections:
            visit(sub, "-")

    for section in document.sections:
        visit(section, "=")
    return "\n".join(p for p in parts if p is not None).strip("\n") + "\n"


_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
#: A ``<`` that could open a tag, a comment or an autolink (``a < b`` cannot).
_TAG_START = re.compile(r"<(?=[A-Za-z/!?])")


def markdown_escape(text: str, emphasis: bool = False) -> str:
    """Text safe inside a Markdown table cell (pipes escaped, one line, no HTML, no links).

    Model names, user ids and paths come from users' files: a ``<script>`` in one must show as
    text wherever the Markdown is rendered (MkDocs, GitHub), never run.

    Args:
        text: Plain text.
        emphasis: Also escape ``*``, ``_`` and backticks (no emphasis or code spans).
    """
    out = str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")
    out = _TAG_START.sub("&lt;", out)
    out = out.replace("](", "]\\(").replace("][", "]\\[")  # never a link
    if emphasis:
        for char in ("*", "_", "`"):
            out = out.replace(char, "\\" + char)
    return out


def markdown_text(text: str) -> str:
    """Markdown prose with every raw HTML tag shown as text (``<`` escaped outside code spans
    where it could open a tag).

    Paragraphs, list items and captions are Markdown written by prefduel, but they quote names
    from users' files; escaping ``<`` keeps emphasis, links and code spans working while no
    tag a name carries can reach the rendered page.
    """
    out, last = [], 0
    for span in _CODE_SPAN.finditer(text):
        out.append(_TAG_START.sub("&lt;", text[last : span.start()]))
        out.append(span.group(0))
        last = span.end()
    out.append(_TAG_START.sub("&lt;", text[last:]))
    return "".join(out)


def table_markdown(table: Table) -> str:
    """A table as a GitHub-flavoured Markdown pipe table (numbers right-aligned)."""
    emphasis = table.escape_emphasis
    rule = ["---:" if n else "---" for n in table.numeric_columns()]
    lines = ["| " + " | ".join(markdown_escape(h, emphasis) for h in table.header()) + " |"]
    lines.append("|" + "|".join(rule) + "|")
    tones = list(table.row_tones) if table.ref_marker else []
    for index, row in enumerate(table.text_rows()):
        cells = [markdown_escape(c, emphasis) for c in row]
        if index < len(tones) and tones[index] == "ref" and cells:
            cells[0] = f"*{cells[0]}*"
        lines.append("| " + " | ".join(cells) + " |")
    if table.title:
        lines.insert(0, f"**{markdown_escape(table.title, emphasis)}**\n")
    if table.note:
        lines += ["", table.note]
    return "\n".join(lines)


def _block_markdown(block: Block) -> str:
    if isinstance(block, Table):
        return table_markdown(block)
    if isinstance(block, Items):
        return "\n".join(f"- {markdown_text(item)}" for item in block.items)
    if isinstance(block, Figure):
        caption = markdown_escape(block.caption)
        return f"![{caption}]({block.path})" if block.path else f"*{caption}*"
    if isinstance(block, Settings):
        return table_markdown(Table(["setting", "value"], [list(p) for p in block.pairs]))
    if isinstance(block, Preformatted):
        fence = "`" * max(3, 1 + max((len(m) for m in re.findall(r"`+", block.text)), default=0))
        return f"{fence}\n{block.text}\n{fence}"
    if isinstance(block, Paragraph) and block.style == "warn":
        return f"> ⚠ {markdown_text(block.text)}"
    return markdown_text(block.text)


def to_markdown(document: Document) -> str:
    """The document as Markdown; figures are links to their files (never inlined)."""
    parts = [f"# {markdown_escape(document.title)}"]
    if document.subtitle:
        parts.append(markdown_text(document.subtitle))
    if document.warnings:
        parts.append("\n".join(f"> ⚠ {markdown_text(w)}" for w in document.warnings))
    parts += [_block_markdown(b) for b in document.intro]

    def visit(section: Section, level: int) -> None:
        parts.append(f"{'#' * level} {markdown_escape(section.title)}")
        parts.extend(t for t in map(_block_markdown, section.blocks) if t)
        for sub in section.subsections:
            visit(sub, level + 1)

    for section in document.sections:
        visit(section, 2)
    return "\n\n".join(p for p in parts if p) + "\n"


def table_csv(table: Table) -> str:
    """A table as CSV: plain cell texts, a ``<column> se`` column after each column with a
    ``± s.e.`` part, and formula-like text neutralised for spreadsheets."""
    cells = [[as_cell(c) for c in row] for row in table.rows]
    with_se = [any(row[j].se is not None for row in cells) for j in range(len(table.columns))]
    header: list[str] = []
    for head, se in zip(table.header(), with_se, strict=True):
        header += [head, f"{head} se"] if se else [head]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([spreadsheet_safe(h) for h in header])
    for row in cells:
        out: list[str] = []
        for c, se in zip(row, with_se, strict=True):
            text = f"{c.text} {c.flag}" if c.flag else c.text
            out += [text, c.se or ""] if se else [text]
        writer.writerow([spreadsheet_safe(v) for v in out])
    return buffer.getvalue()


def _block_json(block: Block) -> dict[str, Any]:
    if isinstance(block, Table):
        return {
            "type": "table",
            "key": block.key,
            "title": block.title,
            "columns": block.header(),
            "rows": block.text_rows(),
            "note": block.note,
        }
    if isinstance(block, Figure):
        return {"type": "figure", "caption": block.caption, "path": block.path}
    if isinstance(block, Settings):
        return {"type": "settings", "pairs": [list(p) for p in block.pairs]}
    if isinstance(block, Items):
        return {"type": "items", "items": list(block.items)}
    if isinstance(block, Raw):
        return {"type": "raw", "text": block.text}
    return {"type": type(block).__name__.lower(), "text": block.text}


def to_json(document: Document) -> str:
    """The document's structure and cell texts as JSON (figures by path, no inline SVG)."""

    def section(s: Section) -> dict[str, Any]:
        return {
            "title": s.title,
            "blocks": [_block_json(b) for b in s.blocks],
            "subsections": [section(x) for x in s.subsections],
        }

    data = {
        "title": document.title,
        "subtitle": document.subtitle,
        "warnings": list(document.warnings),
        "intro": [_block_json(b) for b in document.intro],
        "sections": [section(s) for s in document.sections],
    }
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


__all__ = [
    "markdown_escape",
    "table_csv",
    "table_markdown",
    "table_text",
    "to_json",
    "to_markdown",
    "to_text",
]
