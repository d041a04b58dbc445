"""The ``prefduel rank`` report: one document, written as HTML (inline figures) and Markdown
(linked figure files), next to the unchanged data files."""

from __future__ import annotations

import json
import re

import pytest
from pb_rank_data import analysis

from prefduel.core.document import Figure, Items, Paragraph, Table
from prefduel.core.document_html import to_html
from prefduel.core.document_text import to_markdown
from prefduel.ranking import write_report
from prefduel.ranking.report_figures import FIGURES
from prefduel.ranking.report_sections import report_document


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """The full report of the shared analysis, written once."""
    pytest.importorskip("matplotlib")
    out = tmp_path_factory.mktemp("rank-report")
    paths = write_report(analysis()[2], out, command="prefduel rank votes.csv --out x")
    return out, paths


def _data() -> dict:
    data = analysis()[2].to_dict()
    data["command"] = "prefduel rank votes.csv"
    return data


def test_markdown_links_the_figure_files_instead_of_inlining_them(written):
    out, paths = written
    markdown = paths["md"].read_text(encoding="utf-8")
    assert "data:image" not in markdown and "base64" not in markdown and "<svg" not in markdown
    linked = re.findall(r"!\[[^\]]+\]\((figures/[a-z]+\.svg)\)", markdown)
    written_files = sorted(f"figures/{p.name}" for p in (out / "figures").iterdir())
    assert sorted(linked) == written_files and len(linked) == 5
    assert all((out / path).stat().st_size > 1000 for path in linked)
    assert len(markdown.encode("utf-8")) < 20_000  # tables only (it was 1.3 MB with data URIs)


def test_html_inlines_every_figure_and_stays_self_contained(written):
    out, paths = written
    page = paths["html"].read_text(encoding="utf-8")
    assert page.count("<svg") == len(list((out / "figures").iterdir())) == 5
    assert not re.search(r"<(script|link|img)\b", page)
    assert not re.search(r"(src|href)=\"https?:", page)
    assert "prefduel rank votes.csv --out x" in page


def test_markdown_and_html_show_the_numbers_of_report_json(written):
    _, paths = written
    data = json.loads(paths["json"].read_text(encoding="utf-8"))
    markdown = paths["md"].read_text(encoding="utf-8")
    page = paths["html"].read_text(encoding="utf-8")
    top = data["global"]["models"][0]
    row = f"| {top['model']} | {top['bt']:.1f} | [{top['bt_lo']:.1f}, {top['bt_hi']:.1f}] |"
    assert row in markdown
    p = data["tests"]["elo_vs_0"]["p"]
    assert p < 1e-3  # a tiny p-value keeps its digits instead of reading as 0.0000
    assert f"| {p:.2e} |" in markdown and f">{p:.2e}<" in page
    assert f"Elo {data['correlation']['elo']['mean']:.3f}, Bradley-Terry" in markdown


def test_each_figure_follows_the_table_of_its_section():
    figures = {name: f"<svg id='{name}'></svg>" for name in FIGURES}
    data = _data()
    document = report_document(data, figures)
    placed = {}
    for section in document.sections:
        kinds = [type(b) for b in section.blocks]
        if Figure in kinds:  # after lead paragraphs (a verdict), the table, then its figure
            assert kinds[-2:] == [Table, Figure], section.title
            assert set(kinds[:-2]) <= {Paragraph}, section.title
            placed[section.blocks[-1].path] = section.title
    assert placed == {
        "figures/ratings.svg": "Global ratings",
        "figures/correlations.svg": "Wilcoxon signed-rank tests",
        "figures/prediction.svg": "Predicting a user's scores from topic + style",
        "figures/topics.svg": (
            f"Topics ({data['topics']['backend']}, {data['topics']['distinct_prompts']} "
            "distinct prompts)"
        ),
        "figures/styles.svg": "Users by style cluster (k-means on meta-styles)",
    }


def test_without_figures_the_report_has_no_figure_blocks_and_lists_its_messages():
    data = _data()
    data["messages"].append("figures omitted: matplotlib is not installed")
    document = report_document(data, {})
    assert not any(isinstance(b, Figure) for s in document.sections for b in s.blocks)
    messages = next(s for s in document.sections if s.title == "Messages")
    assert isinstance(messages.blocks[0], Items)
    assert "- figures omitted: matplotlib is not installed" in to_markdown(document)


def test_model_and_user_text_is_escaped_in_html():
    data = _data()
    data["global"]["models"][0]["model"] = "<script>alert(1)</script>"
    data["global"]["models"][0]["never_won"] = True
    page = to_html(report_document(data, {}))
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "never won" in page
