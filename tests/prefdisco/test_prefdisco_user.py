"""The passive user discloses exactly what was asked, never volunteers, and logs everything."""

from __future__ import annotations

import asyncio
import re

import pytest

from prefduel.llm import LLMClient, LLMRequest, ScriptedBackend
from prefduel.prefdisco import (
    KeywordRouter,
    LLMRouter,
    PassiveUser,
    builtin_tasks,
    load_taxonomy,
    sample_personas,
    sample_profile,
)
from prefduel.prefdisco.episode.user import Route

TAX = load_taxonomy()
TASKS = builtin_tasks()
PERSONAS, _ = sample_personas(6, 2)
PROFILES = [sample_profile(p, t, TAX, seed=1) for p in PERSONAS for t in TASKS[::3]]
QUESTIONS = [a.question for a in TAX] + [
    "What are your preferences?",
    "Anything else I should know about you?",
    "How detailed and how formal should it be?",
    "Do you find this topic scary?",
    "Tell me everything about how you like answers: length, tone, format, depth, examples.",
]


class FixedRouter:
    """A router that returns a fixed route (to test disclosure independently of routing)."""

    name = "fixed"

    def __init__(self, ids):
        self.ids = tuple(ids)

    async def route(self, question):
        return Route(self.ids, "fixed")


def _mentions(reply: str, attribute_id: str) -> bool:
    a = TAX[attribute_id]
    return a.name.lower() in reply.lower()


def test_the_user_never_discloses_an_attribute_that_was_not_asked():
    router = KeywordRouter(TAX)
    for profile in PROFILES:
        user = PassiveUser(profile, TAX, router)
        for question in QUESTIONS:
            turn = asyncio.run(user.answer(question))
            routed = set(turn.route.attributes)
            assert {d.attribute for d in turn.disclosures} == routed
            assert len(routed) <= 2  # a question cannot extract the whole profile
            for d in turn.disclosures:
                assert d.value == profile.values.get(d.attribute)
            for attr in profile.attributes:
                if attr not in routed:
                    assert not _mentions(turn.reply, attr), (question, attr, turn.reply)
                    value = TAX[attr].value(profile.values[attr])
                    assert f"I prefer {value.label} —" not in turn.reply
        assert len(user.log) == sum(len(t.disclosures) for t in user.turns)
        assert set(user.disclosed) <= set(profile.attributes)


def test_disclosure_of_hidden_and_unset_attributes():
    profile = PROFILES[0]
    hidden = profile.attributes[0]
    unset = next(a for a in TAX.ids if a not in profile.attributes)
    user = PassiveUser(profile, TAX, FixedRouter([hidden, unset]))
    turn = asyncio.run(user.answer("two things at once?"))
    value = TAX[hidden].value(profile.values[hidden])
    assert f"I prefer {value.label} — {value.description}." in turn.reply
    assert f"About {TAX[unset].name.lower()}: I have no particular preference." in turn.reply
    assert [(d.attribute, d.value) for d in user.log] == [(hidden, value.value), (unset, None)]
    assert user.disclosed == {hidden: value.value}
    nothing = PassiveUser(profile, TAX, FixedRouter([]))
    reply = asyncio.run(nothing.answer("What else?")).reply
    assert "nothing specific" in reply and nothing.log == []
    with pytest.raises(ValueError):
        asyncio.run(nothing.answer("  "))


def test_keyword_router_details():
    router = KeywordRouter(TAX, max_attributes=1)
    assert router.route_sync("How detailed and how formal should it be?").attributes == (
        "explanation.depth",
    )
    both = KeywordRouter(TAX).route_sync("How detailed and how formal should it be?")
    assert both.attributes == ("explanation.depth", "style.formality")
    assert KeywordRouter(TAX).route_sync("Would you like alternative approaches?").attributes == (
        "explanation.alternatives",
    )  # "approach" inside the longer phrase does not also route to the strategy
    fallback = KeywordRouter(TAX).route_sync("Do you find this topic scary?")
    assert fallback == Route(("affect.reassurance",), "tfidf", fallback.detail)
    assert KeywordRouter(TAX, tfidf_threshold=None).route_sync("scary?").method == "none"
    assert KeywordRouter(TAX).route_sync("What are your preferences?").attributes == ()
    with pytest.raises(ValueError):
        KeywordRouter(TAX, max_attributes=0)


def _router_handler(replies):
    def handler(request: LLMRequest) -> str:
        return replies[min(request.sample, len(replies) - 1)]

    return handler


@pytest.mark.parametrize(
    ("replies", "expected", "method"),
    [
        (['["style.length", "style.sparkle"]'], ("style.length",), "llm"),
        (
            ['Sure: ["style.tone", "style.length", "structure.format"]'],
            ("style.tone", "style.length"),
            "llm",
        ),
        (["no idea", '["explanation.examples"]'], ("explanation.examples",), "llm"),
        (["no idea", "still no idea"], ("style.length",), "keyword-fallback"),
    ],
)
def test_llm_router_validates_and_falls_back(tmp_path, replies, expected, method):
    backend = ScriptedBackend({"router": _router_handler(replies)})
    with LLMClient(backend, cache=tmp_path / "c.sqlite") as client:
        router = LLMRouter(TAX, client, "router-model")
        route = asyncio.run(router.route("How long should the answer be?"))
    assert route.attributes == expected and route.method == method
    if "sparkle" in replies[0]:
        assert "style.sparkle" in route.detail


def test_the_llm_router_never_sees_the_preferences():
    seen = []

    def handler(request):
        seen.append(request.messages)
        return "[]"

    router = LLMRouter(TAX, LLMClient(ScriptedBackend({"router": handler})), "m")
    for profile in PROFILES[:2]:
        asyncio.run(PassiveUser(profile, TAX, router).answer("How long should it be?"))
    assert len(seen) == 2 and seen[0] == seen[1]  # same request whatever the profile
    text = " ".join(m.content for m in seen[0])
    assert not re.search(r"I prefer|importance", text)
