"""Preference questions on the pages: the questions of a world's ask track as the pages show
them, with an answer button for each possible answer, and the questions a policy asked.

A ``level`` question has 5 answers (`LEVEL_ANSWERS`), a ``pair`` question the two tutors it
names (answer 1 is the first, 0 the second), a ``least`` question every persona
(`prefduel.worlds.asking`). The play page lets a person answer them before the first duel; the
replay page shows, before each round, the questions the policy asked and the world's stored
answers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from prefduel.core.errors import SpecError
from prefduel.pages._html import check_arrival, persona_table
from prefduel.policies.loading import resolve_spec
from prefduel.runner.cell import play, policy_rng
from prefduel.worlds.asking import AskQuestion
from prefduel.worlds.world import World

#: What each ``level`` answer 0..4 says, as its button reads.
LEVEL_ANSWERS = ("strongly not", "rather not", "no preference", "rather yes", "strongly yes")


def answer_options(question: AskQuestion, personas: Sequence[dict[str, str]]) -> list[dict]:
    """The answer buttons of ``question`` in display order: ``{value, label}`` each, ``value``
    the answer as the world stores it."""
    if question.kind == "level":
        return [{"value": v, "label": label} for v, label in enumerate(LEVEL_ANSWERS)]
    if question.kind == "pair":
        a, b = question.pair
        return [
            {"value": 1, "label": personas[a]["name"], "persona": a},
            {"value": 0, "label": personas[b]["name"], "persona": b},
        ]
    return [{"value": k, "label": p["name"], "persona": k} for k, p in enumerate(personas)]


def answer_label(question: AskQuestion, value: int, personas: Sequence[dict[str, str]]) -> str:
    """What answer ``value`` to ``question`` says (a level, or a tutor's name)."""
    for option in answer_options(question, personas):
        if option["value"] == value:
            return str(option["label"])
    return str(value)


def ask_cards(world: World, which: Sequence[int] | None = None) -> list[dict[str, Any]]:
    """The questions ``which`` (default: the whole bank) as the pages show them: ``{index, id,
    kind, text, options}``; empty for a world without an ask track."""
    if world.asks is None:
        return []
    personas = persona_table(world)
    indices = range(len(world.asks.questions)) if which is None else which
    return [
        {
            "index": int(q),
            "id": world.asks.questions[q].id,
            "kind": world.asks.questions[q].kind,
            "text": world.asks.questions[q].text,
            "options": answer_options(world.asks.questions[q], personas),
        }
        for q in indices
    ]


def policy_questions(world: World, policy: str, arrival: int) -> list[tuple[int, int]]:
    """The questions ``policy`` asks arrival ``arrival`` of ``world``, as ``(round, question)``.

    The policy is run over the whole world as the benchmark runs it (its seed's generator, the
    world's clicks and stored answers), since what it asks depends on what it learned from the
    students before (a second or two for the registered policies on a 350-arrival roster).

    Raises:
        SpecError: ``world`` has no ask track, or ``arrival`` is out of range.
        PolicyError: the policy breaks the protocol.
    """
    arrival = check_arrival(world, arrival)
    if not world.ask_budget or world.asks is None:
        raise SpecError(
            f"world {world.name!r} has no ask track, so no policy asks questions on it; name "
            "it NAME+askB (e.g. dev+ask2)"
        )
    resolved = resolve_spec(policy)
    trajectory = play(world, resolved.build(), policy_rng(world.seed, resolved.canonical))
    return [(r, q) for n, r, q in trajectory.asked if n == arrival]


def asked_by_arrival(world: World, asked: Sequence[tuple[int, int, int]]) -> dict[str, Any]:
    """The questions a run asked, for the replay page: ``{budget, questions (cards of the
    questions asked), asked (per arrival, [round, index into questions, answer, label])}``."""
    if world.asks is None or not asked:
        return {"budget": int(world.ask_budget), "questions": [], "asked": [[]] * world.N}
    used = sorted({q for _, _, q in asked})
    position = {q: i for i, q in enumerate(used)}
    personas = persona_table(world)
    per_arrival: list[list[list[Any]]] = [[] for _ in range(world.N)]
    answers = np.asarray(world.asks.answers)
    for n, r, q in asked:
        value = int(answers[n, q])
        label = answer_label(world.asks.questions[q], value, personas)
        per_arrival[n].append([int(r), position[q], value, label])
    return {
        "budget": int(world.ask_budget),
        "questions": ask_cards(world, used),
        "asked": per_arrival,
    }


def play_asks(
    world: World, arrival: int, asked: Sequence[tuple[int, int]] | None, policy: str | None
) -> dict[str, Any] | None:
    """The ask part of the play page's data, or None off an ask track: the budget, the whole
    bank, the simulated student's stored answer to each question, and ``fixed`` (the
    ``(round, question)`` a policy asked, which the person answers) or None (free play: the
    person picks up to the budget)."""
    if not world.ask_budget or world.asks is None:
        return None
    return {
        "budget": int(world.ask_budget),
        "policy": policy,
        "questions": ask_cards(world),
        "stored": [int(x) for x in world.asks.answers[arrival]],
        "fixed": None if asked is None else [[int(r), int(q)] for r, q in asked],
    }
