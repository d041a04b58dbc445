"""The two figures of the PrefDisco report, as small self-contained SVG strings.

`norm_align_bars` draws NormAlign per group (task source or attribute) as horizontal bars with
interval whiskers on a numbered axis; `questions_scatter` draws questions asked against the
PrefAlign gain of each instance, with numbered x and y axes. Both are pure functions of the
report data (no randomness, no fonts fetched): the HTML page inlines them and ``write_report``
also saves them as ``figures/*.svg`` for the Markdown page. Labels are escaped, so task and
attribute names cannot inject markup.

No font is embedded, so the margins are sized from a deliberately generous estimate of each
label's width (`text_width`): a label that fits in DejaVu Sans or Verdana, the widest common
sans-serif faces, fits in the others too. A group name too long for the label column is
shortened with an ellipsis and keeps its full name as a tooltip.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

#: Font size of every label, in pixels.
FONT_SIZE = 11
#: The widest the label column of the bar chart gets, in pixels.
MAX_LABEL_WIDTH = 260

_FONT = f'font-family="DejaVu Sans, Verdana, Arial, sans-serif" font-size="{FONT_SIZE}"'
# Width per character in em, rounded up from DejaVu Sans (a wide face)
_WIDE, _UPPER, _NARROW, _THIN, _OTHER = 1.0, 0.8, 0.32, 0.45, 0.65
# Half a line down: a tick label centred on its tick (the label's x or y is the tick's)
_MIDDLE = 'dy="0.35em"'


def text_width(text: str, size: float = FONT_SIZE) -> float:
    """A generous estimate of ``text``'s width in pixels at font size ``size``."""
    em = 0.0
    for ch in text:
        if ch in "mwMW@%…":
            em += _WIDE
        elif ch.isupper():
            em += _UPPER
        elif ch in "ijlI.,:;'!|":
            em += _NARROW
        elif ch in " -()[]frt":
            em += _THIN
        else:
            em += _OTHER
    # 5% more for hinting and faces a little wider than DejaVu Sans
    return em * size * 1.05


def _fit(label: str, room: float) -> str:
    """``label``, cut with an ellipsis if wider than ``room`` pixels."""
    if text_width(label) <= room:
        return label
    while label and text_width(label + "…") > room:
        label = label[:-1]
    return label + "…"


def nice_ticks(lo: float, hi: float, most: int = 8) -> list[float]:
    """Evenly spaced round values (steps of 1, 2, 2.5 or 5 x 10^k) from at or below ``lo`` to
    at or above ``hi``, at most about ``most`` of them."""
    raw = (hi - lo) / max(most - 1, 1)
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    first, last = math.floor(lo / step + 1e-9), math.ceil(hi / step - 1e-9)
    return [round(i * step, 10) + 0.0 for i in range(first, last + 1)]


def _tick_text(value: float, ticks: Sequence[float]) -> str:
    step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0
    digits = 0
    while digits < 4 and abs(round(step, digits) - step) > 1e-9:
        digits += 1
    return f"{value + 0.0:.{digits}f}"


def _scale(lo: float, hi: float, start: float, end: float) -> Callable[[float], float]:
    return lambda v: start + (end - start) * (v - lo) / (hi - lo)


def _svg(width: float, height: float, parts: Sequence[str]) -> str:
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'{_FONT} role="img">'
    )
    return head + "".join(parts) + "</svg>"


def _x_axis(
    ticks: Sequence[float], x: Callable[[float], float], top: float, bottom: float
) -> list[str]:
    """Vertical grid lines from ``top`` to ``bottom`` and the numbers under them."""
    parts = []
    for t in ticks:
        parts += [
            f'<line x1="{x(t):.1f}" y1="{top:.1f}" x2="{x(t):.1f}" y2="{bottom:.1f}" '
            'stroke="#eee"/>',
            f'<text x="{x(t):.1f}" y="{bottom + 12:.1f}" text-anchor="middle">'
            f"{_tick_text(t, ticks)}</text>",
        ]
    return parts


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
    ticks = nice_ticks(min([0.0, *lows, -10.0]), max([100.0, *highs]))
    names = [str(g[label_key]) for g in items]
    left = min(max(text_width(n) for n in names), MAX_LABEL_WIDTH) + 20
    right = text_width(_tick_text(ticks[-1], ticks)) / 2 + 8
    width, row = max(640.0, left + 360 + right), 22
    plot = row * len(items) + 4
    height = plot + 38
    x = _scale(ticks[0], ticks[-1], left, width - right)
    parts = _x_axis(ticks, x, 0, plot)
    parts += [
        f'<line x1="{x(0):.1f}" y1="0" x2="{x(0):.1f}" y2="{plot}" stroke="#888"/>',
        f'<line x1="{x(100):.1f}" y1="0" x2="{x(100):.1f}" y2="{plot}" stroke="#999" '
        'stroke-dasharray="3,3"/>',
        f'<text x="{(left + width - right) / 2:.1f}" y="{height - 6}" text-anchor="middle">'
        "NormAlign (0 = baseline, 100 = oracle)</text>",
    ]
    for i, (name, v, a, b) in enumerate(zip(names, values, lows, highs, strict=True)):
        y = i * row + 4
        colour = "#c0504d" if v < 0 else "#4f81bd"
        x0, x1 = sorted((x(0), x(v)))
        shown = _fit(name, MAX_LABEL_WIDTH)
        parts += [
            f"<g><title>{html.escape(name)}</title>" if shown != name else "",
            f'<text x="{left - 6}" y="{y + 7}" {_MIDDLE} text-anchor="end">'
            f"{html.escape(shown)}</text>",
            "</g>" if shown != name else "",
            f'<rect x="{x0:.1f}" y="{y}" width="{max(x1 - x0, 1):.1f}" height="14" '
            f'fill="{colour}"/>',
            f'<line x1="{x(a):.1f}" y1="{y + 7}" x2="{x(b):.1f}" y2="{y + 7}" stroke="#222"/>',
        ]
    return _svg(width, height, parts)


def questions_scatter(points: Sequence[Mapping[str, Any]]) -> str:
    """Questions asked (x) vs PrefAlign gain (y), jittered deterministically ("" if no point).

    Args:
        points: ``{"questions": int, "gain": float}`` per instance.
    """
    if not points:
        return ""
    gains = [p["gain"] for p in points]
    qmax = max(5, max(p["questions"] for p in points))
    yticks = nice_ticks(min([-0.5, *gains]), max([0.5, *gains]), most=7)
    xticks = [float(q) for q in range(qmax + 1)] if qmax <= 10 else nice_ticks(0, qmax)
    ylabels = [_tick_text(t, yticks) for t in yticks]
    left = max(text_width(s) for s in ylabels) + 14
    right = text_width(_tick_text(xticks[-1], xticks)) / 2 + 8
    width, height, top, bottom = 420.0, 280.0, 28.0, 242.0
    px = _scale(0, xticks[-1], left + 10, width - right)
    py = _scale(yticks[0], yticks[-1], bottom, top)
    parts = _x_axis(xticks, px, top, bottom)
    for t, label in zip(yticks, ylabels, strict=True):
        parts += [
            f'<line x1="{left:.1f}" y1="{py(t):.1f}" x2="{width - right:.1f}" y2="{py(t):.1f}" '
            f'stroke="{"#888" if t == 0 else "#eee"}"/>',
            f'<text x="{left - 6:.1f}" y="{py(t):.1f}" {_MIDDLE} text-anchor="end">{label}</text>',
        ]
    parts += [
        f'<line x1="{left:.1f}" y1="{top}" x2="{left:.1f}" y2="{bottom}" stroke="#444"/>',
        f'<line x1="{left:.1f}" y1="{bottom}" x2="{width - right:.1f}" y2="{bottom}" '
        'stroke="#444"/>',
        f'<text x="{(left + width - right) / 2:.1f}" y="{height - 6}" text-anchor="middle">'
        "questions asked</text>",
        '<text x="4" y="14">PrefAlign gain (discovery - baseline)</text>',
    ]
    for i, p in enumerate(points):
        # a fixed jitter, so that the same report always draws the same picture
        jitter = ((i * 37) % 11 - 5) / 40
        parts.append(
            f'<circle cx="{px(p["questions"] + jitter):.1f}" cy="{py(p["gain"]):.1f}" r="3" '
            'fill="#4f81bd" fill-opacity="0.6"/>'
        )
    return _svg(width, height, parts)


__all__ = [
    "FONT_SIZE",
    "MAX_LABEL_WIDTH",
    "nice_ticks",
    "norm_align_bars",
    "questions_scatter",
    "text_width",
]
