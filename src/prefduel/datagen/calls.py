"""The question bank and the requests of every stage.

The bank is ``topics x chains x kinds x cues_per_question`` questions, in that nesting order.
The cues of each (topic, chain, kind) are drawn without replacement from
``stream(seed, "datagen", "cues", topic, chain, kind)``, so adding a topic leaves the other
questions' cues unchanged.

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

A role with ``structured`` set gets its answer's `AnswerFormat` (`answer_formats`) added by the
stage engine as ``response_format``.

With the scripted backend every model name is replaced by `scripted_model_name`, a
fingerprint of the scripted truth: the cache then never serves answers of another truth (e.g.
after a student's taste was edited).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from prefduel.core.rng import stream
from prefduel.datagen.config import DatagenConfig, Persona, Student
from prefduel.datagen.prompts import LABELS
from prefduel.llm.logprobs import logprob_params
from prefduel.llm.request import LLMRequest
from prefduel.llm.structured import AnswerFormat
from prefduel.worlds.tutorsim import JUDGE_CONFIGS


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


def question_bank(config: DatagenConfig) -> list[QuestionSpec]:
    """Every question spec of ``config``, in bank order.

    Returns:
        ``config.n_questions`` specs.
    """
    bank = []
    for topic in config.topics:
        for c_idx, chain in enumerate(topic.chains):
            for kind in config.kinds:
                rng = stream(config.seed, "datagen", "cues", topic.id, c_idx, kind.id)
                picks = rng.choice(len(config.cues), size=config.cues_per_question, replace=False)
                for cue_index in picks:
                    cue = config.cues[int(cue_index)]
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


def scripted_model_name(config: DatagenConfig) -> str:
    """``scripted/<12 hex>``: the model name of scripted requests, a fingerprint of everything
    the scripted answers depend on besides the prompt (seed, style/need/taste values, quirks,
    scripted knobs)."""
    truth = {
        "seed": config.seed,
        "style": [d.id for d in config.style],
        "personas": [dataclasses.asdict(p) for p in config.personas],
        "kinds": [dataclasses.asdict(k) for k in config.kinds],
        "cues": [dataclasses.asdict(c) for c in config.cues],
        "topics": [t.id for t in config.topics],
        "quirks": [dataclasses.asdict(q) for q in config.quirks],
        "students": [dataclasses.asdict(s) for s in config.students],
        "scripted": {
            **dataclasses.asdict(config.scripted.params),
            "rater_gain": config.scripted.rater_gain,
            "judge_malformed": config.scripted.judge_malformed,
            "rater_malformed": config.scripted.rater_malformed,
        },
        "rater_scale": list(config.rater_scale),
    }
    text = json.dumps(truth, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "scripted/" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def rater_example(config: DatagenConfig) -> str:
    """The JSON example shown to the rater: ``{"id": score, ...}``."""
    lo, hi = config.rater_scale
    mid = round((lo + hi) / 2)
    return json.dumps({p.id: mid for p in config.personas})


def _fmt(number: float) -> str:
    return f"{int(number)}" if float(number).is_integer() else f"{number:g}"


class RequestBuilder:
    """Builds the requests of every stage from a config.

    Args:
        config: The config.
        scripted: Use `scripted_model_name` as the model of every role.
    """

    def __init__(self, config: DatagenConfig, *, scripted: bool = False) -> None:
        self.config = config
        self.scripted = scripted
        model = scripted_model_name(config) if scripted else None
        self.models = {role: model or m.model for role, m in config.models.items()}
        self.params = {role: m.request_params() for role, m in config.models.items()}
        self.seeds = {role: m.seed for role, m in config.models.items()}
        t = config.templates
        lo, hi = config.rater_scale
        self._rater_fields = {
            "personas": "\n".join(
                f"- {p.id}: {' '.join(p.prompt.split())}" for p in config.personas
            ),
            "example": rater_example(config),
            "scale_min": _fmt(lo),
            "scale_max": _fmt(hi),
            "n_personas": str(config.K),
        }
        self._rater_system = t.rater_system.format_map(self._rater_fields)

    def _request(
        self, role: str, system: str, user: str, sample: int, extra: dict[str, Any] | None = None
    ) -> LLMRequest:
        seed = self.seeds[role]
        return LLMRequest.chat(
            self.models[role],
            user,
            system=system or None,
            role=role,
            sample=sample,
            seed=None if seed is None else seed + sample,
            **{**self.params[role], **(extra or {})},
        )

    def question_fields(self, spec: QuestionSpec) -> dict[str, str]:
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

    def question(self, spec: QuestionSpec, sample: int = 0) -> LLMRequest:
        """The request that writes question ``spec``."""
        t = self.config.templates
        values = self.question_fields(spec)
        return self._request(
            "question",
            t.question_system.format_map(values),
            t.question_user.format_map(values),
            sample,
        )

    def answer(self, question: str, persona: Persona, sample: int = 0) -> LLMRequest:
        """The request of ``persona``'s answer to ``question``."""
        t = self.config.templates
        values = {
            "persona_prompt": persona.prompt,
            "persona_id": persona.id,
            "persona_name": persona.name,
            "question": question,
        }
        return self._request(
            "answer", t.answer_system.format_map(values), t.answer_user.format_map(values), sample
        )

    def rater(self, question: str, sample: int = 0) -> LLMRequest:
        """The request that rates all personas for ``question``."""
        user = self.config.templates.rater_user.format_map(
            {**self._rater_fields, "question": question}
        )
        return self._request("rater", self._rater_system, user, sample)

    def judge(
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
            logprobs: Ask for ``logprobs`` with ``top_logprobs`` alternatives (the config's
                ``judge.top_logprobs``).
        """
        t = self.config.templates
        second_label = LABELS[1] if first_label == LABELS[0] else LABELS[0]
        system = t.judge_system.format_map(
            {"student": student.description, "student_name": student.name}
        )
        user = t.judge_user.format_map(
            {
                "question": question,
                "label_1": first_label,
                "answer_1": first,
                "label_2": second_label,
                "answer_2": second,
            }
        )
        extra = logprob_params(self.config.top_logprobs) if logprobs else None
        return self._request("judge", system, user, sample, extra)


def answer_formats(config: DatagenConfig) -> dict[str, AnswerFormat]:
    """The shape of each role's answer, for structured output: the question and the answer are
    prose (``{"question": ...}``, ``{"answer": ...}`` in mode ``json_schema``), the rater's scores
    an object of every persona id, the judge's pick one of the labels."""
    lo, hi = config.rater_scale
    return {
        "question": AnswerFormat.text("question", field="question"),
        "answer": AnswerFormat.text("answer", field="answer"),
        "rater": AnswerFormat.scores(
            "scores", [p.id for p in config.personas], minimum=lo, maximum=hi
        ),
        "judge": AnswerFormat.choice("pick", LABELS),
    }


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
    "QuestionSpec",
    "RequestBuilder",
    "answer_formats",
    "judge_order",
    "question_bank",
    "rater_example",
    "scripted_model_name",
]
