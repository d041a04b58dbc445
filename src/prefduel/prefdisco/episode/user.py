"""The passive simulated user: answers exactly what is asked, never volunteers, logs it all.

A clarifying question goes through two steps that never mix:

1. **Routing** (`KeywordRouter` offline, `LLMRouter` with a model;
   `prefduel.prefdisco.episode.routing`): the question is mapped to at most ``max_attributes``
   attribute ids of the taxonomy. A router sees the question and the taxonomy, never the user's
   preferences, so it cannot leak them.
2. **Disclosure** (`PassiveUser`): for each routed id in the hidden profile the value is
   disclosed; a routed id outside the profile gets "no particular preference"; nothing else is
   said. The reply is templated from the disclosed values only, and every disclosure is logged
   (`Disclosure`).

A question about *how much* something matters ("How important is the length to you?",
`is_importance_question`) is answered with the coarse level of the attribute's hidden weight
(``only a little`` / ``somewhat`` / ``a lot``, cut at `LEVEL_CUTS`), so discovery can learn
weights as the oracle is given them.

How cooperative the user is (``style``, `USER_STYLES`): ``cooperative`` names the value and
describes it; ``terse`` answers only the first attribute a question is about, with the value's
label alone; ``vague`` names only the side of an ordinal scale ("more towards brief") or two
candidate categories, never the exact value.

Questions that ask about everything at once ("what are your preferences?") route to nothing:
with the cap on attributes per question, the model has to discover preferences one question at
a time, as the paper's passive user intends. (In the reference implementation the simulated
user was an LLM that saw the whole profile.)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from prefduel.prefdisco.dataset.preferences import PreferenceProfile
from prefduel.prefdisco.dataset.taxonomy import Attribute, Taxonomy
from prefduel.prefdisco.episode import prompts
from prefduel.prefdisco.episode.routing import (
    STOPWORDS,
    KeywordRouter,
    LLMRouter,
    Route,
    Router,
    tokens,
)

#: How helpful the simulated user is (see the module docstring).
USER_STYLES = ("cooperative", "terse", "vague")
#: Coarse importance levels, lowest first.
IMPORTANCE_LEVELS = ("minor", "moderate", "major")
#: Weight cut points of the levels: below 0.2 minor, below 0.4 moderate, else major.
LEVEL_CUTS = (0.2, 0.4)

_IMPORTANCE_QUESTION = re.compile(
    r"\bhow much does (?:it|this|that|the [a-z ]{1,40}) matter\b|\bhow important\b|"
    r"\bimportance\b|\bhow much do you care\b",
    re.IGNORECASE,
)


def is_importance_question(question: str) -> bool:
    """Whether a question asks how much something matters (rather than which value)."""
    return bool(_IMPORTANCE_QUESTION.search(question or ""))


def importance_level(weight: float, cuts: Sequence[float] = LEVEL_CUTS) -> str:
    """The `IMPORTANCE_LEVELS` name of a profile weight."""
    return IMPORTANCE_LEVELS[sum(weight >= c for c in cuts)]


@dataclass(frozen=True)
class Disclosure:
    """One thing the user revealed.

    Attributes:
        turn: Question number (0-based).
        attribute: The attribute asked about.
        value: Its value in the hidden profile, when the reply spoke about the value; None if
            the attribute is not in the profile (the user said it has no particular
            preference) or the question asked about importance only.
        importance: The coarse level of its weight (`IMPORTANCE_LEVELS`), when an importance
            question was answered about a hidden attribute.
        vague: The value was only hinted at (a ``vague`` user).
    """

    turn: int
    attribute: str
    value: str | None
    importance: str | None = None
    vague: bool = False

    @property
    def hidden(self) -> bool:
        """Whether the reply revealed something about a hidden preference."""
        return self.value is not None or self.importance is not None

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready ``dict``."""
        return {
            "turn": self.turn,
            "attribute": self.attribute,
            "value": self.value,
            "importance": self.importance,
            "vague": self.vague,
        }


@dataclass(frozen=True)
class UserTurn:
    """One question and the user's answer.

    Attributes:
        turn: Question number (0-based).
        question: The model's question.
        route: Where the question was routed.
        disclosures: What was revealed (one per attribute the reply speaks about).
        reply: The user's reply text.
    """

    turn: int
    question: str
    route: Route
    disclosures: tuple[Disclosure, ...]
    reply: str

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready ``dict`` (one element of a transcript's ``turns``)."""
        return {
            "turn": self.turn,
            "question": self.question,
            "route": self.route.to_json(),
            "disclosures": [d.to_json() for d in self.disclosures],
            "reply": self.reply,
        }


class PassiveUser:
    """A simulated user holding one hidden profile.

    Args:
        profile: The hidden preferences.
        taxonomy: The taxonomy (names, labels and descriptions for the replies).
        router: Routes questions to attribute ids.
        style: ``cooperative`` (default), ``terse`` or ``vague`` (`USER_STYLES`).

    Raises:
        ValueError: Unknown ``style``.
    """

    def __init__(
        self,
        profile: PreferenceProfile,
        taxonomy: Taxonomy,
        router: Router,
        *,
        style: str = "cooperative",
    ) -> None:
        if style not in USER_STYLES:
            raise ValueError(f"style: expected one of {list(USER_STYLES)}, got {style!r}")
        profile.check(taxonomy)
        self.profile = profile
        self.taxonomy = taxonomy
        self.router = router
        self.style = style
        self.turns: list[UserTurn] = []

    @property
    def log(self) -> list[Disclosure]:
        """Every disclosure so far, in order."""
        return [d for t in self.turns for d in t.disclosures]

    @property
    def disclosed(self) -> dict[str, str]:
        """Attribute id -> value for every hidden value revealed so far (hinted at included)."""
        return {d.attribute: d.value for d in self.log if d.value is not None}

    async def answer(self, question: str) -> UserTurn:
        """Answer one clarifying question (routes it, then discloses only what was asked)."""
        if not isinstance(question, str) or not question.strip():
            raise ValueError("question: expected a non-empty string")
        route = await self.router.route(question)
        index = len(self.turns)
        if is_importance_question(question):
            turn = self._importance(index, question, route)
        elif self.style == "cooperative":
            turn = self._disclose(index, question, route)
        else:
            turn = self._disclose_briefly(index, question, route)
        self.turns.append(turn)
        return turn

    def _about(self, route: Route) -> tuple[str, ...]:
        """The routed attributes the reply speaks about (a terse user answers the first)."""
        return route.attributes[:1] if self.style == "terse" else route.attributes

    def _disclose(self, index: int, question: str, route: Route) -> UserTurn:
        hidden = self.profile.values
        disclosed = []
        unset = []
        log = []
        for attr_id in route.attributes:
            attribute = self.taxonomy[attr_id]
            if attr_id in hidden:
                disclosed.append((attribute, attribute.value(hidden[attr_id])))
                log.append(Disclosure(index, attr_id, hidden[attr_id]))
            else:
                unset.append(attribute)
                log.append(Disclosure(index, attr_id, None))
        reply = prompts.user_reply(disclosed, unset)
        return UserTurn(index, question, route, tuple(log), reply)

    def _disclose_briefly(self, index: int, question: str, route: Route) -> UserTurn:
        """The reply of a terse or vague user."""
        hidden = self.profile.values
        vague = self.style == "vague"
        parts, log = [], []
        for attr_id in self._about(route):
            attribute: Attribute = self.taxonomy[attr_id]
            value = attribute.value(hidden[attr_id]) if attr_id in hidden else None
            say = prompts.user_says_vaguely if vague else prompts.user_says_tersely
            parts.append(say(attribute, value))
            log.append(Disclosure(index, attr_id, hidden.get(attr_id), vague=vague and bool(value)))
        reply = " ".join(parts) or prompts.user_reply([], [])
        return UserTurn(index, question, route, tuple(log), reply)

    def _importance(self, index: int, question: str, route: Route) -> UserTurn:
        """How much the routed attributes matter: the coarse level of each hidden weight."""
        weights = self.profile.weights
        parts, log = [], []
        for attr_id in self._about(route):
            attribute = self.taxonomy[attr_id]
            if attr_id in weights:
                level = importance_level(weights[attr_id])
                parts.append(prompts.importance_reply(attribute, IMPORTANCE_LEVELS.index(level)))
                log.append(Disclosure(index, attr_id, None, importance=level))
            else:
                parts.append(prompts.user_reply([], [attribute]))
                log.append(Disclosure(index, attr_id, None))
        reply = " ".join(parts) or prompts.user_reply([], [])
        return UserTurn(index, question, route, tuple(log), reply)


__all__ = [
    "IMPORTANCE_LEVELS",
    "LEVEL_CUTS",
    "STOPWORDS",
    "USER_STYLES",
    "Disclosure",
    "KeywordRouter",
    "LLMRouter",
    "PassiveUser",
    "Route",
    "Router",
    "UserTurn",
    "importance_level",
    "is_importance_question",
    "tokens",
]
