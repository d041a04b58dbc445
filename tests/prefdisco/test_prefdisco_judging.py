"""Judging: valid 1-5 scores with retries, missing scores recorded (never 1), grader fallback."""

from __future__ import annotations

import asyncio
import re

from prefduel.llm import LLMClient, ScriptedBackend
from prefduel.prefdisco import (
    EpisodeKey,
    RunConfig,
    Transcript,
    build_rubrics,
    builtin_tasks,
    load_taxonomy,
    sample_personas,
    sample_profile,
    score_transcript,
)
from prefduel.prefdisco.episode.judging import JudgeContext
from prefduel.prefdisco.episode.prompts import parse_score, parse_verdict

TAX = load_taxonomy()
TASK = next(t for t in builtin_tasks() if t.id == "builtin-math-2")
PERSONA = sample_personas(1, 0)[0][0]
PROFILE = sample_profile(PERSONA, TASK, TAX, seed=0)


def _score(tmp_path, judge, grader=None, response="Final answer: 35", attempts=3):
    handlers = {"judge": judge, "grader": grader or (lambda r: "CORRECT")}
    client = LLMClient(ScriptedBackend(handlers), cache=tmp_path / "c.sqlite")
    context = JudgeContext(
        TAX,
        {TASK.id: TASK},
        {PROFILE.key: PROFILE},
        build_rubrics(TAX),
        RunConfig(judge_attempts=attempts),
        client,
    )
    key = EpisodeKey("m", "baseline", PERSONA.id, TASK.id)
    transcript = Transcript(key, TASK.source, TASK.domain, (), "baseline", "", response, "s")
    with client:
        return asyncio.run(score_transcript(transcript, context))


def test_scores_are_parsed_and_pref_align_computed(tmp_path):
    row = _score(tmp_path, lambda r: "SCORE: 4")
    assert set(row.scores) == set(PROFILE.attributes) and set(row.scores.values()) == {4}
    assert abs(row.pref_align - 4.0) < 1e-9 and row.errors == ()
    assert row.correct is True and row.accuracy_method == "numeric"


def test_unparsable_replies_are_retried(tmp_path):
    def judge(request):
        return "Looks fine to me." if request.sample == 0 else "**Score:** 5/5"

    row = _score(tmp_path, judge)
    assert set(row.scores.values()) == {5} and set(row.judge_attempts.values()) == {2}


def test_a_missing_score_is_recorded_never_a_one(tmp_path):
    weakest = PROFILE.attributes[-1]
    name = TAX[weakest].name

    def judge(request):
        text = request.messages[1].content
        return "I refuse." if f"only: {name} —" in text else "SCORE: 3"

    row = _score(tmp_path, judge, attempts=2)
    assert row.scores[weakest] is None and row.judge_attempts[weakest] == 2
    assert row.pref_align is None
    assert any(weakest in e for e in row.errors) and any(
        "PrefAlign missing" in e for e in row.errors
    )


def test_grader_only_when_rules_cannot_decide(tmp_path):
    calls = []

    def grader(request):
        calls.append(request)
        return "INCORRECT"

    decided = _score(tmp_path / "a", lambda r: "SCORE: 3", grader, "Final answer: 34")
    assert decided.correct is False and decided.accuracy_method == "numeric" and not calls
    graded = _score(tmp_path / "b", lambda r: "SCORE: 3", grader, "It is thirty-five.")
    assert graded.correct is False and graded.accuracy_method == "grader" and len(calls) == 1
    assert "(A)" not in calls[0].messages[1].content  # a numeric task has no options
    silent = _score(tmp_path / "c", lambda r: "SCORE: 3", lambda r: "maybe", "It is 35-ish")
    assert silent.correct is None and any("grader" in e for e in silent.errors)


def test_the_judge_sees_neither_model_nor_condition(tmp_path):
    seen = []

    def judge(request):
        seen.append(request)
        return "SCORE: 2"

    _score(tmp_path, judge)
    text = " ".join(m.content for r in seen for m in r.messages)
    assert not re.search(r"baseline|oracle|discovery", text)
    assert {r.model for r in seen} == {RunConfig().judge_model}


def test_parsers():
    assert [parse_score(x) for x in ("SCORE: 3", "4", "score=2", "Score: 5/5", "**SCORE:** 1")] == [
        3,
        4,
        2,
        5,
        1,
    ]
    assert [
        parse_score(x) for x in ("SCORE: 6", "SCORE: 0", "SCORE: 3.5", "SCORE: 2 SCORE: 4")
    ] == [
        None,
        None,
        None,
        None,
    ]
    assert parse_score("no score") is None
    assert [
        parse_verdict(x) for x in ("CORRECT", "incorrect.", "Correct", "CORRECT or INCORRECT")
    ] == [
        True,
        False,
        True,
        None,
    ]
