"""Does the follow-up question depend on the answer? A counterfactual check per episode.

The follow-up paper (Pep, 2026) reports how often the second question changes when the user's
first answer is altered (39-62% for its method, 0-28% for RL-trained askers). Every discovery
episode with a question budget of at least 2 records the same check (``follow_up`` in the
transcript and the score row):

1. the first reply is altered: the part of it about the first attribute the question was
   routed to is replaced by what this user (in the run's ``user_style``) would have said in
   another state of that attribute: another value or "no particular preference" (for an
   importance question, another level), drawn from ``stream(0, "follow-up", persona, task,
   attribute)`` so every strategy sees the same alteration of the same instance;
2. the strategy picks its next question after the altered reply: the ``ask`` strategy by one
   more ask-phase request to the model (its question routed by the user's router), the
   interviewer from its belief (no call);
3. the follow-up *topics* are compared: the attributes the second question is about and
   whether it asks about importance (or that the strategy stopped). Two wordings of the same
   question are the same topic.

An episode whose first question routed to nothing, or whose budget is 1, has no check (None).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from prefduel.core.rng import stream
from prefduel.prefdisco.dataset.taxonomy import Attribute, Taxonomy
from prefduel.prefdisco.episode import prompts
from prefduel.prefdisco.episode.user import is_importance_question


@dataclass(frozen=True)
class Topic:
    """What a follow-up is about: attributes and kind, or why there was none.

    Attributes:
        attributes: Attribute ids the question is about (empty when it stopped).
        importance: Whether it asks how much something matters.
        stop: The stop reason when the strategy asked nothing more (``ready``, ``min_gain``,
            ``malformed``, ...), else None.
    """

    attributes: tuple[str, ...] = ()
    importance: bool = False
    stop: str | None = None

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready ``dict``."""
        if self.stop is not None:
            return {"stop": self.stop}
        return {"attributes": list(self.attributes), "importance": self.importance}

    @classmethod
    def of_turn(cls, turn: Mapping[str, Any]) -> Topic:
        """The topic of a user turn (`prefduel.prefdisco.episode.user.UserTurn` JSON)."""
        return cls(
            tuple(turn["route"]["attributes"]), is_importance_question(str(turn["question"]))
        )


@dataclass(frozen=True)
class FollowUp:
    """The follow-up after the user's first reply and after an altered one.

    Attributes:
        attribute: The attribute whose answer was altered.
        altered_reply: The first reply as altered.
        original: The follow-up after the real reply.
        altered: The follow-up after the altered reply.
    """

    attribute: str
    altered_reply: str
    original: Topic
    altered: Topic

    @property
    def changed(self) -> bool:
        """Whether the follow-up topic differs."""
        return self.original != self.altered

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready ``dict`` (``follow_up`` of a transcript and a score row)."""
        return {
            "attribute": self.attribute,
            "altered_reply": self.altered_reply,
            "original": self.original.to_json(),
            "altered": self.altered.to_json(),
            "changed": self.changed,
        }


def _says(attribute: Attribute, state: str | None, style: str) -> str:
    """What a user of ``style`` says about ``attribute`` in ``state`` (None: no preference)."""
    value = attribute.value(state) if state is not None else None
    if style == "terse":
        return prompts.user_says_tersely(attribute, value)
    if style == "vague":
        return prompts.user_says_vaguely(attribute, value)
    if value is None:
        return prompts.user_reply([], [attribute])
    return prompts.user_reply([(attribute, value)], [])


def _statements(attribute: Attribute, importance: bool, style: str) -> list[str]:
    """Everything a user of ``style`` may say about ``attribute`` (distinct, in state order)."""
    if importance:
        texts = [prompts.user_reply([], [attribute])]
        texts += [prompts.importance_reply(attribute, i) for i in range(3)]
    else:
        texts = [_says(attribute, s, style) for s in (None, *attribute.value_ids)]
    return list(dict.fromkeys(texts))


def altered_reply(
    turn: Mapping[str, Any], taxonomy: Taxonomy, style: str, instance: Sequence[str]
) -> tuple[str, str] | None:
    """The first reply with its answer about the first routed attribute altered.

    Args:
        turn: The first user turn (`UserTurn` JSON: question, route, reply).
        taxonomy: The taxonomy.
        style: The user's style (``cooperative``, ``terse``, ``vague``).
        instance: ``(persona id, task id)``, for the random stream.

    Returns:
        ``(attribute id, altered reply)``, or None when the question routed to nothing.
    """
    routed = turn["route"]["attributes"]
    if not routed:
        return None
    attribute = taxonomy[routed[0]]
    reply = str(turn["reply"])
    said = _statements(attribute, is_importance_question(str(turn["question"])), style)
    true = [t for t in said if t in reply]
    if len(true) != 1:  # the reply does not speak about the attribute as this user would
        return None
    others = [t for t in said if t != true[0]]
    rng = stream(0, "follow-up", *instance, attribute.id)
    return attribute.id, reply.replace(true[0], others[int(rng.integers(len(others)))])


__all__ = ["FollowUp", "Topic", "altered_reply"]
