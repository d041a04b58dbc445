"""Datagen's preference questions: the role-playing students answer them, the rater gives the
``level`` questions their loadings.

A datagen world can be asked (`prefduel.worlds.asking`) like a TutorSim world. Its bank is the
standard one (`question_bank`): a ``level`` question per style dimension of the config, a
``pair`` question per persona pair, a ``least`` question per question kind. Two stages fill it:

* **loadings** (one call per style dimension): the rater scores every persona against the
  preference, with the rater's own model, templates and scale, as it scores them against a
  tutoring question (the "question" it reads is ``I want answers like this: <description>``).
  A persona's loading is its score mapped from the rater's scale onto [0, 1]. A dimension whose
  scores are malformed after ``retries.rater`` is left out of the bank.
* **asks** (students x questions calls): the student the judge plays answers each question,
  with the judge's model and sampling settings (request role tag ``student``): a digit 0-4 for a
  ``level`` question, ``A`` (the first tutor) or ``B`` for a ``pair`` question, a tutor's number
  for a ``least`` question, as structured output when the judge asks for it. A question that some
  student answered malformed after ``asks.retries`` is left out of the bank.

Each arrival's answer is its student's answer (arrivals replay students). The answers come from
the model, not from the published answer model, so the bank's ``noise`` is only the value a
reader of the answers assumes (`DEFAULT_ANSWER_NOISE`); ``info["asks"]`` of the world says where
the answers came from.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from prefduel.core.answer_model import DEFAULT_ANSWER_NOISE
from prefduel.datagen.calls import RaterSettings, RoleCalls
from prefduel.datagen.prompts import parse_pick, parse_scores
from prefduel.llm.request import LLMRequest
from prefduel.llm.stages import FAILED, Stage, StageEngine
from prefduel.llm.structured import AnswerFormat
from prefduel.worlds.asking import AskBank, AskQuestion, question_bank
from prefduel.worlds.tutorsim_catalogue import Persona, StyleDim
from prefduel.worlds.tutorsim_catalogue import ProfileEntry as Student

#: The report names of the two stages, in the order they run (after the judge).
ASK_STAGES = ("loadings", "asks")
#: A student answer that is missing (malformed after every try).
NO_ANSWER = -1

ASK_SYSTEM = (
    "You are role-playing a student. Stay in character.\n\n{student}\n\n"
    "Before your tutoring sessions start, you are asked what you want from a tutor. Answer as "
    "this student would."
)
LEVEL_USER = (
    "{question}\n\nReply with a single digit from 0 to 4: 0 = not at all, 1 = a little, "
    "2 = somewhat, 3 = a lot, 4 = very much."
)
PAIR_USER = (
    "{question}\n\nTutor A ({name_a}): {prompt_a}\n\nTutor B ({name_b}): {prompt_b}\n\n"
    "Which tutor would you rather have? Reply with a single letter, A or B."
)
LEAST_USER = (
    "{question}\n\nThe tutors:\n{tutors}\n\n"
    "Reply with the number of the tutor you would want least, and nothing else."
)
#: The text the rater reads for a style dimension, in place of a tutoring question.
STATEMENT = "I want answers like this: {description}"
LEVEL_CHOICES = ("0", "1", "2", "3", "4")
PAIR_CHOICES = ("A", "B")
_TOKEN = re.compile(r"(?<![A-Za-z0-9])([A-Za-z0-9]+)(?![A-Za-z0-9])")


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _describe_dim(dim: StyleDim) -> str:
    return (dim.description or dim.id.replace("_", " ")).strip()


def parse_choice(text: str, choices: Sequence[str]) -> str | None:
    """The one choice a reply names (``"3"``, ``**3**``, ``3 - a lot``), or None when it names
    none or several."""
    found = {token for token in _TOKEN.findall(text) if token in choices}
    return found.pop() if len(found) == 1 else None


@dataclass(frozen=True)
class AskSettings:
    """The two ask stages' settings.

    Attributes:
        student: The students' calls: the judge's model and sampling settings, role tag
            ``student``, ``asks.retries`` + 1 tries.
        rater: The rater's settings (its model, templates and scale score the loadings).
        students: The students (each answers every question).
        personas: The K personas.
        style: The style dimensions (one ``level`` question each).
        kinds: The question kinds (one ``least`` question each).
    """

    student: RoleCalls
    rater: RaterSettings
    students: tuple[Student, ...]
    personas: tuple[Persona, ...]
    style: tuple[StyleDim, ...]
    kinds: tuple[str, ...]

    def bank(self) -> tuple[AskQuestion, ...]:
        """The questions (``level`` loadings are zeros until the rater scores them)."""
        dims = [(d.id, _describe_dim(d)) for d in self.style]
        zeros = np.zeros((len(self.personas), len(dims)))
        return question_bank(dims, zeros, [p.name or p.id for p in self.personas], self.kinds)

    def statement(self, dim: int) -> str:
        """What the rater reads for style dimension ``dim``."""
        return STATEMENT.format(description=_describe_dim(self.style[dim]))

    def rater_request(self, dim: int, sample: int = 0) -> LLMRequest:
        """The rater's request scoring every persona against style dimension ``dim``."""
        return self.rater.request(self.statement(dim), sample)

    def user(self, question: AskQuestion) -> str:
        """The student's prompt for ``question``."""
        if question.kind == "level":
            return LEVEL_USER.format(question=question.text)
        if question.kind == "pair":
            a, b = (self.personas[i] for i in question.pair)
            return PAIR_USER.format(
                question=question.text,
                name_a=a.name or a.id,
                prompt_a=_one_line(a.prompt),
                name_b=b.name or b.id,
                prompt_b=_one_line(b.prompt),
            )
        tutors = "\n".join(
            f"{i + 1}. {p.name or p.id}: {_one_line(p.prompt)}" for i, p in enumerate(self.personas)
        )
        return LEAST_USER.format(question=question.text, tutors=tutors)

    def system(self, student: Student) -> str:
        """The student's system prompt (the role the judge plays)."""
        return ASK_SYSTEM.format(student=student.description)

    def request(self, student: Student, question: AskQuestion, sample: int = 0) -> LLMRequest:
        """The request of ``student``'s answer to ``question``."""
        return self.student.request(self.system(student), self.user(question), sample)

    def choices(self, question: AskQuestion) -> tuple[str, ...]:
        """The labels a reply to ``question`` may give."""
        if question.kind == "level":
            return LEVEL_CHOICES
        if question.kind == "pair":
            return PAIR_CHOICES
        return tuple(str(i + 1) for i in range(len(self.personas)))

    def parse(self, question: AskQuestion, text: str) -> int | None:
        """The answer value (`prefduel.worlds.asking`) of a reply, or None if malformed."""
        if question.kind == "pair":
            pick = parse_pick(text)
            return None if pick is None else int(pick == "A")
        label = parse_choice(text, self.choices(question))
        if label is None:
            return None
        return int(label) if question.kind == "level" else int(label) - 1


@dataclass
class AskCollected:
    """What the two ask stages collected.

    Attributes:
        questions: The bank (``level`` loadings still zeros).
        scores: ``level`` question index -> persona id -> rater score (or a marker).
        answers: ``(I, Q)`` each student's answer; `NO_ANSWER` where malformed or not known.
        failed: Whether a call failed (the run is then incomplete).
        scale: The rater's lowest and highest score.
    """

    questions: tuple[AskQuestion, ...]
    scale: tuple[float, float] = (0.0, 1.0)
    scores: dict[int, Any] = field(default_factory=dict)
    answers: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.int64))
    failed: bool = False


class AskStages:
    """The loadings and asks stages of one run, for the stage engine.

    Args:
        settings: The stages' settings.
        engine: The stage engine (reports ``loadings`` and ``asks``).
    """

    def __init__(self, settings: AskSettings, engine: StageEngine) -> None:
        self.settings = settings
        self.engine = engine

    def _loadings_stage(self, questions: tuple[AskQuestion, ...]) -> Stage[int]:
        s = self.settings.rater
        return Stage(
            "loadings",
            request=lambda d, previous: self.settings.rater_request(d, len(previous)),
            parse=lambda d, text: parse_scores(text, s.ids, s.scale),
            placeholder=lambda d: dict.fromkeys(s.ids, 0.0),
            describe=lambda d: {"item": questions[d].id},
            tries=s.calls.tries,
            answer=s.answer_format,
            structured=s.calls.structured,
        )

    def _student_stage(self, kind: str, questions: tuple[AskQuestion, ...]) -> Stage[Any]:
        settings, calls = self.settings, self.settings.student
        example = next(q for q in questions if q.kind == kind)
        return Stage(
            "asks",
            request=lambda key, previous: settings.request(
                settings.students[key[0]], questions[key[1]], len(previous)
            ),
            parse=lambda key, text: settings.parse(questions[key[1]], text),
            placeholder=lambda key: NO_ANSWER,
            describe=lambda key: {
                "item": questions[key[1]].id,
                "student": settings.students[key[0]].id,
            },
            tries=calls.tries,
            answer=AnswerFormat.choice(f"{kind}_answer", settings.choices(example), field="answer"),
            structured=calls.structured,
        )

    async def run(self) -> AskCollected:
        """Score the loadings, then ask every student every question."""
        questions = self.settings.bank()
        out = AskCollected(questions, self.settings.rater.scale)
        levels = [q for q, question in enumerate(questions) if question.kind == "level"]
        self.engine.start("loadings", len(levels))
        outcomes = await self.engine.run(self._loadings_stage(questions), levels)
        self.engine.finish("loadings")
        out.scores = {q: o.value for q, o in zip(levels, outcomes, strict=True)}
        n_students = len(self.settings.students)
        out.answers = np.full((n_students, len(questions)), NO_ANSWER, np.int64)
        self.engine.start("asks", n_students * len(questions))
        for kind in ("level", "pair", "least"):
            keys = [
                (i, q)
                for i in range(n_students)
                for q, question in enumerate(questions)
                if question.kind == kind
            ]
            if not keys:
                continue
            for (i, q), outcome in zip(
                keys, await self.engine.run(self._student_stage(kind, questions), keys), strict=True
            ):
                if isinstance(outcome.value, int):
                    out.answers[i, q] = outcome.value
                out.failed |= outcome.value is FAILED
        self.engine.finish("asks")
        out.failed |= any(v is FAILED for v in out.scores.values())
        return out


def ask_bank(
    collected: AskCollected,
    student_index: np.ndarray,
    persona_ids: Sequence[str],
) -> tuple[AskBank | None, dict[str, Any]]:
    """The world's bank: the questions every student answered (and, for ``level``, the rater
    scored), each arrival answering as its student.

    Args:
        collected: What the ask stages collected (every call answered).
        student_index: ``(N,)`` the student of each arrival.
        persona_ids: The personas' ids, in order.

    Returns:
        The bank (None when no question is left) and what ``info["asks"]`` records: where the
        answers and loadings came from and the questions left out.
    """
    lo, hi = collected.scale
    kept, dropped = [], []
    for q, question in enumerate(collected.questions):
        scores = collected.scores.get(q)
        if (collected.answers[:, q] == NO_ANSWER).any() or (
            question.kind == "level" and not isinstance(scores, dict)
        ):
            dropped.append(question.id)
            continue
        if question.kind == "level":
            loadings = tuple((float(scores[p]) - lo) / (hi - lo) for p in persona_ids)
            question = AskQuestion(question.id, "level", question.text, loadings=loadings)
        kept.append((q, question))
    info = {
        "answers": "the role-playing students (the judge's model), one answer per student",
        "loadings": "rater scores of each persona against each style dimension, on [0, 1]",
        "noise": "not drawn: the bank's noise is the published default a reader assumes",
        "dropped": dropped,
    }
    if not kept:
        return None, info
    columns = [q for q, _ in kept]
    answers = np.ascontiguousarray(collected.answers[:, columns][student_index], dtype=np.int64)
    bank = AskBank(tuple(question for _, question in kept), answers, DEFAULT_ANSWER_NOISE)
    return bank, info


__all__ = [
    "ASK_STAGES",
    "ASK_SYSTEM",
    "NO_ANSWER",
    "AskCollected",
    "AskSettings",
    "AskStages",
    "ask_bank",
    "parse_choice",
]
