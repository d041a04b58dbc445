"""Prompt templates of the four roles, their placeholders, and robust answer parsers.

Every prompt is a system and a user message rendered from a template with ``str.format``
placeholders (write literal braces as ``{{`` and ``}}``). The defaults (`DEFAULT_TEMPLATES`)
can be replaced per template in the config's ``prompts:`` section; a replacement must keep the
required placeholders and may use only the allowed ones (`PLACEHOLDERS`):

=================  ===========================================  ==============================
template           placeholders (required first)                answer expected
=================  ===========================================  ==============================
``question_user``  concept, kind, cue; topic, topic_name,       one question ending with the
                   subject, kind_description, example_line      cue sentence
``answer_system``  persona_prompt; persona_id, persona_name     (the persona's answer)
``answer_user``    question
``rater_user``     question, personas; example, scale_min,      JSON ``{persona id: score}``
                   scale_max, n_personas
``judge_system``   student; student_name                        ``A`` or ``B``
``judge_user``     question, label_1, answer_1, label_2,
                   answer_2
=================  ===========================================  ==============================

``question_system`` and ``rater_system`` need no placeholder. Parsers return None for an answer
they cannot use (a *malformed* answer): the pipeline records it and, for questions, answers and
rater scores, asks again with the next sample index.
"""

from __future__ import annotations

import json
import math
import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields

#: Labels shown to the judge; a pick is one of them.
LABELS = ("A", "B")

DEFAULT_TEMPLATES: dict[str, str] = {
    "question_system": (
        "You write realistic questions that students ask a tutor. Write in the first person, "
        "as the student would type the question."
    ),
    "question_user": (
        "Write one {kind} question ({kind_description}) about {concept} in {topic_name} "
        "({subject}), as a student would ask it.{example_line}\n"
        'End the question with this sentence, word for word: "{cue}"\n'
        "Reply with the question only."
    ),
    "answer_system": "{persona_prompt}",
    "answer_user": "{question}",
    "rater_system": (
        "You are an experienced teacher. You judge which teaching style suits a student's "
        "question, from the question and the tutors' instructions alone."
    ),
    "rater_user": (
        "A student asked:\n\n{question}\n\n"
        "Here are {n_personas} tutor personas, each given by its instructions:\n\n{personas}\n\n"
        "For each persona, rate from {scale_min} to {scale_max} how well an answer written in "
        "that persona's style would suit this question ({scale_max} = ideal). Reply with only "
        "a JSON object that maps every persona id to its score, like {example}"
    ),
    "judge_system": (
        "You are role-playing a student. Stay in character.\n\n{student}\n\n"
        "You asked a tutor a question and received two answers. Decide which one you, as this "
        "student, would prefer."
    ),
    "judge_user": (
        "Your question:\n{question}\n\n"
        "Answer {label_1}:\n{answer_1}\n\n"
        "Answer {label_2}:\n{answer_2}\n\n"
        "Which answer do you prefer? Reply with a single letter, A or B."
    ),
}

#: Template name -> (required placeholders, allowed placeholders).
PLACEHOLDERS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "question_system": (
        frozenset(),
        frozenset({"concept", "kind", "cue", "topic", "topic_name", "subject", "kind_description"}),
    ),
    "question_user": (
        frozenset({"concept", "kind", "cue"}),
        frozenset(
            {
                "concept",
                "kind",
                "cue",
                "topic",
                "topic_name",
                "subject",
                "kind_description",
                "example_line",
            }
        ),
    ),
    "answer_system": (
        frozenset({"persona_prompt"}),
        frozenset({"persona_prompt", "persona_id", "persona_name"}),
    ),
    "answer_user": (frozenset({"question"}), frozenset({"question"})),
    "rater_system": (frozenset(), frozenset({"scale_min", "scale_max", "n_personas"})),
    "rater_user": (
        frozenset({"question", "personas"}),
        frozenset({"question", "personas", "example", "scale_min", "scale_max", "n_personas"}),
    ),
    "judge_system": (frozenset({"student"}), frozenset({"student", "student_name"})),
    "judge_user": (
        frozenset({"question", "label_1", "answer_1", "label_2", "answer_2"}),
        frozenset({"question", "label_1", "answer_1", "label_2", "answer_2"}),
    ),
}


def placeholders(template: str) -> list[str]:
    """The placeholder names of a ``str.format`` template, in order (repeats kept).

    Raises:
        ValueError: The template is not a valid format string, or uses positional, indexed
            or attribute fields, conversions or format specs.
    """
    names = []
    for _, name, spec, conversion in string.Formatter().parse(template):
        if name is None:
            continue
        if not name.isidentifier():
            raise ValueError(f"placeholder {{{name}}} is not a plain name")
        if spec or conversion:
            raise ValueError(f"placeholder {{{name}}} must not have a format spec or conversion")
        names.append(name)
    return names


def check_template(name: str, template: str) -> None:
    """Check a template against `PLACEHOLDERS`.

    Raises:
        ValueError: Naming missing or unknown placeholders.
    """
    required, allowed = PLACEHOLDERS[name]
    used = placeholders(template)
    missing = sorted(required - set(used))
    if missing:
        raise ValueError(f"missing placeholders {missing} (required: {sorted(required)})")
    unknown = sorted(set(used) - allowed)
    if unknown:
        raise ValueError(f"unknown placeholders {unknown} (allowed: {sorted(allowed)})")


@dataclass(frozen=True)
class Templates:
    """The eight prompt templates (system and user message of each role)."""

    question_system: str = DEFAULT_TEMPLATES["question_system"]
    question_user: str = DEFAULT_TEMPLATES["question_user"]
    answer_system: str = DEFAULT_TEMPLATES["answer_system"]
    answer_user: str = DEFAULT_TEMPLATES["answer_user"]
    rater_system: str = DEFAULT_TEMPLATES["rater_system"]
    rater_user: str = DEFAULT_TEMPLATES["rater_user"]
    judge_system: str = DEFAULT_TEMPLATES["judge_system"]
    judge_user: str = DEFAULT_TEMPLATES["judge_user"]

    def to_json(self) -> dict[str, str]:
        """The templates by name."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


class TemplateParser:
    """Recovers the placeholder values from a rendered template (used by the scripted backend).

    Each placeholder becomes a lazy capture group; literal text must match exactly, repeated
    placeholders must repeat the same value. Works when the literal text between placeholders
    does not occur inside the values (true of the defaults and any sensible template).

    Args:
        template: A ``str.format`` template.
    """

    def __init__(self, template: str) -> None:
        parts = []
        seen: set[str] = set()
        for literal, name, _, _ in string.Formatter().parse(template):
            parts.append(re.escape(literal))
            if name is None:
                continue
            if name in seen:
                parts.append(f"(?P={name})")
            else:
                seen.add(name)
                parts.append(f"(?P<{name}>.*?)")
        self.template = template
        self._regex = re.compile("^" + "".join(parts) + "$", re.DOTALL)

    def parse(self, text: str) -> dict[str, str] | None:
        """The placeholder values, or None when ``text`` is not a rendering of the template."""
        match = self._regex.match(text)
        return None if match is None else match.groupdict()


# -- answer parsers ---------------------------------------------------------------------------

_QUOTES = "\"'“”‘’`"
_PREFIX = re.compile(r"^\s*(?:\*\*)?(?:question|q)\s*[:.\-]\s*(?:\*\*)?\s*", re.IGNORECASE)
MAX_QUESTION_CHARS = 2000


def parse_question(text: str, cue: str) -> str | None:
    """A generated question, cleaned: surrounding quotes and a ``Question:`` prefix removed,
    whitespace collapsed, the cue appended when the model left it out.

    Returns:
        The question, or None if empty or longer than `MAX_QUESTION_CHARS`.
    """
    body = text.strip()
    body = _PREFIX.sub("", body).strip().strip(_QUOTES).strip()
    body = " ".join(body.split())
    if not body or len(body) > MAX_QUESTION_CHARS:
        return None
    cue = " ".join(cue.split())
    if cue and cue.lower() not in body.lower():
        body = f"{body} {cue}"
    return body


#: Most characters per completion token an answer may have: answers longer than their role's
#: ``max_tokens`` allows came from an endpoint that ignored it.
CHARS_PER_TOKEN = 8
#: Most completion tokens of one answer (a role's ``max_tokens`` and ``expected_tokens``; an
#: answer of a role without ``max_tokens`` may have this many): a dry run holds a placeholder of
#: this length for every uncached answer, and a judge prompt holds two answers.
MAX_TOKENS = 16_384


def parse_answer(text: str, max_tokens: int | None = None) -> str | None:
    """A persona's answer, stripped; None if empty or longer than ``max_tokens`` allows
    (`CHARS_PER_TOKEN` characters a token: each answer goes into many judge prompts)."""
    body = text.strip()
    if len(body) > CHARS_PER_TOKEN * (max_tokens or MAX_TOKENS):
        return None
    return body or None


_LABEL_ONLY = re.compile(
    r"^[\s\W_]*(?:(?:answer|option|choice|response)\s*)?[\s\W_]*([AB])[\s\W_]*$", re.IGNORECASE
)
_LABEL_TOKEN = re.compile(r"(?<![A-Za-z0-9])([AB])(?![A-Za-z0-9])")
_PREFER = re.compile(
    r"(?:prefer|choose|pick|select|better(?: one)? is|answer is)\s*(?:answer|option)?\s*"
    r"[\W_]*([AB])(?![A-Za-z0-9])",
    re.IGNORECASE,
)


def parse_pick(text: str) -> str | None:
    """The judge's pick, ``"A"`` or ``"B"``, or None when it is not clear.

    Accepted: a bare letter with any punctuation or markdown (``A``, ``"b".``, ``**A**``,
    ``(B)``), ``Answer A``, ``I prefer B ...``; otherwise the answer must contain exactly one
    of the standalone capital letters A and B. Anything else (both letters, neither, a
    refusal) is malformed.
    """
    body = text.strip()
    if not body:
        return None
    match = _LABEL_ONLY.match(body)
    if match:
        return match.group(1).upper()
    match = _PREFER.search(body)
    if match:
        return match.group(1).upper()
    letters = set(_LABEL_TOKEN.findall(body))
    if len(letters) == 1:
        return letters.pop()
    return None


_JSON_OBJECT = re.compile(r"\{.*?\}", re.DOTALL)


def _number(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip().split("/")[0])
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


def parse_scores(
    text: str, persona_ids: Sequence[str], scale: tuple[float, float]
) -> dict[str, float] | None:
    """The rater's scores of every persona, or None when any is missing or out of range.

    Reads the first JSON object in the answer (code fences and prose around it are fine;
    keys match persona ids case-insensitively); if there is none, falls back to lines such as
    ``concise_coach: 7`` or ``- concise_coach = 7/10``.

    Args:
        text: The rater's answer.
        persona_ids: Every persona that must be scored.
        scale: ``(lowest, highest)`` allowed score.

    Returns:
        ``{persona id: score}`` for all personas, or None.
    """
    lo, hi = scale
    wanted = {pid.lower(): pid for pid in persona_ids}
    found: dict[str, float] = {}
    for block in _JSON_OBJECT.findall(text):
        try:
            data = json.loads(block)
        except ValueError:
            continue
        if isinstance(data, Mapping):
            for key, value in data.items():
                pid = wanted.get(str(key).strip().lower())
                number = _number(value)
                if pid is not None and number is not None:
                    found[pid] = number
            break
    if len(found) < len(wanted):
        for low, pid in wanted.items():
            if pid in found:
                continue
            match = re.search(
                rf"(?<![A-Za-z0-9_]){re.escape(low)}(?![A-Za-z0-9_])[\"'*\s]*[:=\-]\s*"
                r"(-?\d+(?:\.\d+)?)",
                text,
                re.IGNORECASE,
            )
            if match:
                found[pid] = float(match.group(1))
    if len(found) != len(wanted):
        return None
    if any(not lo <= v <= hi for v in found.values()):
        return None
    return {pid: found[pid] for pid in persona_ids}


__all__ = [
    "DEFAULT_TEMPLATES",
    "LABELS",
    "PLACEHOLDERS",
    "TemplateParser",
    "Templates",
    "check_template",
    "parse_answer",
    "parse_pick",
    "parse_question",
    "parse_scores",
    "placeholders",
]
