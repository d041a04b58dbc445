"""Each LLM stage's own settings, and the requests it builds from them.

`prefduel.datagen.settings.split_config` cuts a config into these at the pipeline's boundary:
the questions stage gets `QuestionSettings`, the answers stage `AnswerSettings`, the rater
`RaterSettings` and the judge `JudgeSettings`; each holds its role's `RoleCalls` (the model
name sent, the sampling settings, the tries) and only the entries and templates its prompts
use.

The bank (`QuestionSettings.bank`) is ``topics x chains x kinds x cues_per_question``
questions, in that nesting order. The cues of each (topic, chain, kind) are drawn without
replacement from ``stream(seed, "datagen", "cues", topic, chain, kind)``, so adding a topic
leaves the other questions' cues unchanged.

Requests (role tag, sample index and all parameters are part of the cache key):

=========  ================================================  ================================
stage      one request per                                   sample index
=========  ================================================  ================================
question   question spec                                     try ``t`` (0, then retries)
answer     (question, persona)                               try ``t``
rater      question (one call rates all K personas)          try ``t``
judge      (student, question, pair a<b, display order,      ``s + t * samples`` for sample
           label assignment, sample)                         ``s`` and try ``t``
judge      (student, question, pair a<b, display order,      0, with the ``logprobs`` and
(logprobs) label assignment)                                 ``top_logprobs`` parameters
=========  ================================================  ================================

A role with ``structured`` set gets its answer's `AnswerFormat` (each settings'
``answer_format``) added by the stage engine as ``response_format``.

With the scripted backend every model name is the fingerprint of the scripted truth
(`prefduel.datagen.settings.scripted_model_name`): the cache then never serves answers of
another truth (e.g. after a student's taste was edited).
"""

from __future__ import annotations

import dataclasses
import functools
import json
from dataclasses import dataclass
from typing import Any

from prefduel.core.rng import stream
from prefduel.datagen.config_file import RoleModel
from prefduel.datagen.prompts import LABELS
from prefduel.llm.logprobs import logprob_params
from prefduel.llm.request import LLMRequest
from prefduel.llm.structured import AnswerFormat
from prefduel.worlds.tutorsim import JUDGE_CONFIGS
from prefduel.worlds.tutorsim_catalogue import Cue, Kind, Persona, Topic
from prefduel.worlds.tutorsim_catalogue import ProfileEntry as Student


@dataclass(frozen=True)
class QuestionSpec:
    """What the question model is asked to write.

    Attributes:
        index: Row in the bank.
        id: ``topic/chain/kind/cue``.
        topic: Topic id.
        topic_name: Topic display name.
        subject: Subject ("" if none).
        chain: Chain index within the topic.
        concept: The chain's concept.
        kind: Kind id.
        kind_description: The kind's description.
        cue: Cue id.
        cue_text: The cue sentence that ends the question.
        example: An example question of this kind from the topic file, if any.
    """

    index: int
    id: str
    topic: str
    topic_name: str
    subject: str
    chain: int
    concept: str
    kind: str
    kind_description: str
    cue: str
    cue_text: str
    example: str | None

    def to_json(self) -> dict[str, Any]:
        """Metadata stored with the world (without the row index)."""
        data = dataclasses.asdict(self)
        data.pop("index")
        return data


@dataclass(frozen=True)
class RoleCalls:
    """How one role's calls are made.

    Attributes:
        role: ``question``, ``answer``, ``rater`` or ``judge`` (the requests' role tag).
        model: The model name sent (the scripted truth's fingerprint with the scripted backend).
        settings: The role's sampling settings (``models.<role>``).
        tries: Tries per item: 1 and the role's ``retries`` for malformed answers.
    """

    role: str
    model: str
    settings: RoleModel
    tries: int

    @functools.cached_property
    def _params(self) -> dict[str, Any]:
        return self.settings.request_params()

    @property
    def structured(self) -> str:
        """The role's structured-output mode."""
        return self.settings.structured

    def placeholder_chars(self) -> int:
        """Characters of a dry run's stand-in for an uncached answer of this role."""
        return 4 * self.settings.completion_estimate()

    def request(
        self, system: str, user: str, sample: int, extra: dict[str, Any] | None = None
    ) -> LLMRequest:
        """The chat request of sample ``sample`` (the role's seed plus the sample index)."""
        seed = self.settings.seed
        return LLMRequest.chat(
            self.model,
            user,
            system=system or None,
            role=self.role,
            sample=sample,
            seed=None if seed is None else seed + sample,
            **{**self._params, **(extra or {})},
        )


@dataclass(frozen=True)
class QuestionSettings:
    """The questions stage: the bank's entries and the question templates.

    Attributes:
        calls: The question role's calls.
        seed: Seed of the cue draws.
        topics: Topics (each of its chains is a concept).
        kinds: Question kinds.
        cues: Cues.
        cues_per_question: Cues drawn for each (topic, chain, kind).
        system: The ``question_system`` template.
        user: The ``question_user`` template.
    """

    calls: RoleCalls
    seed: int
    topics: tuple[Topic, ...]
    kinds: tuple[Kind, ...]
    cues: tuple[Cue, ...]
    cues_per_question: int
    system: str
    user: str

    answer_format = AnswerFormat.text("question", field="question")

    def bank(self) -> list[QuestionSpec]:
        """Every question spec, in bank order (topics x chains x kinds x cues_per_question)."""
        bank = []
        for topic in self.topics:
            for c_idx, chain in enumerate(topic.chains):
                for kind in self.kinds:
                    rng = stream(self.seed, "datagen", "cues", topic.id, c_idx, kind.id)
                    picks = rng.choice(len(self.cues), size=self.cues_per_question, replace=False)
                    for cue_index in picks:
                        cue = self.cues[int(cue_index)]
                        bank.append(
                            QuestionSpec(
                                index=len(bank),
                                id=f"{topic.id}/{c_idx}/{kind.id}/{cue.id}",
                                topic=topic.id,
                                topic_name=topic.name,
                                subject=topic.subject,
                                chain=c_idx,
                                concept=chain.concept,
                                kind=kind.id,
                                kind_description=kind.description,
                                cue=cue.id,
                                cue_text=cue.text,
                                example=chain.example(kind.id),
                            )
                        )
        return bank

    @staticmethod
    def fields(spec: QuestionSpec) -> dict[str, str]:
        """Placeholder values of the question templates."""
        example = (
            f"\nHere is an example of such a question, for the style only: {spec.example}"
            if spec.example
            else ""
        )
        return {
            "concept": spec.concept,
            "kind": spec.kind,
            "kind_description": spec.kind_description,
            "cue": spec.cue_text,
            "topic": spec.topic,
            "topic_name": spec.topic_name,
            "subject": spec.subject or spec.topic_name,
            "example_line": example,
        }

    def request(self, spec: QuestionSpec, sample: int = 0) -> LLMRequest:
        """The request that writes question ``spec``."""
        values = self.fields(spec)
        return self.calls.request(
            self.system.format_map(values), self.user.format_map(values), sample
        )


@dataclass(frozen=True)
class AnswerSettings:
    """The answers stage: the personas and the answer templates.

    Attributes:
        calls: The answer role's calls.
        personas: The K personas (each answers every question).
        system: The ``answer_system`` template.
        user: The ``answer_user`` template.
    """

    calls: RoleCalls
    personas: tuple[Persona, ...]
    system: str
    user: str

    answer_format = AnswerFormat.text("answer", field="answer")

    def request(self, question: str, persona: Persona, sample: int = 0) -> LLMRequest:
        """The request of ``persona``'s answer to ``question``."""
        values = {
            "persona_prompt": persona.prompt,
            "persona_id": persona.id,
            "persona_name": persona.name,
            "question": question,
        }
        return self.calls.request(
            self.system.format_map(values), self.user.format_map(values), sample
        )


def _fmt(number: float) -> str:
    return f"{int(number)}" if float(number).is_integer() else f"{number:g}"


@dataclass(frozen=True)
class RaterSettings:
    """The rater stage: the personas it scores, the score scale and the rater templates.

    Attributes:
        calls: The rater role's calls.
        personas: The K personas (one call rates them all).
        scale: Lowest and highest score.
        system: The ``rater_system`` template.
        user: The ``rater_user`` template.
    """

    calls: RoleCalls
    personas: tuple[Persona, ...]
    scale: tuple[float, float]
    system: str
    user: str

    @property
    def ids(self) -> list[str]:
        """The persona ids a reply must score."""
        return [p.id for p in self.personas]

    @property
    def answer_format(self) -> AnswerFormat:
        """An object of every persona id's score on the scale."""
        lo, hi = self.scale
        return AnswerFormat.scores("scores", self.ids, minimum=lo, maximum=hi)

    def example(self) -> str:
        """The JSON example shown to the rater: ``{"id": score, ...}``."""
        lo, hi = self.scale
        mid = round((lo + hi) / 2)
        return json.dumps({p.id: mid for p in self.personas})

    @functools.cached_property
    def _fields(self) -> dict[str, str]:
        lo, hi = self.scale
        return {
            "personas": "\n".join(f"- {p.id}: {' '.join(p.prompt.split())}" for p in self.personas),
            "example": self.example(),
            "scale_min": _fmt(lo),
            "scale_max": _fmt(hi),
            "n_personas": str(len(self.personas)),
        }

    @functools.cached_property
    def _system(self) -> str:
        return self.system.format_map(self._fields)

    def request(self, question: str, sample: int = 0) -> LLMRequest:
        """The request that rates all personas for ``question``."""
        user = self.user.format_map({**self._fields, "question": question})
        return self.calls.request(self._system, user, sample)


@dataclass(frozen=True)
class JudgeSettings:
    """The judge stage: the students it plays, how a pick probability is measured, and the
    judge templates.

    Attributes:
        calls: The judge role's calls.
        students: The students (the judge plays each).
        persona_ids: The K personas' ids (pairs ``a < b`` of their indexes are judged).
        samples: Picks per (pair, display order, label assignment).
        mode: ``samples`` or ``logprobs`` (one call per configuration).
        top_logprobs: Alternatives asked for per token in ``logprobs`` mode.
        system: The ``judge_system`` template.
        user: The ``judge_user`` template.
    """

    calls: RoleCalls
    students: tuple[Student, ...]
    persona_ids: tuple[str, ...]
    samples: int
    mode: str
    top_logprobs: int
    system: str
    user: str

    answer_format = AnswerFormat.choice("pick", LABELS)

    def request(
        self,
        student: Student,
        question: str,
        first: str,
        second: str,
        first_label: str,
        sample: int,
        *,
        logprobs: bool = False,
    ) -> LLMRequest:
        """The request of one judge pick.

        Args:
            student: The student the judge plays.
            question: The question text.
            first: The answer displayed first.
            second: The answer displayed second.
            first_label: The label of the first answer (``"A"`` or ``"B"``).
            sample: Sample index.
            logprobs: Ask for ``logprobs`` with `top_logprobs` alternatives.
        """
        second_label = LABELS[1] if first_label == LABELS[0] else LABELS[0]
        system = self.system.format_map(
            {"student": student.description, "student_name": student.name}
        )
        user = self.user.format_map(
            {
                "question": question,
                "label_1": first_label,
                "answer_1": first,
                "label_2": second_label,
                "answer_2": second,
            }
        )
        extra = logprob_params(self.top_logprobs) if logprobs else None
        return self.calls.request(system, user, sample, extra)


def judge_order(a: int, b: int, condition: int) -> tuple[int, int, str]:
    """How judge condition ``condition`` (an index of TutorSim's ``JUDGE_CONFIGS``: display
    order x label assignment) shows the pair of personas ``a < b``.

    Returns:
        ``(first, second, first_label)``: the persona shown first, the one shown second, and
        the label of the first (``"A"`` or ``"B"``).
    """
    a_first, a_label_a = JUDGE_CONFIGS[condition]
    first, second = (a, b) if a_first else (b, a)
    return first, second, LABELS[0] if a_first == a_label_a else LABELS[1]


__all__ = [
    "AnswerSettings",
    "JudgeSettings",
    "QuestionSettings",
    "QuestionSpec",
    "RaterSettings",
    "RoleCalls",
    "judge_order",
]
