"""The two figures of the PrefDisco report, as small self-contained SVG strings.

`norm_align_bars` draws NormAlign per group (task source or attribute) as horizontal bars with
interval whiskers; `questions_scatter` draws questions asked against the PrefAlign gain of each
instance. Both are pure functions of the report data (no randomness, no fonts fetched): the
HTML page inlines them and ``write_report`` also saves them as ``figures/*.svg`` for the
Markdown page. Labels are escaped, so task and attribute names cannot inject markup.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any


def norm_align_bars(groups: Sequence[Mapping[str, Any]], label_key: str) -> str:
    """Horizontal bars of NormAlign with interval whiskers ("" if no group has a value).

    Args:
        groups: Report rows (``by_task`` or ``by_attribute``) with ``norm_align``, ``lo``,
            ``hi`` and a label.
        label_key: The row field that names the bar (``source`` or ``attribute``).
    """
    items = [g for g in groups if g.get("norm_align") is not None]
    if not items:
        return ""
    values = [g["norm_align"] for g in items]
    lows = [g["lo"] if g.get("lo") is not None else g["norm_align"] for g in items]
    highs = [g["hi"] if g.get("hi") is not None else g["norm_align"] for g in items]
    lo, hi = min([0.0, *lows, -10.0]), max([100.0, *highs])
    width, left, row = 640, 170, 22
    height = row * len(items) + 30

    def x(v: float) -> float:
        return left + (width - left - 20) * (v - lo) / (hi - lo)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-size="11" role="img">',
        f'<line x1="{x(0):.1f}" y1="0" x2="{x(0):.1f}" y2="{height - 20}" stroke="#888"/>',
        f'<line x1="{x(100):.1f}" y1="0" x2="{x(100):.1f}" y2="{height - 20}" stroke="#bbb" '
        'stroke-dasharray="3,3"/>',
        f'<text x="{x(0):.1f}" y="{height - 5}" text-anchor="middle">0</text>',
        f'<text x="{x(100):.1f}" y="{height - 5}" text-anchor="middle">100 (oracle)</text>',
    ]
    for i, (g, v, a, b) in enumerate(zip(items, values, lows, highs, strict=True)):
        y = i * row + 4
        colour = "#c0504d" if v < 0 else "#4f81bd"
        x0, x1 = sorted((x(0), x(v)))
        parts += [
            f'<text x="{left - 6}" y="{y + 12}" text-anchor="end">'
            f"{html.escape(str(g[label_key]))}</text>",
            f'<rect x="{x0:.1f}" y="{y}" width="{max(x1 - x0, 1):.1f}" height="14" '
            f'fill="{colour}"/>',
            f'<line x1="{x(a):.1f}" y1="{y + 7}" x2="{x(b):.1f}" y2="{y + 7}" stroke="#222"/>',
        ]
    parts.append("</svg>")
    return "".join(parts)


def questions_scatter(points: Sequence[Mapping[str, Any]]) -> str:
    """Questions asked (x) vs PrefAlign gain (y), jittered deterministically ("" if no point).

    Args:
        points: ``{"questions": int, "gain": float}`` per instance.
    """
    if not points:
        return ""
    width, height, pad = 420, 260, 40
    gains = [p["gain"] for p in points]
    qmax = max(5, max(p["questions"] for p in points))
    gmin, gmax = min([-0.5, *gains]), max([0.5, *gains])

    def px(q: float) -> float:
        return pad + (width - 2 * pad) * q / qmax

    def py(g: float) -> float:
        return height - pad - (height - 2 * pad) * (g - gmin) / (gmax - gmin)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        'font-size="11" role="img">',
        f'<line x1="{pad}" y1="{py(0):.1f}" x2="{width - pad}" y2="{py(0):.1f}" stroke="#888"/>',
    ]
    for q in range(qmax + 1):
        parts.append(
            f'<text x="{px(q):.1f}" y="{height - pad + 15}" text-anchor="middle">{q}</text>'
        )
    parts.append(
        f'<text x="{width / 2}" y="{height - 5}" text-anchor="middle">questions asked</text>'
    )
    parts.append(f'<text x="5" y="{pad - 10}">gain (PrefAlign)</text>')
    for i, p in enumerate(points):
        # a fixed jitter, so that the same report always draws the same picture
        jitter = ((i * 37) % 11 - 5) / 40
        parts.append(
            f'<circle cx="{px(p["questions"] + jitter):.1f}" cy="{py(p["gain"]):.1f}" r="3" '
            'fill="#4f81bd" fill-opacity="0.6"/>'
        )
    parts.append("</svg>")
    return "".join(parts)


__all__ = ["norm_align_bars", "questions_scatter"]
