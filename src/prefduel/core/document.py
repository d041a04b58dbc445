"""One document model for every report of the package, with text, Markdown, CSV and JSON writers.

A report (``prefduel stats``, ``prefduel report``, ``prefduel rank``, ``prefduel prefdisco
report``) is built once as a `Document`: sections holding blocks (paragraphs, bullet lists,
tables, figures, settings, preformatted text). Each output format is a writer over that one
model, so numbers are formatted once (`number`, `Cell`) and every HTML page shares one
stylesheet (`prefduel.core.document_html.to_html`); the plain-text formats are in
`prefduel.core.document_text`.

Every report adds its sections the same way: it lists its section builders in order (a
``SECTIONS`` tuple of functions from the report's inputs to sections, `SectionBuilder`) and
`build_sections` calls them.

Text is plain: writers escape it for their format. A `Cell` carries the presentation hints a
table needs (a ``± s.e.`` part, a tone such as ``good``/``bad``, a color swatch, a 0-100 bar);
text writers keep only what reads as text.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

#: What a missing number (None or nan) prints as.
NO_VALUE = "–"

Tone = Literal["", "good", "bad", "best", "worst", "muted", "warn"]
Align = Literal["left", "right"]
ParagraphStyle = Literal["plain", "lead", "note", "warn"]


def number(
    value: float | None,
    digits: int,
    sign: bool = False,
    suffix: str = "",
    *,
    scientific: bool = False,
) -> str:
    """``value`` with ``digits`` decimals (a ``+`` sign if asked), `NO_VALUE` if None or nan.

    Args:
        value: The number.
        digits: Decimals.
        sign: Print ``+`` for positive values.
        suffix: Appended to a present value (e.g. ``%``).
        scientific: Print a nonzero value below 1e-3 or from 1e5 in magnitude as ``1.23e-05``
            (two decimals), so that tiny p-values do not read as ``0.000``.
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return NO_VALUE
    if scientific and value != 0 and (abs(value) < 1e-3 or abs(value) >= 1e5):
        return (f"{value:+.2e}" if sign else f"{value:.2e}") + suffix
    return (f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}") + suffix


@dataclass(frozen=True)
class Cell:
    """One table cell with presentation hints.

    Attributes:
        text: The value as text (already formatted, e.g. by `number`).
        se: A standard error or spread, shown as ``text ± se``.
        tone: ``good``/``bad`` (colored text), ``best``/``worst`` (shaded), ``muted``, ``warn``.
        color: A CSS color for a swatch before the text (HTML only).
        bar: A 0-100 value drawn as a small bar (HTML only).
        flag: Short text after the value in a warning color (e.g. ``⚠ 2 cross-version``).
    """

    text: str
    se: str | None = None
    tone: Tone = ""
    color: str | None = None
    bar: float | None = None
    flag: str = ""

    def plain(self) -> str:
        """The cell as plain text (value, ``± se``, flag)."""
        out = self.text if self.se is None else f"{self.text} ± {self.se}"
        return f"{out} {self.flag}" if self.flag else out


CellValue = Cell | str | int | float | None


def as_cell(value: CellValue) -> Cell:
    """A `Cell` from a cell value: None is `NO_VALUE`, numbers use ``str``."""
    if isinstance(value, Cell):
        return value
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return Cell(NO_VALUE)
    return Cell(str(value))


_NUMERIC = re.compile(r"[+\-−]?(\d[\d,]*\.?\d*|\.\d+)([eE][+-]?\d+)?\s*%?")


def is_numeric(text: str) -> bool:
    """Whether ``text`` reads as a number (``1.5``, ``-3``, ``+2.0%``, ``1,024``)."""
    return bool(_NUMERIC.fullmatch(text.strip()))


@dataclass
class Table:
    """A table: column headers and rows of cells.

    Attributes:
        columns: Header texts (or cells, for swatches in headers).
        rows: Rows of cell values, each as long as ``columns``.
        title: Caption (HTML) / heading line (text).
        note: A sentence under the table.
        row_tones: Per-row tone (``ref`` rows are italic and muted in HTML, ``total`` rows
            bold under a rule), or empty.
        key: Machine name, used for CSV file names and JSON keys.
        collapsed: Shown behind a "Table" disclosure in HTML.
        align: Per column ``left`` or ``right``, overriding the detection of number columns
            (e.g. to right-align intervals such as ``[0.1, 0.3]``); empty: detected.
        header_rule: Text writers underline the header with dashes.
        ref_marker: How plain formats mark ``ref`` rows: text writers append it to the row's
            first cell (e.g. ``[ref]``) and Markdown sets that cell in italics; empty: unmarked.
        escape_emphasis: Markdown also escapes ``*``, ``_`` and backticks in cells, so names
            such as ``my_policy.py`` never turn into emphasis or code.
    """

    columns: Sequence[CellValue]
    rows: Sequence[Sequence[CellValue]]
    title: str = ""
    note: str = ""
    row_tones: Sequence[str] = ()
    key: str = ""
    collapsed: bool = False
    align: Sequence[Align] = ()
    header_rule: bool = False
    ref_marker: str = ""
    escape_emphasis: bool = False

    def __post_init__(self) -> None:
        if self.align and len(self.align) != len(self.columns):
            raise ValueError(
                f"table {self.key or self.title!r}: {len(self.align)} alignments for "
                f"{len(self.columns)} columns"
            )
        for index, row in enumerate(self.rows):
            if len(row) != len(self.columns):
                raise ValueError(
                    f"table {self.key or self.title!r}: row {index} has {len(row)} cells for "
                    f"{len(self.columns)} columns"
                )

    def header(self) -> list[str]:
        """Header texts."""
        return [as_cell(c).plain() for c in self.columns]

    def text_rows(self) -> list[list[str]]:
        """Rows as plain text."""
        return [[as_cell(c).plain() for c in row] for row in self.rows]

    def numeric_columns(self) -> list[bool]:
        """Per column, whether it is right-aligned: as ``align`` says, else whether every
        non-missing cell reads as a number."""
        if self.align:
            return [a == "right" for a in self.align]
        flags = []
        for j in range(len(self.columns)):
            texts = [as_cell(row[j]).text for row in self.rows]
            present = [t for t in texts if t not in ("", NO_VALUE)]
            flags.append(bool(present) and all(is_numeric(t) for t in present))
        return flags


@dataclass
class Paragraph:
    """A paragraph: ``lead`` (section intro), ``note`` (small), ``warn`` (warning color)."""

    text: str
    style: ParagraphStyle = "plain"


@dataclass
class Items:
    """A bullet list."""

    items: Sequence[str]
    style: ParagraphStyle = "plain"


@dataclass
class Figure:
    """A figure.

    Attributes:
        caption: What it shows.
        svg: Inline SVG markup for HTML (trusted: produced by the package's own plotting).
        path: Relative path of the figure file, linked from Markdown (e.g. ``figures/a.svg``).
        files: Files to list under the figure in HTML.
    """

    caption: str
    svg: str = ""
    path: str = ""
    files: Sequence[str] = ()


@dataclass
class Settings:
    """Name/value pairs (a definition list in HTML)."""

    pairs: Sequence[tuple[str, str]]


@dataclass
class Preformatted:
    """Preformatted text (JSON, a command), shown as it is; ``summary`` collapses it in HTML."""

    text: str
    summary: str = ""


@dataclass
class Raw:
    """An HTML-only fragment (e.g. an interactive widget) with its text-format stand-in.

    Attributes:
        html: Trusted HTML built by the package.
        text: What text and Markdown writers print instead ("" for nothing).
    """

    html: str
    text: str = ""


Block = Paragraph | Items | Table | Figure | Settings | Preformatted | Raw


@dataclass
class Section:
    """A titled section of blocks, optionally with subsections (one level down).

    Attributes:
        title: Heading.
        blocks: Content under the heading.
        id: HTML anchor (default: from the title).
        subsections: Nested sections.
        in_toc: Listed in the HTML page's navigation bar.
    """

    title: str
    blocks: list[Block] = field(default_factory=list)
    id: str = ""
    subsections: list[Section] = field(default_factory=list)
    in_toc: bool = True

    def anchor(self) -> str:
        """The HTML anchor: ``id`` or a slug of the title."""
        return self.id or (re.sub(r"[^a-z0-9]+", "-", self.title.lower()).strip("-") or "s")


@dataclass
class Document:
    """A whole report.

    Attributes:
        title: Page title.
        sections: Top-level sections.
        intro: Blocks before the first section.
        subtitle: A line under the title (e.g. the input file).
        chips: Short facts shown in the HTML header.
        warnings: Shown first, in a warning box.
        tab_title: The HTML ``<title>`` (default: ``title``).
        footer: Closing line of the HTML page.
    """

    title: str
    sections: list[Section] = field(default_factory=list)
    intro: list[Block] = field(default_factory=list)
    subtitle: str = ""
    chips: Sequence[str] = ()
    warnings: Sequence[str] = ()
    tab_title: str = ""
    footer: str = "Generated by prefduel · a single offline file: styles and figures are inline"

    def tables(self) -> list[Table]:
        """Every table, in reading order."""
        found: list[Table] = []

        def visit(blocks: Sequence[Block], subsections: Sequence[Section]) -> None:
            found.extend(b for b in blocks if isinstance(b, Table))
            for sub in subsections:
                visit(sub.blocks, sub.subsections)

        visit(self.intro, self.sections)
        return found


#: A section of a report, built from the report's inputs: one section, several, or none
#: (nothing to show). A report lists its builders in order (``SECTIONS``) and
#: `build_sections` calls them: adding a section to any report is adding one builder.
SectionBuilder = Callable[[Any], "Section | Sequence[Section] | None"]


def build_sections(inputs: Any, builders: Sequence[SectionBuilder]) -> list[Section]:
    """Every builder's sections, in the builders' order (a builder may give none or several).

    Args:
        inputs: What the report is built from (its data, figures and options), given to each
            builder as it is.
        builders: The report's section builders (its ``SECTIONS``).
    """
    out: list[Section] = []
    for build in builders:
        made = build(inputs)
        if made is None:
            continue
        out.extend([made] if isinstance(made, Section) else made)
    return out


__all__ = [
    "NO_VALUE",
    "Block",
    "Cell",
    "CellValue",
    "Document",
    "Figure",
    "Items",
    "Paragraph",
    "Preformatted",
    "Raw",
    "Section",
    "SectionBuilder",
    "Settings",
    "Table",
    "as_cell",
    "build_sections",
    "is_numeric",
    "number",
]
