"""The PrefDisco report pages: one document, an undefined NormAlign always with its reason,
figures inlined in HTML and linked (and written) for Markdown, text escaped."""

from __future__ import annotations

import json
import re
from html import escape

import pytest

from prefduel.prefdisco.config import ReportConfig
from prefduel.prefdisco.report.build import (
    REPORT_FORMAT,
    build_document,
    build_report,
    norm_align_text,
    render_html,
    render_markdown,
    write_report,
)

WEIGHTS = {"style.tone": 0.5, "explanation.depth": 0.5}
SETTINGS = ReportConfig(bootstrap=50)


def _row(model: str, condition: str, instance: int, pref: float, **extra) -> dict:
    row = {
        "model": model,
        "condition": condition,
        "persona_id": f"p{instance}",
        "task_id": f"t{instance}",
        "source": "bench-a" if instance % 2 else "bench-b",
        "domain": "math",
        "pref_align": pref,
        "scores": dict.fromkeys(WEIGHTS, pref),
        "weights": WEIGHTS,
        "asked": ["style.tone"] if condition == "discovery" else [],
        "questions": 1 + instance % 3 if condition == "discovery" else 0,
        "correct": instance % 2 == 0,
        "recall": 0.5 if condition == "discovery" else None,
        "accuracy_method": "numeric",
        "errors": [],
    }
    return {**row, **extra}


def _model(model: str, base: float, disc: float, oracle: float, n: int = 6) -> list[dict]:
    return [
        _row(model, condition, i, value + 0.1 * (i % 3))
        for i in range(n)
        for condition, value in (("baseline", base), ("discovery", disc), ("oracle", oracle))
    ]


def _cells(document) -> list[str]:
    return [cell for table in document.tables() for row in table.text_rows() for cell in row]


def test_an_undefined_norm_align_prints_undefined_with_the_gap_reason():
    report = build_report(_model("flat", 3.0, 3.5, 3.0), SETTINGS)
    md = render_markdown(report)
    reason = "undefined (oracle - baseline = 0.000 < min_gap 0.1)"
    assert f"flat: NormAlign {reason};" in md
    assert f"| all | 6 | 3.100 | 3.600 | 3.100 | {reason} |" in md
    assert "an undefined share of tasks (no task has a defined NormAlign)" in md
    assert "no instance has oracle - baseline >= min_gap" in md
    assert "Negative NormAlign share undefined (no model x task cell" in md
    assert all(cell.strip() for cell in _cells(build_document(report)))
    assert reason.replace("<", "&lt;") in render_html(report)


def test_a_model_without_complete_instances_prints_undefined_with_that_reason():
    rows = [r for r in _model("nodisc", 3.0, 3.5, 4.0) if r["condition"] != "discovery"]
    report = build_report(rows + _model("good", 3.0, 3.5, 4.0), SETTINGS)
    md = render_markdown(report)
    assert "nodisc: NormAlign undefined (no instance scored in all three conditions);" in md
    assert "questions vs gain undefined (no instance scored in all three conditions)" in md
    row = "| all | 0 | – | – | – | undefined (no instance scored in all three conditions) |"
    assert row in md
    assert re.search(r"good: NormAlign 50\.0 \[[-\d.]+, [-\d.]+\]; negative NormAlign in 0\.0%", md)


def test_norm_align_text_covers_value_interval_and_missing_note():
    assert norm_align_text({"n": 4, "norm_align": 18.6, "lo": -5.8, "hi": 40.1}) == (
        "18.6 [-5.8, 40.1]"
    )
    assert norm_align_text({"n": 1, "norm_align": 0.0, "lo": None, "hi": None}) == "0.0"
    assert norm_align_text({"n": 3, "norm_align": None, "note": None}) == (
        "undefined (oracle - baseline below min_gap)"
    )


def test_tables_keep_the_numbers_with_standard_errors_and_percentages():
    report = build_report(_model("good", 3.0, 3.5, 4.0), SETTINGS)
    md = render_markdown(report)
    assert "| condition | episodes | scored | PrefAlign ± s.e. | accuracy |" in md
    assert "| baseline | 6 | 6 | 3.100 ± 0.037 | 50.0% (n=6) | 0.00 | – | 0 |" in md
    assert "| discovery | 6 | 6 | 3.600 ± 0.037 | 50.0% (n=6) | 2.00 | 50.0% | 0 |" in md
    assert "|---|---:|---:|---:|---:|---:|---:|---:|" in md  # label left, the rest right
    html = render_html(report)
    assert '<tr class="total"><td>all</td>' in html and "± 0.037" in html


def test_write_report_writes_figures_that_markdown_links_and_html_inlines(tmp_path):
    report = build_report(_model("org/Model", 3.0, 3.5, 4.0) + _model("flat", 3, 3, 3), SETTINGS)
    paths = write_report(report, tmp_path / "out")
    assert json.loads(paths["json"].read_text()) == json.loads(json.dumps(report))
    md, html = paths["md"].read_text(), paths["html"].read_text()
    links = re.findall(r"!\[[^\]]*\]\((figures/[^)]+)\)", md)
    assert "figures/org-model-by-task.svg" in links and "figures/flat-questions.svg" in links
    assert "figures/flat-by-task.svg" not in links  # no defined NormAlign: no bars to draw
    written = sorted(p.name for p in (tmp_path / "out" / "figures").iterdir())
    assert written == sorted(link.removeprefix("figures/") for link in links)
    for link in links:
        svg = (tmp_path / "out" / link).read_text()
        assert svg.startswith("<svg xmlns=") and svg in html
    assert "<svg" not in md and "src=" not in html and "<script" not in html


def test_names_are_escaped_in_html_and_svg_and_slugs_stay_distinct():
    renamed = [{**r, "source": "<img src=x>"} for r in _model("A/b", 3.0, 3.5, 4.0)]
    report = build_report(renamed + _model("a-b", 3.0, 3.5, 4.0), SETTINGS)
    html = render_html(report)
    assert "<img" not in html and "&lt;img src=x&gt;" in html
    md = render_markdown(report)
    assert "figures/a-b-by-task.svg" in md and "figures/a-b-2-by-task.svg" in md


def test_a_model_name_longer_than_a_file_name_still_gets_its_figures(tmp_path):
    long = "m" * 300
    report = build_report(_model(long, 3.0, 3.5, 4.0) + _model(long + "x", 3, 3.5, 4), SETTINGS)
    write_report(report, tmp_path / "out")
    names = [p.name for p in (tmp_path / "out" / "figures").iterdir()]
    assert names and all(len(name) <= 120 for name in names)
    assert len(set(names)) == len(names) == 6  # two models, three figures each, distinct


def test_the_report_format_and_public_names_stay_importable_from_report():
    import prefduel.prefdisco as prefdisco
    import prefduel.prefdisco.report.build as report

    assert REPORT_FORMAT == "prefduel/prefdisco-report/1"
    assert prefdisco.write_report is report.write_report
    for name in ("build_report", "load_run", "render_markdown", "render_html", "write_report"):
        assert callable(getattr(report, name))


@pytest.mark.parametrize("bootstrap", [0, 50])
def test_every_table_cell_has_a_value(bootstrap):
    rows = _model("good", 3.0, 3.5, 4.0, n=1) + _model("flat", 3.0, 3.0, 3.0)
    report = build_report(rows, ReportConfig(bootstrap=bootstrap))
    assert all(cell.strip() for cell in _cells(build_document(report)))


def test_without_bootstrap_the_page_promises_no_intervals():
    report = build_report(_model("good", 3.0, 3.5, 4.0), ReportConfig(bootstrap=0))
    md = render_markdown(report)
    assert "no bootstrap intervals (bootstrap: 0)." in md
    assert "## good: NormAlign by task (no intervals)" in md and "whiskers" not in md
    assert "| all | 6 | 3.100 | 3.600 | 4.100 | 50.0 |" in md


def _condition_note(md: str, model: str) -> str:
    """The paragraph right under a model's per-condition table."""
    section = md.split(f"## {model}: per condition", 1)[1].split("\n## ", 1)[0]
    return section.split("|\n\n", 1)[1].strip()


def test_the_accuracy_column_is_explained_beside_its_table():
    # the oracle answers worse here, as a model that trades correctness for style would
    rows = [{**r, "correct": r["condition"] != "oracle"} for r in _model("good", 3.0, 3.5, 4.0)]
    report = build_report(rows, SETTINGS)
    md = render_markdown(report)
    assert "| oracle | 6 | 6 | 4.100 ± 0.037 | 0.0% (n=6) |" in md
    note = _condition_note(md, "good")
    assert note.startswith("accuracy: share of episodes whose final answer to the task is right")
    assert "not how well the answer fits the user" in note
    assert "the oracle can score below the baseline" in note
    assert "scripted" not in note  # not an offline run: no word on the scripted model
    assert "task accuracy oracle - baseline -100.0 points" in md
    assert escape(note) in render_html(report)


def test_offline_the_accuracy_note_says_the_scripted_model_loses_accuracy_by_design():
    report = {**build_report(_model("good", 3.0, 3.5, 4.0), SETTINGS), "offline": True}
    note = _condition_note(render_markdown(report), "good")
    assert "the scripted model is built to be right less often the more preferences" in note
