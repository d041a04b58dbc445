"""The labelled router questions, each router's accuracy on them, ``router: auto``, and the
router named with its misroute rate in every report (issue 17, part 5)."""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter

from pb_prefdisco_helpers import run_cli

from prefduel.llm import LLMClient, ScriptedBackend
from prefduel.prefdisco import KeywordRouter, RunConfig, build_report, load_taxonomy
from prefduel.prefdisco.episode.router_check import (
    RouterQuestion,
    choose_router,
    load_router_questions,
    router_accuracy,
)
from prefduel.prefdisco.report.build import render_markdown

TAX = load_taxonomy()
QUESTIONS = load_router_questions(taxonomy=TAX)


def test_the_labelled_questions_cover_every_attribute_several_times():
    counts = Counter(a for q in QUESTIONS for a in q.about)
    assert set(counts) == set(TAX.ids)
    assert min(counts.values()) >= 4
    assert sum(1 for q in QUESTIONS if not q.about) >= 5  # about everything, or nothing
    assert len({q.question for q in QUESTIONS}) == len(QUESTIONS)
    # none of them is a taxonomy question (those are what the keyword router was built from)
    assert not {q.question for q in QUESTIONS} & {a.question for a in TAX}


def test_router_accuracy_counts_exact_misrouted_and_unrouted_questions():
    questions = [
        RouterQuestion("How long should the answer be?", ("style.length",)),
        RouterQuestion("How much do you already know about this topic?", ("expertise.background",)),
        RouterQuestion("Should I just give you the gist, or dig in?", ("explanation.depth",)),
        RouterQuestion("What are your preferences?", ()),
    ]
    m = asyncio.run(router_accuracy(KeywordRouter(TAX), questions))
    assert (m.n, m.correct, m.misrouted, m.unrouted) == (4, 2, 1, 1)
    assert m.accuracy == 0.5 and m.misroute_rate == 0.25
    assert m.examples[0]["routed"] == ["affect.reassurance"]  # the example
    full = asyncio.run(router_accuracy(KeywordRouter(TAX), QUESTIONS)).to_json()
    assert full["n"] == len(QUESTIONS) and 0.5 < full["accuracy"] < 1
    assert full["misroute_rate"] > 0 and len(full["examples"]) == 10


def _knowing_router(calls):
    """An LLM router that knows the labels (a stand-in for a capable model)."""
    labels = {q.question: list(q.about) for q in QUESTIONS}

    def handler(request):
        calls.append(request)
        text = request.messages[-1].content
        question = text.split("<<<\n", 1)[1].split("\n>>>", 1)[0]
        return json.dumps(labels.get(question, []))

    return handler


def test_auto_takes_the_more_accurate_router_and_records_both(tmp_path):
    calls = []
    client = LLMClient(ScriptedBackend({"router": _knowing_router(calls)}))
    router, check = asyncio.run(choose_router(TAX, RunConfig(), client, scripted_user=False))
    assert router.name == "llm" and check["chosen"] == "llm" and check["setting"] == "auto"
    assert check["routers"]["llm"]["accuracy"] == 1.0 and check["questions"] == len(QUESTIONS)
    assert check["routers"]["keyword"]["accuracy"] < 1.0 and len(calls) == len(QUESTIONS)
    # offline (a scripted user group) auto keeps the keyword router and makes no call
    calls.clear()
    router, check = asyncio.run(choose_router(TAX, RunConfig(), client, scripted_user=True))
    assert router.name == "keyword" and set(check["routers"]) == {"keyword"} and calls == []
    # a named router is used as named, even when the other one is better
    named = RunConfig(router="keyword")
    router, check = asyncio.run(choose_router(TAX, named, client, scripted_user=False))
    assert router.name == "keyword" and calls == []
    md = render_markdown(build_report(_rows(), run={"router_check": check}))
    assert re.search(r"router: keyword \(on \d+ labelled questions: keyword accuracy", md)


def _rows():
    weights = {"style.tone": 1.0}
    return [
        {
            "model": "m",
            "condition": c,
            "persona_id": "p",
            "task_id": "t",
            "source": "s",
            "domain": "d",
            "pref_align": v,
            "scores": {"style.tone": v},
            "weights": weights,
            "asked": [],
            "questions": 1,
            "correct": True,
            "recall": None,
            "accuracy_method": "numeric",
            "errors": [],
        }
        for c, v in (("baseline", 2.0), ("discovery", 3.0), ("oracle", 4.0))
    ]


def test_every_report_names_the_router_and_its_misroute_rate(tmp_path):
    calls = []
    client = LLMClient(ScriptedBackend({"router": _knowing_router(calls)}))
    _, check = asyncio.run(choose_router(TAX, RunConfig(), client, scripted_user=False))
    md = render_markdown(build_report(_rows(), run={"router_check": check}))
    line = next(x for x in md.splitlines() if x.startswith("- router: "))
    assert line.startswith("- router: llm (auto; on ")
    assert "keyword accuracy" in line and "llm (scripted-judge) accuracy 100.0%" in line
    assert "misroute rate 0.0%" in line
    old = render_markdown(build_report(_rows(), run={"settings": {"router": "keyword"}}))
    assert "- router: keyword (misroute rate not measured)." in old
    # the offline demo: the command line and the page both say which router and how it does
    study = tmp_path / "study"
    assert (
        run_cli(["generate", str(study), "--personas", "2", "--per-task", "1", "--limit", "2"])[0]
        == 0
    )
    status, out, _ = run_cli(["run", str(study), "--no-progress"])
    assert status == 0 and "router: keyword (auto; on " in out and "misroute rate" in out
    status, out, _ = run_cli(["report", str(study), "--bootstrap", "0"])
    assert status == 0 and "misroute rate" in out
    assert "misroute rate" in (study / "report" / "report.html").read_text()
    run = json.loads((study / "run.json").read_text())
    assert run["settings"]["router"] == "keyword" and run["router_check"]["setting"] == "auto"
