"""The generation prompts: a persona's backstory and a rubric's sharpened anchors, and their
parsers; `retry_turn` shows a malformed reply back (every PrefDisco role retries with it).

Roles: ``persona`` (a backstory, generation with ``enrich``) and ``rubric`` (refined anchors,
generation with ``refine_rubrics``). A parser returns None for a reply that does not follow the
requested format; the caller asks again with `retry_turn` appended (which changes the request,
so a retry is a new cache entry and a new call even at temperature 0).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

from prefduel.llm.request import Message
from prefduel.prefdisco.dataset.taxonomy import Attribute, Value

PERSONA_SYSTEM = (
    "You write short, realistic backstories for simulated users of a study. Write in the third "
    "person and never contradict the profile."
)
BACKSTORY_FORMAT = "Reply with a backstory of 3 to 5 sentences only: no title, no list."
RUBRIC_SYSTEM = "You write precise grading rubrics. Reply with JSON only."
ANCHORS_FORMAT = (
    'Reply with one JSON object {"5": "...", "4": "...", "3": "...", "2": "...", "1": "..."} '
    "and nothing else."
)


def retry_turn(previous: str, instruction: str) -> tuple[Message, Message]:
    """Two messages that show a malformed reply back and restate the format."""
    return (
        Message("assistant", previous[:2000]),
        Message("user", f"That reply could not be read. {instruction}"),
    )


# -- generation ------------------------------------------------------------------------------


def persona_messages(description: str) -> tuple[Message, ...]:
    """Ask for a persona's backstory from its factual description."""
    return (
        Message("system", PERSONA_SYSTEM),
        Message(
            "user",
            f"Profile: {description}\n\nWrite a backstory of 3 to 5 sentences for this person: "
            "their daily life, why they might ask an AI assistant questions, and how they like to "
            "learn. " + BACKSTORY_FORMAT,
        ),
    )


def parse_backstory(text: str) -> str | None:
    """A cleaned backstory, or None if the reply is not one (too short/long, a list, a refusal)."""
    body = (text or "").strip().strip('"').strip()
    if not 40 <= len(body) <= 1500:
        return None
    if body.startswith(("{", "[", "#", "-", "*")):
        return None
    if re.match(r"(?i)(i can(no|')t|i'm sorry|as an ai)", body):
        return None
    return " ".join(body.split())


def rubric_messages(
    attribute: Attribute, value: Value, anchors: Sequence[str]
) -> tuple[Message, ...]:
    """Ask an LLM to sharpen a templated rubric (anchors for scores 1-5)."""
    others = ", ".join(v.label for v in attribute.values if v.value != value.value)
    draft = "\n".join(f"{s}: {anchors[s - 1]}" for s in range(5, 0, -1))
    return (
        Message("system", RUBRIC_SYSTEM),
        Message(
            "user",
            f"Attribute: {attribute.name} — {attribute.description}\n"
            f"Target preference: {value.label} — {value.description}\n"
            f"Other values of the attribute: {others}\n\n"
            f"Draft rubric (score: anchor):\n{draft}\n\n"
            "Rewrite the five anchors so that a grader can tell the scores apart reliably: "
            "concrete, observable features of a response; 5 = fully matches the target, "
            "1 = clearly the opposite. One or two sentences each. " + ANCHORS_FORMAT,
        ),
    )


def parse_anchors(text: str) -> tuple[str, str, str, str, str] | None:
    """Anchors for scores 1..5 from a rubric reply, or None (not a JSON object of 5 anchors)."""
    match = re.search(r"\{.*\}", text or "", re.DOTALL)
    if not match:
        return None
    try:
        data = json.loads(match.group(0))
    except ValueError:
        return None
    if not isinstance(data, Mapping) or set(data) != {"1", "2", "3", "4", "5"}:
        return None
    anchors = tuple(data[str(s)] for s in range(1, 6))
    if not all(isinstance(a, str) for a in anchors):
        return None
    cleaned = tuple(" ".join(a.split()) for a in anchors)
    return cleaned  # type: ignore[return-value]
