"""Matplotlib setup of the report figures: optional import, style, colors, PNG and SVG files."""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prefduel.core.document import Figure as FigureBlock
from prefduel.core.errors import PrefduelError

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

INSTALL_HINT = 'pip install "prefduel[report]"'

#: Colors of policies in order of assignment; the competitor is always `COMPETITOR_COLOR`.
PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#bcbd22",
    "#17becf",
    "#000075",
    "#800000",
    "#469990",
    "#f032e6",
    "#808000",
    "#4363d8",
    "#f58231",
    "#3cb44b",
    "#911eb4",
)
#: Line style of policies by assignment order: the first 9 solid, then dash-dotted.
SOLID_COLORS = 9
DASHDOT = (0, (6, 1.6, 1.6, 1.6))
COMPETITOR_COLOR = "#6b6b6b"
COMPETITOR_DASH = (0, (4, 2))

STYLE = {
    # names come from users' files: '$...$' in a policy name is text, not mathematics
    "text.parse_math": False,
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#e6e6e6",
    "grid.linewidth": 0.7,
    "axes.edgecolor": "#555555",
    "axes.axisbelow": True,
    "legend.frameon": False,
    "xtick.color": "#333333",
    "ytick.color": "#333333",
    "svg.fonttype": "path",
    "figure.dpi": 100,
}
PNG_DPI = 150


class MissingDependencyError(PrefduelError, ImportError):
    """An optional dependency (matplotlib for report figures) is not installed."""


def missing_matplotlib() -> str | None:
    """Why the figures cannot be drawn (matplotlib is not installed, with the fix), or None."""
    try:
        require_matplotlib()
    except MissingDependencyError:
        return f"matplotlib is not installed; for the figures: {INSTALL_HINT}"
    return None


def require_matplotlib() -> Any:
    """Import matplotlib, or explain how to install it.

    Raises:
        MissingDependencyError: matplotlib is not installed (names the extra to install).
    """
    try:
        import matplotlib
        from matplotlib.figure import Figure  # noqa: F401
    except ImportError as exc:
        raise MissingDependencyError(
            f"prefduel report draws its figures with matplotlib, which is not installed; "
            f"install it with: {INSTALL_HINT}"
        ) from exc
    return matplotlib


def style() -> AbstractContextManager:
    """Context with the report's matplotlib style."""
    return require_matplotlib().rc_context(STYLE)


def policy_colors(policies: Sequence[str], competitor: str | None = None) -> dict[str, str]:
    """One color per policy, stable for a given set (sorted names), gray for the competitor."""
    colors = {}
    others = sorted(p for p in dict.fromkeys(policies) if p != competitor)
    for i, policy in enumerate(others):
        colors[policy] = PALETTE[i % len(PALETTE)]
    if competitor is not None:
        colors[competitor] = COMPETITOR_COLOR
    return colors


def line_style(policy: str, colors: dict[str, str], competitor: str | None) -> Any:
    """Dashed for the competitor; dash-dotted for policies past the 9th color; else solid."""
    if policy == competitor:
        return COMPETITOR_DASH
    others = [p for p in colors if p != competitor]
    rank = others.index(policy) if policy in others else 0
    return DASHDOT if rank >= SOLID_COLORS else "solid"


@dataclass
class SavedFigure:
    """A figure written as ``stem.png`` and ``stem.svg``, with the SVG markup for inlining.

    Attributes:
        stem: File name without extension.
        png: Path of the PNG.
        svg: Path of the SVG.
        inline: The SVG element, ids prefixed with ``stem`` so several can share a page.
    """

    stem: str
    png: Path
    svg: Path
    inline: str

    def block(self, caption: str) -> FigureBlock:
        """The figure as a document block: inline SVG for HTML, its SVG file for Markdown,
        both files listed (paths relative to the report folder)."""
        files = (f"figures/{self.png.name}", f"figures/{self.svg.name}")
        return FigureBlock(caption, svg=self.inline, path=files[1], files=files)


_ID = re.compile(r'\bid="([^"]+)"')


def _inline_svg(text: str, prefix: str) -> str:
    """The ``<svg>`` element of a standalone SVG file, with ids made unique by ``prefix``."""
    text = text[text.index("<svg") :]
    text = _ID.sub(lambda m: f'id="{prefix}-{m.group(1)}"', text)
    text = text.replace('href="#', f'href="#{prefix}-').replace("url(#", f"url(#{prefix}-")
    return text.replace("<svg ", f'<svg role="img" aria-label="{prefix}" ', 1).strip()


def save_figure(fig: Figure, directory: Path, stem: str) -> SavedFigure:
    """Write ``fig`` as ``directory/stem.png`` and ``.svg``; return both with the inline SVG.

    The layout is computed once (for the PNG) and then frozen for the SVG.
    """
    matplotlib = require_matplotlib()
    directory.mkdir(parents=True, exist_ok=True)
    png, svg = directory / f"{stem}.png", directory / f"{stem}.svg"
    fig.savefig(png, format="png", dpi=PNG_DPI, metadata={"Software": None})
    fig.set_layout_engine("none")
    buf = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": stem, "svg.fonttype": "path"}):
        fig.savefig(
            buf,
            format="svg",
            metadata={"Date": None, "Creator": None, "Format": None, "Type": None},
        )
    text = buf.getvalue()
    svg.write_text(text, encoding="utf-8")
    return SavedFigure(stem=stem, png=png, svg=svg, inline=_inline_svg(text, stem))
