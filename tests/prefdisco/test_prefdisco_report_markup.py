"""Names from users' files (models, judges, task sources, scoring errors) show on PrefDisco's
report pages as text: rendered as MkDocs renders Markdown, or opened as HTML, they open no tag."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import markdown
import pytest
from pb_prefdisco_helpers import run_cli

HOSTILE = "<script>alert(1)</script>"


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    """The report of an offline run whose model, judge and task source carry markup."""
    root = tmp_path_factory.mktemp("markup")
    tasks = root / "tasks.jsonl"
    rows = [
        {"id": f"t{i}", "question": f"What is {i} + 1?", "answer": str(i + 1), "domain": "math"}
        for i in range(2)
    ]
    tasks.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    config = root / "study.yaml"
    config.write_text(
        "generate:\n"
        "  personas: 2\n  personas_per_task: 1\n"
        f"  tasks: [{{format: generic, path: tasks.jsonl, name: '{HOSTILE}'}}]\n"
        "run:\n"
        f"  models: ['scripted-ask2{HOSTILE}']\n"
        f"  judge_model: 'scripted-judge<img src=x onerror=alert(1)>'\n"
        "report: {bootstrap: 20}\n",
        encoding="utf-8",
    )
    folder = root / "study"
    for argv in (
        ["generate", str(folder), "--config", str(config)],
        ["run", str(folder), "--no-progress"],
        ["report", str(folder)],
    ):
        status, out, err = run_cli(argv)
        assert status == 0, err
    assert f"scripted-ask2{HOSTILE}" in out  # the terminal shows the name as it is
    return folder / "report"


class _Tags(HTMLParser):
    """The tags of a page and the names of their attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attributes: set[str] = set()

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attributes.update(name for name, _ in attrs)


def _tags(html: str) -> _Tags:
    parser = _Tags()
    parser.feed(html)
    return parser


def test_the_markdown_report_renders_without_a_tag_from_a_name(report):
    text = (report / "report.md").read_text(encoding="utf-8")
    assert "alert(1)" in text  # the names are there ...
    html = markdown.markdown(text, extensions=["tables"])
    assert "<script" not in html  # ... as text
    tags = _tags(html)
    assert "script" not in tags.tags and "onerror" not in tags.attributes


def test_the_html_report_holds_no_tag_from_a_name(report):
    html = (report / "report.html").read_text(encoding="utf-8")
    assert "alert(1)" in html
    assert "<script" not in html
    tags = _tags(html)
    assert "script" not in tags.tags and "onerror" not in tags.attributes
