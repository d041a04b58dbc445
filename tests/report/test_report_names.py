"""Policy labels in the report: a user policy shows its short name, its spec stays its identity,
two policies never share a label, and long labels do not take over the figures."""

from __future__ import annotations

import re
from html import escape
from pathlib import Path

import pytest
from pb_report_rows import profile_world, read_rows, roster_size, synthetic_rows, write_rows

from prefduel.report import build_report
from prefduel.report.labels import fit_labels
from prefduel.runner.sweep import sweep

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "my_policy.py"
USER_SPEC = f"{EXAMPLE}:RaterWithWins:weight=3"
USER_LABEL = "rater-with-wins:weight=3"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """random, notransfer and the example user policy on a toy profile world, 2 seeds."""
    base = tmp_path_factory.mktemp("names")
    world = profile_world(base / "world")
    results = base / "results.jsonl"
    policies = ["random", "notransfer", USER_SPEC]
    sweep([world], [0, 1], policies, str(results), jobs=1, progress=False)
    result = build_report(results, base / "out")
    html = result.html.read_text(encoding="utf-8")
    return {"result": result, "html": html, "results": results, "base": base}


def _section(html: str, anchor: str) -> str:
    start = html.index(f'<h2 id="{anchor}">')
    return html[start : html.index("<h2 ", start + 1)]


def test_user_policy_is_shown_by_its_short_name(built):
    html = built["html"]
    board = _section(html, "leaderboard")
    assert re.search(rf"</span>{re.escape(USER_LABEL)}</td>", board)
    for anchor in ("gains", "profiles"):
        assert f"</span>{USER_LABEL}</t" in _section(html, anchor), anchor
    # the spec is written out once where the label is introduced, and in the settings
    assert escape(USER_SPEC) in board and f"{USER_LABEL}" in board


def test_the_spec_stays_the_identity(built):
    world = built["result"].worlds[0]
    assert USER_SPEC in world.policies
    assert {g["policy"] for g in world.gains} == {USER_SPEC, "notransfer"}
    assert {r["policy"] for r in read_rows(built["results"])} >= {USER_SPEC}
    # filters take the spec, as in `prefduel stats --policies`
    again = build_report(built["results"], built["base"] / "filtered", policies=USER_SPEC)
    assert again.worlds[0].policies == [USER_SPEC]


def _tick_label_share(fig, axis: str) -> tuple[float, float]:
    """How much of the figure's height (x ticks) or width (y ticks) the tick labels take, and
    their size relative to the plot area's (the cells of the heatmap)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    ax = fig.axes[0]
    labels = ax.get_xticklabels() if axis == "x" else ax.get_yticklabels()
    boxes = [t.get_window_extent(renderer) for t in labels if t.get_text()]
    area = ax.get_window_extent(renderer)
    if axis == "x":
        size = max(b.height for b in boxes)
        return size / fig.bbox.height, size / area.height
    size = max(b.width for b in boxes)
    return size / fig.bbox.width, size / area.width


def test_long_labels_do_not_take_over_the_heatmap(built):
    """With the spec as its label, the user policy's tick label took the whole height of this
    3-profile heatmap (0.997 of it) and squashed the cells; now it is cut, and the short name
    takes under a third."""
    from prefduel.report.figures import heatmap_figure, policy_colors

    table = built["result"].worlds[0].profiles
    colors = policy_colors(table.policies, "random")
    specs = {p: p for p in table.policies}  # the worst case: the full spec as the label
    fig = heatmap_figure(table, colors, labels=specs)
    texts = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert len(set(texts)) == len(texts) and any("…" in t for t in texts)
    assert _tick_label_share(fig, "x")[0] < 0.4
    short = heatmap_figure(table, colors, labels=built["result"].labels)
    texts = [t.get_text().replace("\n", ":") for t in short.axes[0].get_xticklabels()]
    assert USER_LABEL in texts
    of_figure, of_cells = _tick_label_share(short, "x")
    assert of_figure < 0.3 and of_cells < 0.75


def test_long_labels_do_not_take_over_the_paired_gains(built):
    from prefduel.report.figures import forest_figure, policy_colors

    worlds = built["result"].worlds
    colors = policy_colors(worlds[0].policies, "random")
    specs = {p: p for p in worlds[0].policies}
    assert _tick_label_share(forest_figure(worlds, colors, "random", labels=specs), "y")[0] < 0.4
    short = forest_figure(worlds, colors, "random", labels=built["result"].labels)
    assert USER_LABEL in [t.get_text() for t in short.axes[0].get_yticklabels()]
    assert _tick_label_share(short, "y")[0] < 0.3


def test_two_user_policies_with_one_name_get_two_labels(tmp_path):
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "pol.py").write_text('class P:\n    name = "same"\n')
    specs = [f"{tmp_path / 'a' / 'pol.py'}:P", f"{tmp_path / 'b' / 'pol.py'}:P"]
    levels = {"random": 0.3, specs[0]: 0.2, specs[1]: 0.25}
    rows = synthetic_rows("dev", [0, 1], levels, roster_size("dev"))
    path = write_rows(tmp_path / "r.jsonl", rows)
    result = build_report(path, tmp_path / "out", figures=False)
    labels = result.labels
    assert labels[specs[0]] != labels[specs[1]]
    html = result.html.read_text()
    board = _section(html, "leaderboard")
    for spec in specs:
        assert f"</span>{escape(labels[spec])}</td>" in board


@pytest.mark.parametrize("width", [12, 20, 30])
def test_fit_labels_shortens_and_keeps_them_distinct(width):
    names = [
        "coduel:bank=16,em_chunk=200,gate=off,lookahead=2",
        "coduel:bank=16,em_chunk=200,gate=off,lookahead=3",
        "notransfer",
        "a-very-long-policy-name-that-goes-on-and-on",
    ]
    fitted = fit_labels(names, width)
    assert len(set(fitted.values())) == len(names)
    assert fitted["notransfer"] == "notransfer"
    for name, label in fitted.items():
        if len(name) > width:
            assert "…" in label and len(label) <= width
    # the two coduel settings differ at the end: the end is kept
    assert fitted[names[0]].endswith("2") and fitted[names[1]].endswith("3")


def test_a_dollar_in_a_policy_name_is_drawn_as_text(tmp_path):
    """matplotlib reads '$...$' as mathematics: a malformed one crashed the figures."""
    world = profile_world(tmp_path / "world")
    policies = {"random": 1.0, "a$\\frac{b$": 0.5, "other$x^2$": 0.7}
    rows = synthetic_rows(world, [0, 1], policies, n=roster_size(world))
    result = build_report(write_rows(tmp_path / "r.jsonl", rows), tmp_path / "out")
    assert len(result.figures) >= 2 and not result.figures_skipped
