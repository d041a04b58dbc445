"""The report page: self-contained, every section, the numbers of the stats functions, figures."""

from __future__ import annotations

import platform
import re
import xml.etree.ElementTree as ET
from collections import Counter
from html import escape
from pathlib import Path

import numpy as np
import pytest
from pb_report_rows import sweep_results

from prefduel import __version__
from prefduel.report import build_report
from prefduel.report.compute import group_breakdown
from prefduel.runner.store import ResultsStore
from prefduel.stats.paired import paired_gains, profile_breakdown, round_curve
from prefduel.stats.table import summarize_rows
from prefduel.worlds import get_world
from prefduel.worlds.world import load_world

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A report of random, notransfer and pooled on a toy profile world, 3 seeds."""
    base = tmp_path_factory.mktemp("report")
    results, world = sweep_results(base)
    result = build_report(results, base / "out", command="prefduel report x --out y")
    html = result.html.read_text(encoding="utf-8")
    rows = ResultsStore(results, repair=False).rows()
    return {"result": result, "html": html, "rows": rows, "world": world, "out": base / "out"}


def test_writes_one_html_file_and_figures(built):
    out = built["out"]
    assert built["result"].html == out / "report.html"
    names = sorted(p.name for p in (out / "figures").iterdir())
    stem = names[0].split("_curves_")[-1].rsplit(".", 1)[0]
    assert names == sorted(
        [
            f"learning_curves_{stem}.png",
            f"learning_curves_{stem}.svg",
            "paired_gains.png",
            "paired_gains.svg",
            f"profiles_{stem}.png",
            f"profiles_{stem}.svg",
        ]
    )
    assert sorted(p.name for p in built["result"].figures) == names


def test_png_and_svg_files_are_valid(built):
    for path in built["result"].figures:
        data = path.read_bytes()
        assert len(data) > 2000, path
        if path.suffix == ".png":
            assert data.startswith(PNG_MAGIC)
            width, height = np.frombuffer(data[16:24], dtype=">u4")
            assert width > 300 and height > 150
        else:
            root = ET.fromstring(data)
            assert root.tag == "{http://www.w3.org/2000/svg}svg"


def test_html_is_self_contained(built):
    html = built["html"]
    assert "<script src" not in html.lower()
    assert not re.search(r"<link\b", html, re.I)
    assert not re.search(r"\b(?:src|href)\s*=\s*[\"']?\s*(?:https?:)?//", html, re.I)
    assert not re.search(r"url\(\s*[\"']?(?:https?:)?//", html, re.I)
    assert "@import" not in html and "@font-face" not in html
    assert "<img" not in html  # figures are inline SVG, not files next to the page
    assert html.count("<svg ") == 3
    ids = Counter(re.findall(r'\bid="([^"]+)"', html))
    assert [i for i, n in ids.items() if n > 1] == []
    for ref in re.findall(r'href="#([^"]+)"', html):
        assert ref in ids, ref


def test_sections_are_there(built):
    html = built["html"]
    for anchor, title in [
        ("leaderboard", "Leaderboard"),
        ("curves", "Learning curves"),
        ("gains", "Paired gains vs random"),
        ("profiles", "Per-profile breakdown"),
        ("settings", "Settings and versions"),
    ]:
        assert f'<h2 id="{anchor}">{title}</h2>' in html


def test_leaderboard_numbers_are_summarize_rows(built):
    html = built["html"]
    for e in summarize_rows(built["rows"]):
        assert f'{e["score_mean"]:.2f} <span class="se">± {e["score_se"]:.2f}</span>' in html
        assert f'{e["excess_mean"]:.1f} <span class="se">± {e["excess_se"]:.1f}</span>' in html
        row_class = "ref" if e["kind"] == "reference" else "pol"
        assert re.search(rf'<tr class="{row_class}">.*?{re.escape(e["policy"])}</td>', html)
    assert html.count('<tr class="ref">') == 9  # the references, set in italics by the CSS
    assert "tr.ref td { font-style: italic;" in html


def test_paired_gains_are_paired_gains(built):
    html = built["html"]
    gains = paired_gains([r for r in built["rows"] if r["kind"] == "policy"], "random")
    assert {g["policy"] for g in gains} == {"notransfer", "pooled"}
    for g in gains:
        assert g["n"] == 3
        assert f"{g['change_mean']:+.1f}%" in html
        assert f"[{g['t_lo']:+.1f}, {g['t_hi']:+.1f}]" in html
        assert f"[{g['boot_lo']:+.1f}, {g['boot_hi']:+.1f}]" in html
    # the computed entries carry the stats function's numbers, plus the seed counts
    for g, mine in zip(gains, built["result"].worlds[0].gains, strict=True):
        assert {k: mine[k] for k in g} == g
        assert mine["policy_seeds"] == mine["competitor_seeds"] == 3


def test_profile_numbers_are_profile_breakdown(built):
    html = built["html"]
    world = load_world(built["world"])
    table = built["result"].worlds[0].profiles
    assert table is not None and table.grouping == "profile"
    assert set(table.groups) == {"alpha", "beta", "gamma"}
    for policy in ("random", "notransfer", "pooled"):
        rows = [r for r in built["rows"] if r["world"] == world.name or r["policy"] == policy]
        for entry in profile_breakdown(rows, lambda s: get_world(built["world"], s), policy):
            assert table.entries[(entry["profile"], policy)] == entry
            assert f'{entry["excess_mean"]:.3f} <span class="se">± {entry["excess_se"]:.3f}' in html


def test_learning_curves_are_learning_curve(built):
    from prefduel.stats.paired import learning_curve

    report = built["result"].worlds[0]
    rows = [r for r in built["rows"] if r["policy"] == "pooled"]
    expect = learning_curve(rows, report.world, "pooled", window=25)
    np.testing.assert_array_equal(report.curves["pooled"]["mean"], expect["mean"])
    np.testing.assert_array_equal(report.curves["pooled"]["lo"], expect["lo"])
    per_round = np.array([r["excess_per_round"] for r in rows])
    np.testing.assert_allclose(report.rounds["pooled"]["mean"], per_round.mean(axis=0))
    assert report.rounds["pooled"]["round"][0] == 1 and report.rounds["pooled"]["n"] == 3


def test_settings_and_versions(built):
    html = built["html"]
    settings = html[html.index('<h2 id="settings">') :]
    assert f"{__version__} (36 rows)" in settings
    assert platform.python_version() in settings
    assert np.__version__ in settings
    import matplotlib

    assert matplotlib.__version__ in settings
    assert "prefduel report x --out y" in settings
    assert "0-2 (3)" in settings  # seeds per world
    assert escape(built["world"]) in settings
    assert re.search(r"<dt>generated</dt><dd>\d{4}-\d\d-\d\dT", settings)


def test_policy_colors_are_the_same_in_table_and_figures(built):
    html = built["html"]
    for policy in ("notransfer", "pooled"):
        color = re.search(
            rf'<span class="sw" style="background:(#[0-9a-f]{{6}})"></span>{policy}</td>', html
        ).group(1)
        for path in built["result"].figures:
            if path.suffix == ".svg":
                assert color in path.read_text(), (policy, path.name)
    assert "#6b6b6b" in html and "random" in html  # the competitor is gray


def test_group_breakdown_equals_profile_breakdown_for_single_labels(built):
    world = load_world(built["world"])
    rows = [r for r in built["rows"] if r["policy"] == "notransfer"]
    labels = [[world.students[i]["profile"]] for i in world.student_index]
    mine = group_breakdown(rows, lambda seed: labels)
    for entry in profile_breakdown(rows, lambda seed: world, "notransfer"):
        assert mine[entry["profile"]] == pytest.approx(entry)


def test_round_curve_band_is_a_t_interval():
    from scipy import stats

    rows = [{"excess_per_round": [1.0, 2.0]}, {"excess_per_round": [3.0, 2.0]}]
    curve = round_curve(rows)
    half = stats.t.ppf(0.975, 1) * np.std([1.0, 3.0], ddof=1) / np.sqrt(2)
    assert curve["mean"].tolist() == [2.0, 2.0]
    assert curve["lo"][0] == pytest.approx(2.0 - half) and curve["hi"][1] == 2.0
    single = round_curve(rows[:1])
    assert np.isnan(single["lo"]).all() and single["n"] == 1


def test_inline_svg_ids_do_not_collide(built: dict, tmp_path: Path):
    svgs = re.findall(r"<svg .*?</svg>", built["html"], re.S)
    prefixes = {re.search(r'id="([^"]+?)-', s).group(1) for s in svgs}
    assert len(prefixes) == len(svgs)


def test_the_paired_gains_figure_shows_its_whole_legend_and_label(built):
    """With one world the forest was narrower than its legend and x label, which were cut."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from prefduel.report.figures import forest_figure, policy_colors

    world = built["result"].worlds[0]
    colors = policy_colors(["random", "notransfer", "pooled"], "random")
    fig = forest_figure([world], colors, "random")
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    frame = fig.bbox
    boxes = [fig.legends[0].get_window_extent(renderer), fig._supxlabel.get_window_extent(renderer)]
    for box in boxes:
        assert frame.x0 - 1 <= box.x0 and box.x1 <= frame.x1 + 1, (box, frame)
