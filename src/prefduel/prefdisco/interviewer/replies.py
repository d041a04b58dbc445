"""Questions and replies of the Bayesian interviewer: phrasing, the user side, reading replies.

* **Phrasing.** The interviewer decides *what* to ask (a `Candidate`); the words come from the
  taxonomy's natural question (``template``) or from the model (role ``phrase``,
  `phrase_stage`): one short question, parsed (`parse_phrase`) and retried with the bad reply
  shown back; after ``tries`` unusable replies the template is used and the fallback recorded.
  `scripted_phrase_handler` plays the ``phrase`` role offline.
* **The user.** The interviewer's questions go to the study's `PassiveUser`, with the run's
  ``user_style``, as the model's questions do; it answers importance questions
  (`prefduel.prefdisco.episode.user.is_importance_question`) with a coarse level.
* **Reading replies.** `read_reply` turns a reply into `Evidence`: first the simulated user's
  templates in every style: cooperative (``About X: I prefer L — ...``, ``About X: I have no
  particular preference``), terse (``X: L.``, ``X: no preference.``), vague (``About X: more
  towards L, I guess.``, ``... somewhere in the middle ...``, ``... maybe L or M, I'm not
  sure.``, ``... I don't really mind ...``: a *hint*, the set of values the reply leaves
  possible) and importance (``How much X matters to me: ...``); then, for free-text replies
  of a real user, a constrained fallback (exactly one value label of the asked attribute, a
  "no preference" phrase, or one importance phrase). Anything else is recorded as malformed,
  never guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from prefduel.llm.request import LLMRequest, Message
from prefduel.llm.stages import Stage
from prefduel.prefdisco.dataset.prompts import retry_turn
from prefduel.prefdisco.dataset.taxonomy import Attribute, Taxonomy
from prefduel.prefdisco.episode import prompts
from prefduel.prefdisco.episode.prompts import IMPORTANCE_WORDS, PHRASE_FORMAT, PHRASE_SYSTEM
from prefduel.prefdisco.episode.user import IMPORTANCE_LEVELS
from prefduel.prefdisco.interviewer.belief import Candidate, Evidence

_VALUE = re.compile(r"About ([^:\n]+): I prefer (.+?) — ")
_ABSENT = re.compile(r"About ([^:\n]+): (?:I have no particular preference|I don't really mind)")
_LEVEL = re.compile(r"How much ([^:\n]+) matters to me: (only a little|somewhat|a lot)")
# a terse user: "Length of the response: short." (one attribute, the label only)
_TERSE = re.compile(r"^([A-Z][^:\n]*): ([^:.\n]+)\.$")
_VAGUE_SIDE = re.compile(r"About ([^:\n]+): more towards (.+?), I guess")
_VAGUE_MIDDLE = re.compile(r"About ([^:\n]+): somewhere in the middle")
_VAGUE_MAYBE = re.compile(r"About ([^:\n]+): maybe (.+?)(?: or (.+?))?, I'm not sure")
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
            messages = (*messages, *retry_turn(text, PHRASE_FORMAT))
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


def _label(attribute: Attribute, label: str) -> str | None:
    """The value id of a label of ``attribute`` (case-insensitive), or None."""
    wanted = label.strip().lower()
    return next((v.value for v in attribute.values if v.label.lower() == wanted), None)


def _named(pairs: list[Any], taxonomy: Taxonomy) -> list[tuple[Attribute, Any]]:
    """``(attribute, rest)`` for the regex matches whose first group names an attribute."""
    out = []
    for match in pairs:
        name, rest = (match, ()) if isinstance(match, str) else (match[0], match[1:])
        attribute = taxonomy.by_name(name)
        if attribute is not None:
            out.append((attribute, rest))
    return out


def _side(attribute: Attribute, end: str) -> tuple[str, ...]:
    """The values on the side of an ordinal scale that ``end`` (its first or last label)
    names: what "more towards <end>" leaves possible."""
    values = attribute.values
    middle = (len(values) - 1) / 2
    first = values[0].label.lower() == end.strip().lower()
    return tuple(v.value for i, v in enumerate(values) if (i < middle if first else i > middle))


def _vague(reply: str, taxonomy: Taxonomy) -> list[Evidence]:
    """The hints of a vague user's reply (a single candidate is a value)."""
    candidates: list[tuple[Attribute, tuple[str, ...]]] = []
    for attribute, (end,) in _named(_VAGUE_SIDE.findall(reply), taxonomy):
        candidates.append((attribute, _side(attribute, end)))
    for attribute, _ in _named(_VAGUE_MIDDLE.findall(reply), taxonomy):
        candidates.append((attribute, (attribute.values[(len(attribute.values) - 1) // 2].value,)))
    for attribute, labels in _named(_VAGUE_MAYBE.findall(reply), taxonomy):
        among = tuple(v for v in (_label(attribute, x) for x in labels if x) if v is not None)
        candidates.append((attribute, among))
    # one candidate left ("more towards intuitive" on a 3-level scale) is the value itself
    return [
        Evidence(a.id, "value", among[0])
        if len(among) == 1
        else Evidence(a.id, "hint", None, among=among)
        for a, among in candidates
        if among
    ]


def _templated(reply: str, taxonomy: Taxonomy) -> list[Evidence]:
    """The evidence in the simulated user's templates (every style)."""
    found: list[Evidence] = []
    for attribute, (label,) in _named(_VALUE.findall(reply), taxonomy):
        value = _label(attribute, label)
        if value is not None:
            found.append(Evidence(attribute.id, "value", value))
    for attribute, _ in _named(_ABSENT.findall(reply), taxonomy):
        found.append(Evidence(attribute.id, "value", None))
    for attribute, (words,) in _named(_LEVEL.findall(reply), taxonomy):
        level = IMPORTANCE_LEVELS[IMPORTANCE_WORDS.index(words)]
        found.append(Evidence(attribute.id, "importance", level))
    terse = _TERSE.fullmatch(reply.strip())
    attribute = taxonomy.by_name(terse.group(1)) if terse else None
    if terse and attribute is not None:
        said = terse.group(2).strip().lower()
        value = None if said == "no preference" else _label(attribute, said)
        if value is not None or said == "no preference":
            found.append(Evidence(attribute.id, "value", value))
    return found + _vague(reply, taxonomy)


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
    kinds = (asked.kind, "hint") if asked.kind == "value" else (asked.kind,)
    about = any(e.attribute == asked.attribute and e.kind in kinds for e in evidence)
    absent = any(
        e.attribute == asked.attribute and e.kind == "value" and e.value is None for e in evidence
    )
    return ReplyReading(tuple(evidence), False, "answered" if about or absent else "misrouted")


__all__ = [
    "PHRASE_FORMAT",
    "PHRASE_SYSTEM",
    "ReplyReading",
    "parse_phrase",
    "phrase_messages",
    "phrase_stage",
    "read_reply",
    "scripted_phrase_handler",
    "template_question",
]
