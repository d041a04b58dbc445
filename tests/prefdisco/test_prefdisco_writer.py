"""The dataset's LLM stages: backstories and refined rubrics retry malformed replies, record
what stays unusable, raise a failed call naming its item, and resume from the cache."""

from __future__ import annotations

import asyncio
import json

import pytest

from prefduel.llm import LLMClient, ScriptedBackend
from prefduel.prefdisco import (
    EpisodeError,
    build_rubrics,
    enrich_personas,
    load_taxonomy,
    refine_rubrics,
    sample_personas,
)

TAX = load_taxonomy()
PERSONAS, _ = sample_personas(3, 0)
STORY = (
    "She works nights at a clinic and asks an assistant between shifts. She wants the point "
    "first and an example after it."
)


def _client(tmp_path, handlers):
    return LLMClient(ScriptedBackend(handlers), cache=tmp_path / "cache.sqlite")


def test_a_malformed_backstory_is_shown_back_and_asked_again(tmp_path):
    seen = []

    def persona(request):
        seen.append(request)
        return "Title: none" if request.sample == 0 else STORY

    with _client(tmp_path, {"persona": persona}) as client:
        enriched = asyncio.run(enrich_personas(PERSONAS, client, "writer"))
    assert [p.backstory for p in enriched] == [STORY] * 3
    assert {(p.backstory_model, p.backstory_error) for p in enriched} == {("writer", None)}
    assert [p.id for p in enriched] == [p.id for p in PERSONAS]
    retries = [r for r in seen if r.sample == 1]
    assert len(seen) == 6 and len(retries) == 3
    assert all(r.messages[-2].content == "Title: none" for r in retries)


def test_an_unusable_backstory_is_recorded_never_invented(tmp_path):
    with _client(tmp_path, {"persona": lambda r: f"bad {r.sample}"}) as client:
        enriched = asyncio.run(enrich_personas(PERSONAS, client, "writer", attempts=3))
    assert {p.backstory for p in enriched} == {None}
    assert {p.backstory_error for p in enriched} == {
        "no backstory after 3 attempt(s); last reply 'bad 2'"
    }


def test_a_failed_call_names_its_persona_and_a_second_run_resumes_from_the_cache(tmp_path):
    broken = PERSONAS[1].describe()
    sent = []

    def flaky(request):
        sent.append(request.messages[1].content)
        if broken in request.messages[1].content:
            raise RuntimeError("the endpoint is down")
        return STORY

    with _client(tmp_path, {"persona": flaky}) as client:
        with pytest.raises(EpisodeError, match=f"backstory of persona {PERSONAS[1].id}: .*down"):
            asyncio.run(enrich_personas(PERSONAS, client, "writer"))
    sent.clear()
    with _client(tmp_path, {"persona": lambda r: sent.append(r) or STORY}) as client:
        enriched = asyncio.run(enrich_personas(PERSONAS, client, "writer"))
    assert [p.backstory for p in enriched] == [STORY] * 3
    assert len(sent) == 1  # only the persona whose call failed is asked again


def _anchors(label: str) -> str:
    return json.dumps(
        {str(s): f"Level {s}: how far the response is '{label}'." for s in range(1, 6)}
    )


def test_a_rubric_is_refined_after_a_malformed_reply_and_rejected_with_the_last_problem(tmp_path):
    rubrics = build_rubrics(TAX, [("style.length", "short"), ("style.length", "long")])
    short = TAX["style.length"].value("short").label

    def rubric(request):
        if "Target preference: " + short in request.messages[1].content:
            return "not JSON" if request.sample == 0 else _anchors(short)
        same = {str(s): "The same anchor for every level." for s in range(1, 6)}
        return "not JSON" if request.sample == 0 else json.dumps(same)

    with _client(tmp_path, {"rubric": rubric}) as client:
        refined = asyncio.run(refine_rubrics(rubrics, TAX, client, "writer"))
    assert list(refined) == list(rubrics)
    kept = refined[("style.length", "short")]
    assert (kept.source, kept.model, kept.error) == ("llm", "writer", None)
    assert kept.anchor(5).startswith("Level 5")
    rejected = refined[("style.length", "long")]
    assert rejected.source == "template" and rejected.anchors == rubrics[rejected.key].anchors
    assert rejected.error == "refinement rejected: anchors must differ from each other"


def test_a_failed_rubric_call_names_the_rubric(tmp_path):
    rubrics = build_rubrics(TAX, [("style.length", "short")])
    with _client(tmp_path, {"rubric": lambda r: 1 / 0}) as client:
        with pytest.raises(EpisodeError, match=r"rubric style\.length=short: .*ZeroDivisionError"):
            asyncio.run(refine_rubrics(rubrics, TAX, client, "writer"))
