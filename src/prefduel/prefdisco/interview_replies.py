"""Questions and replies of the Bayesian interviewer: phrasing, the user side, reading replies.

* **Phrasing.** The interviewer decides *what* to ask (a `Candidate`); the words come from the
  taxonomy's natural question (``template``) or from the model (role ``phrase``,
  `phrase_stage`): one short question, parsed (`parse_phrase`) and retried with the bad reply
  shown back; after ``tries`` unusable replies the template is used and the fallback recorded.
  `scripted_phrase_handler` plays the ``phrase`` role offline.
* **The user side.** `InterviewUser` wraps the `PassiveUser`: value questions go to it
  unchanged; questions asking how much something matters (`is_importance_question`) are
  routed by the same router and answered with the coarse level of the hidden weight
  (``only a little`` / ``somewhat`` / ``a lot``), or "no particular preference" when the
  attribute is not in the profile. Nothing is volunteered.
* **Reading replies.** `read_reply` turns a reply into `Evidence`: first the simulated user's
  templates (``About X: I prefer L — ...``, ``About X: I have no particular preference``,
  ``How much X matters to me: ...``), then, for free-text replies of a real user, a constrained
  fallback (exactly one value label of the asked attribute, a "no preference" phrase, or one
  importance phrase). Anything else is recorded as malformed, never guessed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from prefduel.llm.request import LLMRequest, Message
from prefduel.llm.stages import Stage
from prefduel.prefdisco import prompts
from prefduel.prefdisco.interview_belief import Candidate, Evidence
from prefduel.prefdisco.interview_prior import LEVELS
from prefduel.prefdisco.preferences import PreferenceProfile
from prefduel.prefdisco.taxonomy import Attribute, Taxonomy
from prefduel.prefdisco.user import Disclosure, PassiveUser, Route, Router, UserTurn

#: How the user words each importance level (lowest first, as `LEVELS`).
LEVEL_WORDS = ("only a little", "somewhat", "a lot")
PHRASE_SYSTEM = (
    "You help an assistant ask a user one short clarifying question about how they want an "
    "answer written. Reply with the question only."
)
PHRASE_FORMAT = "Reply with one short question on one line, ending with '?', and nothing else."
_IMPORTANCE_QUESTION = re.compile(
    r"\bhow much does (?:it|this|that) matter\b|\bhow important\b|\bimportance\b", re.IGNORECASE
)
_VALUE = re.compile(r"About ([^:\n]+): I prefer (.+?) — ")
_ABSENT = re.compile(r"About ([^:\n]+): I have no particular preference")
_LEVEL = re.compile(r"How much ([^:\n]+) matters to me: (only a little|somewhat|a lot)")
_NO_PREFERENCE = re.compile(
    r"\b(?:no (?:particular |real |strong )?preference|(?:do not|don't) (?:mind|care)|"
    r"(?:does not|doesn't) matter)\b",
    re.IGNORECASE,
)
_LEVEL_FALLBACK = (
    ("minor", re.compile(r"\b(?:a little|not (?:very )?much|slightly|barely|minor)\b", re.I)),
    ("moderate", re.compile(r"\b(?:somewhat|moderately|fairly|a bit)\b", re.I)),
    ("major", re.compile(r"\b(?:a lot|very much|crucial|essential|major|a great deal)\b", re.I)),
)


# -- phrasing --------------------------------------------------------------------------------


def template_question(candidate: Candidate, taxonomy: Taxonomy) -> str:
    """The question for ``candidate`` from the taxonomy (no LLM)."""
    attribute = taxonomy[candidate.attribute]
    if candidate.kind == "value":
        return attribute.question
    question = attribute.question[0].lower() + attribute.question[1:]
    return (
        "How much does it matter to you (a lot, somewhat, or only a little) how I handle "
        f"this: {question}"
    )


def phrase_messages(task: str, candidate: Candidate, attribute: Attribute) -> tuple[Message, ...]:
    """Ask the model to word the question about ``candidate`` (role ``phrase``)."""
    labels = ", ".join(v.label for v in attribute.values)
    what = (
        "which of these they prefer, or whether they have no preference"
        if candidate.kind == "value"
        else "how much this matters to them: a lot, somewhat, or only a little"
    )
    return (
        Message("system", PHRASE_SYSTEM),
        Message(
            "user",
            f"The user's problem:\n\n{task}\n\n"
            f"Aspect: {attribute.name} — {attribute.description}\n"
            f"Possible preferences: {labels}\n"
            f"Ask: {candidate.kind}\n\n"
            f"Write one natural clarifying question asking the user {what}. Ask about this "
            "aspect only, not about the problem itself. " + PHRASE_FORMAT,
        ),
    )


def parse_phrase(text: str) -> str | None:
    """The question in a phrasing reply, or None (no single short question)."""
    lines = [ln.strip().strip("`*\"'").strip() for ln in (text or "").splitlines() if ln.strip()]
    if len(lines) != 1:
        return None
    line = re.sub(r"^(?:QUESTION|Q)\s*[:：]\s*", "", lines[0], flags=re.IGNORECASE)
    if not line.endswith("?") or not 8 <= len(line) <= 300:
        return None
    return line


def phrase_stage(
    taxonomy: Taxonomy, task: str, model: str, params: dict[str, Any], tries: int
) -> Stage[Candidate]:
    """Phrasing one question: a single question line, or asked again with the bad reply shown
    back, up to ``tries`` requests (then the template, see `phrase_question`)."""

    def request(candidate: Candidate, previous: tuple[str, ...]) -> LLMRequest:
        messages = phrase_messages(task, candidate, taxonomy[candidate.attribute])
        for text in previous:
            messages = (*messages, *prompts.retry_turn(text, PHRASE_FORMAT))
        return LLMRequest(model, messages, params, sample=len(previous), role="phrase")

    return Stage(
        "phrase",
        request=request,
        parse=lambda candidate, text: parse_phrase(text),
        describe=lambda candidate: candidate.to_json(),
        tries=tries,
    )


def scripted_phrase_handler(taxonomy: Taxonomy) -> Any:
    """A scripted ``phrase`` role: the template question of the aspect in the prompt."""

    def handler(request: LLMRequest) -> str:
        text = next((m.content for m in request.messages if m.role == "user"), "")
        name = re.search(r"^Aspect: (.+?) — ", text, re.MULTILINE)
        kind = re.search(r"^Ask: (value|importance)$", text, re.MULTILINE)
        attribute = taxonomy.by_name(name.group(1)) if name else None
        if attribute is None or kind is None:
            return "I am not sure which aspect to ask about."
        return template_question(Candidate(attribute.id, kind.group(1)), taxonomy)

    return handler


# -- the user side ---------------------------------------------------------------------------


def is_importance_question(question: str) -> bool:
    """Whether a question asks how much something matters (not which value)."""
    return bool(_IMPORTANCE_QUESTION.search(question or ""))


def level_of_weight(weight: float, cuts: Sequence[float]) -> str:
    """The `LEVELS` name of a weight."""
    return LEVELS[sum(weight >= c for c in cuts)]


@dataclass(frozen=True)
class UserAnswer:
    """One reply of the `InterviewUser`.

    Attributes:
        turn: The question, route, value disclosures and reply (`UserTurn`).
        importance: ``(attribute, level)`` pairs the reply disclosed.
    """

    turn: UserTurn
    importance: tuple[tuple[str, str], ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The `UserTurn` JSON (one element of a transcript's ``turns``), plus
        ``importance`` when the reply disclosed levels."""
        data = self.turn.to_json()
        if self.importance:
            data["importance"] = [{"attribute": a, "level": lv} for a, lv in self.importance]
        return data


class InterviewUser:
    """The passive user, also answering importance questions with a coarse level.

    Args:
        profile: The hidden preferences.
        taxonomy: The taxonomy.
        router: Routes questions to attribute ids (the study's router).
        cuts: Weight cut points of the levels (`InterviewPrior.level_cuts`).
    """

    def __init__(
        self,
        profile: PreferenceProfile,
        taxonomy: Taxonomy,
        router: Router,
        cuts: Sequence[float] = (0.2, 0.4),
    ) -> None:
        self.passive = PassiveUser(profile, taxonomy, router)
        self.profile = profile
        self.taxonomy = taxonomy
        self.router = router
        self.cuts = tuple(cuts)
        self.answers: list[UserAnswer] = []

    async def answer(self, question: str) -> UserAnswer:
        """Answer one question (value questions exactly as the `PassiveUser` does)."""
        index = len(self.answers)
        if is_importance_question(question):
            answer = await self._importance(index, question)
        else:
            turn = await self.passive.answer(question)
            disclosures = tuple(replace(d, turn=index) for d in turn.disclosures)
            answer = UserAnswer(replace(turn, turn=index, disclosures=disclosures))
        self.answers.append(answer)
        return answer

    async def _importance(self, index: int, question: str) -> UserAnswer:
        route: Route = await self.router.route(question)
        weights = self.profile.weights
        parts, disclosures, levels = [], [], []
        for attr_id in route.attributes:
            name = self.taxonomy[attr_id].name.lower()
            if attr_id in weights:
                level = level_of_weight(weights[attr_id], self.cuts)
                parts.append(f"How much {name} matters to me: {LEVEL_WORDS[LEVELS.index(level)]}.")
                levels.append((attr_id, level))
            else:
                parts.append(f"About {name}: I have no particular preference.")
                disclosures.append(Disclosure(index, attr_id, None))
        reply = " ".join(parts) or prompts.user_reply([], [])
        turn = UserTurn(index, question, route, tuple(disclosures), reply)
        return UserAnswer(turn, tuple(levels))


# -- reading replies -------------------------------------------------------------------------


@dataclass(frozen=True)
class ReplyReading:
    """What a reply told the interviewer.

    Attributes:
        evidence: One `Evidence` per attribute the reply spoke about.
        malformed: The reply could not be read (neither template nor fallback).
        note: ``answered``, ``misrouted`` (about other attributes only), ``unrouted`` (the
            user did not understand the question) or ``malformed``.
    """

    evidence: tuple[Evidence, ...]
    malformed: bool
    note: str

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready ``dict``."""
        return {
            "evidence": [e.to_json() for e in self.evidence],
            "malformed": self.malformed,
            "note": self.note,
        }


def _templated(reply: str, taxonomy: Taxonomy) -> list[Evidence]:
    found: list[Evidence] = []
    for name, label in _VALUE.findall(reply):
        attribute = taxonomy.by_name(name)
        values = attribute.values if attribute is not None else ()
        value = next((v for v in values if v.label.lower() == label.strip().lower()), None)
        if attribute is not None and value is not None:
            found.append(Evidence(attribute.id, "value", value.value))
    for name in _ABSENT.findall(reply):
        attribute = taxonomy.by_name(name)
        if attribute is not None:
            found.append(Evidence(attribute.id, "value", None))
    for name, words in _LEVEL.findall(reply):
        attribute = taxonomy.by_name(name)
        if attribute is not None:
            found.append(Evidence(attribute.id, "importance", LEVELS[LEVEL_WORDS.index(words)]))
    return found


def _fallback(reply: str, asked: Candidate, taxonomy: Taxonomy) -> Evidence | None:
    if asked.kind == "importance":
        hits = {level for level, pattern in _LEVEL_FALLBACK if pattern.search(reply)}
        return (
            Evidence(asked.attribute, "importance", hits.pop(), "fallback")
            if len(hits) == 1
            else None
        )
    attribute = taxonomy[asked.attribute]
    labels = sorted(attribute.values, key=lambda v: -len(v.label))
    text = reply.lower()
    hits = []
    for v in labels:
        pattern = r"(?<![a-z])" + re.escape(v.label.lower()) + r"(?![a-z])"
        if re.search(pattern, text):
            hits.append(v.value)
            text = re.sub(pattern, " ", text)
    if len(hits) == 1:
        return Evidence(asked.attribute, "value", hits[0], "fallback")
    if not hits and _NO_PREFERENCE.search(reply):
        return Evidence(asked.attribute, "value", None, "fallback")
    return None


def read_reply(reply: str, asked: Candidate, taxonomy: Taxonomy) -> ReplyReading:
    """Read a user's reply to the question about ``asked`` into evidence.

    Args:
        reply: The reply text.
        asked: What the question was about.
        taxonomy: The taxonomy (names and labels).

    Returns:
        The evidence (templates first, then the constrained fallback) and a note.
    """
    evidence = _templated(reply or "", taxonomy)
    if not evidence:
        if (reply or "").strip() == prompts.user_reply([], []):
            return ReplyReading((), False, "unrouted")
        guess = _fallback(reply or "", asked, taxonomy)
        if guess is None:
            return ReplyReading((), True, "malformed")
        evidence = [guess]
    about = any(e.attribute == asked.attribute and e.kind == asked.kind for e in evidence)
    absent = any(e.attribute == asked.attribute and e.value is None for e in evidence)
    return ReplyReading(tuple(evidence), False, "answered" if about or absent else "misrouted")


__all__ = [
    "LEVEL_WORDS",
    "PHRASE_FORMAT",
    "PHRASE_SYSTEM",
    "InterviewUser",
    "ReplyReading",
    "UserAnswer",
    "is_importance_question",
    "level_of_weight",
    "parse_phrase",
    "phrase_messages",
    "phrase_stage",
    "read_reply",
    "scripted_phrase_handler",
    "template_question",
]
