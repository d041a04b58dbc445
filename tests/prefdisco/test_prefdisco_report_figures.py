"""The PrefDisco report's figures: every label inside the picture (measured with a real font's
metrics, not the drawing code's own estimate), a y axis with ticks on the scatter plot, and
axes whose ticks place the marks where their values say."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from prefduel.prefdisco.report.figures import norm_align_bars, questions_scatter

SVG = "{http://www.w3.org/2000/svg}"
FONT = "DejaVu Sans"  # a wide common sans-serif: a label that fits in it fits in most


def _measure():
    textpath = pytest.importorskip("matplotlib.textpath")
    font_manager = pytest.importorskip("matplotlib.font_manager")
    to_path = textpath.TextToPath()

    def measure(text: str, size: float) -> tuple[float, float, float]:
        prop = font_manager.FontProperties(family=FONT, size=size)
        return to_path.get_text_width_height_descent(text, prop, ismath=False)

    return measure


def _texts(svg: str) -> tuple[ET.Element, list[ET.Element]]:
    root = ET.fromstring(svg)
    return root, list(root.iter(f"{SVG}text"))


def _outside(svg: str) -> list[str]:
    """Labels whose box (in DejaVu Sans) crosses the figure's edge, with the box."""
    measure = _measure()
    root, texts = _texts(svg)
    width, height = float(root.get("width")), float(root.get("height"))
    size = float(root.get("font-size"))
    bad = []
    for t in texts:
        assert t.get("transform") is None, "rotated labels are not measured here"
        w, h, d = measure(t.text or "", float(t.get("font-size", size)))
        x, y = float(t.get("x")), float(t.get("y")) + _em(t.get("dy"), size)
        shift = {"start": 0.0, "middle": w / 2, "end": w}[t.get("text-anchor", "start")]
        left, right, top, bottom = x - shift, x - shift + w, y - (h - d), y + d
        if left < 0 or right > width or top < 0 or bottom > height:
            bad.append(
                f"{t.text!r}: x {left:.0f}..{right:.0f} of {width:.0f}, "
                f"y {top:.0f}..{bottom:.0f} of {height:.0f}"
            )
    return bad


def _em(shift: str | None, size: float) -> float:
    if shift is None:
        return 0.0
    return float(shift.removesuffix("em")) * size if shift.endswith("em") else float(shift)


def _group(label: str, value: float, lo: float, hi: float) -> dict:
    return {"source": label, "norm_align": value, "lo": lo, "hi": hi}


# the report's own case: no whisker beyond 100, so 100 is the right edge of the axis
TASKS = [
    _group("builtin-commonsense", 2.1, -20.6, 43.5),
    _group("builtin-math", -7.1, -24.7, 2.6),
    _group("builtin-science", 0.0, 0.0, 0.0),
]


def test_every_label_of_the_bar_chart_lies_inside_the_figure():
    assert _outside(norm_align_bars(TASKS, "source")) == []


def test_long_group_names_fit_too_and_keep_their_full_name_as_a_tooltip():
    name = "a-user-benchmark-with-a-rather-long-descriptive-source-name-v2"
    svg = norm_align_bars([*TASKS, _group(name, 40.0, 10.0, 180.0)], "source")
    assert _outside(svg) == []
    root, _ = _texts(svg)
    assert name in [t.text for t in root.iter(f"{SVG}title")]


def test_every_label_of_the_scatter_plot_lies_inside_the_figure():
    points = [{"questions": q, "gain": g} for q, g in [(1, -0.6), (1, 1.2), (3, 0.25), (5, 0.4)]]
    assert _outside(questions_scatter(points)) == []


def _ticks(svg: str, axis: str) -> list[tuple[float, float]]:
    """(value, position) of the numeric labels of one axis (``x``: the bottom row; ``y``: the
    right-aligned column at the left)."""
    _, texts = _texts(svg)
    numeric = [t for t in texts if re.fullmatch(r"[−-]?\d+(\.\d+)?", t.text or "")]
    if axis == "y":
        return [
            (float(t.text.replace("−", "-")), float(t.get("y")))
            for t in numeric
            if t.get("text-anchor") == "end"
        ]
    return [
        (float(t.text.replace("−", "-")), float(t.get("x")))
        for t in numeric
        if t.get("text-anchor") == "middle"
    ]


def _linear(ticks: list[tuple[float, float]]):
    (v0, p0), (v1, p1) = ticks[0], ticks[-1]
    return lambda v: p0 + (p1 - p0) * (v - v0) / (v1 - v0)


def test_the_scatter_plot_has_a_y_axis_whose_ticks_place_the_points():
    gains = [-0.6, -0.1, 0.0, 0.3, 1.2]
    svg = questions_scatter([{"questions": 2, "gain": g} for g in gains])
    ticks = sorted(_ticks(svg, "y"))
    assert len(ticks) >= 3, "the y axis needs numbered ticks"
    assert [p for _, p in ticks] == sorted((p for _, p in ticks), reverse=True)  # up = more
    assert ticks[0][0] <= min(gains) and ticks[-1][0] >= max(gains)  # the data are on the axis
    at = _linear(ticks)
    for v, p in ticks:
        assert p == pytest.approx(at(v), abs=0.2)  # evenly spaced: one linear scale
    root, _ = _texts(svg)
    drawn = sorted(float(c.get("cy")) for c in root.iter(f"{SVG}circle"))
    assert drawn == pytest.approx(sorted(at(g) for g in gains), abs=0.2)
    labels = [t.text for t in root.iter(f"{SVG}text")]
    assert any("gain" in (label or "") for label in labels)


def test_the_bar_chart_has_an_x_axis_whose_ticks_place_the_bars():
    svg = norm_align_bars([_group("a", 40.0, 10.0, 80.0), _group("b", -20.0, -30.0, 5.0)], "source")
    ticks = sorted(_ticks(svg, "x"))
    values = [v for v, _ in ticks]
    assert 0.0 in values and 100.0 in values and len(ticks) >= 3
    at = _linear(ticks)
    root, texts = _texts(svg)
    bars = list(root.iter(f"{SVG}rect"))
    assert float(bars[0].get("x")) == pytest.approx(at(0), abs=0.2)
    assert float(bars[0].get("x")) + float(bars[0].get("width")) == pytest.approx(at(40), abs=0.2)
    assert float(bars[1].get("x")) == pytest.approx(at(-20), abs=0.2)
    assert any("oracle" in (t.text or "") and "baseline" in (t.text or "") for t in texts)
