"""The scripted backend's roles for datagen: an offline, deterministic stand-in for every model.

`ScriptedWorld` holds a hidden truth built from the config with TutorSim's generative
model (docs/design.md, section 9) and answers datagen's own prompts, which it parses back with
`TemplateParser`:

* **question**: the topic file's example question of that kind (TutorSim's text) or a generic
  one (``What is <concept>?``, ...), followed by the cue sentence;
* **answer**: ``[persona_id] `` and a few sentences in the persona's style;
* **rater**: a JSON object of 1-10 scores, ``n_q . s_p`` seen through a miscalibrated rater
  (per-persona style errors and bias, noise), where the need of a question is
  ``n_q = need[kind] + need[cue] + topic noise + question noise - ncenter * mean need``;
* **rater** of a style dimension (the ask bank's loadings): the same, with a need of
  `STATEMENT_NEED` on that dimension alone;
* **student** (a preference question): the published answer model
  (`prefduel.core.answer_model`, at the default answer noise) on the student's latent
  utilities averaged over the bank's questions (``level``, ``pair``) or over the questions of
  one kind (``least``), drawn per request;
* **judge**: the student's latent utility
  ``v(p, q) = taste_scale w . s_p + cue_strength c (n_q . s_p) + quirks(p, q) + o_p + eps(q, p)``
  drives a logistic pick of the first-displayed answer,
  ``sigmoid(judge_beta (v_first - v_second) + judge_position + judge_label * (+1 if the first
  answer is labelled A else -1) + noise)``, the noise fixed per (student, question, pair,
  display order, label assignment), the pick drawn per sample index.

Randomness: the truth comes from ``stream(seed, "datagen-scripted", ...)`` keyed by ids, the
picks from `request_rng` (role, messages, sample index). So
answers are pure functions of the request and the config, identical in every process.
``judge_malformed`` / ``rater_malformed`` make a share of the answers unusable, to exercise the
malformed-answer accounting.

Use::

    world = ScriptedWorld(config)
    client = make_client(llm_config, handlers=world.handlers())     # backend: scripted
    server = OpenAITestServer(answer=world.http_answer,              # or over HTTP, with the
                              distribution=world.http_distribution)  # judge's logprobs
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from prefduel.core.answer_model import (
    DEFAULT_ANSWER_NOISE,
    least_probabilities,
    level_direction,
    level_probabilities,
    pair_probabilities,
)
from prefduel.core.rng import stream
from prefduel.datagen.asks import ASK_SYSTEM, PAIR_CHOICES, AskSettings
from prefduel.datagen.calls import QuestionSpec
from prefduel.datagen.config import DatagenConfig
from prefduel.datagen.prompts import LABELS, TemplateParser, parse_question
from prefduel.datagen.settings import split_config
from prefduel.llm.request import LLMRequest, Message
from prefduel.llm.scripted import Handler, request_rng

_MARKER = re.compile(r"^\s*\[([^\]\s]+)\]")
_EXAMPLE_PREFIX = "\nHere is an example of such a question, for the style only: "
_GENERIC = {
    "definition": "What is {concept}?",
    "computation": "Could you work through a small numerical problem about {concept}?",
    "why": "Why does {concept} work the way it does?",
}
_BAD_PICKS = ("I can't decide, both are helpful.", "Both answers work for me.", "")
_BAD_SCORES = ("They all seem reasonable to me.", '```json\n{ "scores": ', "no scores")
#: The need on its own dimension of a style statement the rater scores (a loading): the rater's
#: scores then span most of its scale.
STATEMENT_NEED = 2.0


def _snippet(text: str, limit: int = 70) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3].rstrip() + "..."


def _logistic(x: float) -> float:
    """``1 / (1 + exp(-x))`` without overflow for any finite ``x`` (large knobs saturate it)."""
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


class ScriptedWorld:
    """The hidden truth of the offline backend and its four role handlers.

    Args:
        config: The datagen config (its style/need/taste values, quirks, ``scripted`` knobs
            and seed define the truth).
    """

    def __init__(self, config: DatagenConfig) -> None:
        self.config = config
        prm = config.scripted.params
        self.prm = prm
        self.dims = tuple(d.id for d in config.style)
        m, k = len(self.dims), config.K
        self.style = np.array([p.style for p in config.personas], dtype=float).reshape(k, m)
        self.kind_need = {kd.id: np.array(kd.need, dtype=float) for kd in config.kinds}
        self.cue_need = {c.id: np.array(c.need, dtype=float) for c in config.cues}
        self.mean_need = np.mean(list(self.kind_need.values()), axis=0) + np.mean(
            list(self.cue_need.values()), axis=0
        )
        seed = config.seed
        self.seen_style = self.style + self._rng("rater-style").normal(
            scale=prm.rater_dim_error, size=(k, m)
        )
        self.rater_bias = self._rng("rater-bias").normal(scale=prm.rater_bias, size=k)
        self.offsets = np.stack(
            [
                stream(seed, "datagen-scripted", "offset", s.id).normal(
                    scale=prm.persona_offset, size=k
                )
                for s in config.students
            ]
        ).reshape(len(config.students), k)
        self.taste = np.array([s.taste for s in config.students], dtype=float).reshape(-1, m)
        self.persona_ids = tuple(p.id for p in config.personas)
        self._persona_index = {p.id: i for i, p in enumerate(config.personas)}
        self._persona_by_prompt = {p.prompt: i for i, p in enumerate(config.personas)}
        self._student_by_description = {s.description: i for i, s in enumerate(config.students)}
        self._quirks = {q.id: q for q in config.quirks}
        t = config.templates
        self._parse = {
            name: TemplateParser(getattr(t, name))
            for name in (
                "question_user",
                "answer_system",
                "answer_user",
                "rater_user",
                "judge_system",
                "judge_user",
            )
        }
        self._needs: dict[int, np.ndarray] = {}
        self._utilities: dict[tuple[int, str], np.ndarray] = {}
        self._noise: dict[tuple[int, str], np.ndarray] = {}
        stages = split_config(dataclasses.replace(config, asks=True), scripted=True)
        questions = stages.questions
        self.bank = questions.bank()
        self._questions: dict[str, QuestionSpec] = {}
        for spec in self.bank:
            text = parse_question(self.question(questions.request(spec)), spec.cue_text)
            if text is not None:
                self._questions.setdefault(text, spec)
        asks = stages.asks
        assert asks is not None
        self._asks: AskSettings = asks
        self._ask_system = TemplateParser(ASK_SYSTEM)
        self._ask_questions = {asks.user(q): q for q in asks.bank()}
        self._statements = {asks.statement(d): d for d in range(len(asks.style))}

    def _rng(self, *keys: str | int) -> np.random.Generator:
        return stream(self.config.seed, "datagen-scripted", *keys)

    # -- the truth ------------------------------------------------------------------------

    def need(self, spec: QuestionSpec | None) -> np.ndarray:
        """Need vector ``(m,)`` of a question (an average question for unknown texts)."""
        if spec is None:
            return -self.prm.ncenter * self.mean_need
        cached = self._needs.get(spec.index)
        if cached is None:
            m = len(self.dims)
            topic = self._rng("topic", spec.topic).normal(scale=self.prm.topic_noise, size=m)
            base = self._rng("question", spec.topic, spec.chain, spec.kind).normal(
                scale=self.prm.question_noise, size=m
            )
            cached = (
                self.kind_need[spec.kind]
                + self.cue_need[spec.cue]
                + topic
                + base
                - self.prm.ncenter * self.mean_need
            )
            self._needs[spec.index] = cached
        return cached

    def spec_of(self, question: str) -> QuestionSpec | None:
        """The bank entry whose scripted text is ``question`` (None if unknown)."""
        return self._questions.get(question)

    def utilities(self, student: int, question: str) -> np.ndarray:
        """Latent utilities ``(K,)`` of the personas for a student and a question text."""
        key = (student, question)
        cached = self._utilities.get(key)
        if cached is not None:
            return cached
        prm = self.prm
        spec = self.spec_of(question)
        st = self.config.students[student]
        fit = self.style @ self.need(spec)
        v = prm.taste_scale * (self.style @ self.taste[student]) + prm.cue_strength * (
            st.cue_following * fit
        )
        for qid in st.quirks:
            quirk = self._quirks[qid]
            if quirk.when_kind is None or (spec is not None and spec.kind == quirk.when_kind):
                col = self.style[:, self.dims.index(quirk.dim)]
                v = v + prm.quirk_strength * quirk.sign * (col - col.mean())
        qkey = spec.id if spec is not None else question
        eps = stream(self.config.seed, "datagen-scripted", "utility", st.id, qkey).normal(
            scale=prm.utility_noise, size=self.config.K
        )
        v = v + self.offsets[student] + eps
        self._utilities[key] = v
        return v

    def latent_utilities(self, questions: list[str]) -> np.ndarray:
        """Latent utilities ``(I, Q, K)`` of every student for the given question texts."""
        return np.array(
            [[self.utilities(i, q) for q in questions] for i in range(len(self.config.students))]
        )

    # -- parsing requests -------------------------------------------------------------------

    @staticmethod
    def _message(request: LLMRequest, role: str) -> str:
        for message in reversed(request.messages):
            if message.role == role:
                return message.content
        return ""

    def _fields(self, name: str, text: str, request: LLMRequest) -> dict[str, str]:
        values = self._parse[name].parse(text)
        if values is None:
            raise ValueError(
                f"the {request.role} prompt does not match the config's {name} template"
            )
        return values

    def _persona_of_answer(self, answer: str) -> int:
        match = _MARKER.match(answer)
        if match is None or match.group(1) not in self._persona_index:
            raise ValueError(f"cannot tell which persona wrote {_snippet(answer, 40)!r}")
        return self._persona_index[match.group(1)]

    # -- handlers -------------------------------------------------------------------------

    def question(self, request: LLMRequest) -> str:
        """Question handler: the example question (or a generic one) and the cue."""
        f = self._fields("question_user", self._message(request, "user"), request)
        example_line = f.get("example_line") or ""
        if example_line.startswith(_EXAMPLE_PREFIX):
            base = example_line[len(_EXAMPLE_PREFIX) :].strip()
        else:
            template = _GENERIC.get(f["kind"], "I have a question about {concept}.")
            base = template.format(concept=f["concept"])
        return f"{base} {f['cue']}".strip()

    def answer(self, request: LLMRequest) -> str:
        """Answer handler: ``[persona_id]`` and sentences that follow the persona's style."""
        sys_fields = self._fields("answer_system", self._message(request, "system"), request)
        user_fields = self._fields("answer_user", self._message(request, "user"), request)
        index = self._persona_by_prompt.get(sys_fields["persona_prompt"])
        if index is None:
            raise ValueError("the answer prompt's persona is not in the config")
        persona = self.config.personas[index]
        style = dict(zip(self.dims, persona.style, strict=True))
        topic = _snippet(user_fields["question"], 60)
        parts = []
        if style.get("warmth", 0.0) > 0.5:
            parts.append("Great question, and it is completely normal to find this tricky!")
        if style.get("socratic", 0.0) > 0.5:
            parts.append(f"Before I answer, what do you already know about this: {topic}")
        elif style.get("worked_steps", 0.0) > 0.5 or style.get("structure", 0.0) > 0.5:
            parts.append(
                "1. Identify what is asked. 2. Write down what is given. 3. Work it out step "
                "by step. 4. Check the result."
            )
        if style.get("examples", 0.0) > 0.5:
            parts.append("Picture it as an everyday scene: the idea behaves just like that.")
        if style.get("rigor", 0.0) > 0.5:
            parts.append("Formally, we state the definition, its assumptions and a derivation.")
        if style.get("brevity", 0.0) > 0.5:
            parts = parts[:1]
        if style.get("quotable", 0.0) > 0.5:
            parts.append("In one line: the key idea, stated so you can quote it.")
        if not parts:
            parts.append(f"Here is an explanation of {topic}")
        return f"[{persona.id}] " + " ".join(parts)

    def rater(self, request: LLMRequest) -> str:
        """Rater handler: a JSON object of integer scores on the config's scale."""
        f = self._fields("rater_user", self._message(request, "user"), request)
        rng = request_rng(request)
        if rng.random() < self.config.scripted.rater_malformed:
            return _BAD_SCORES[int(rng.integers(len(_BAD_SCORES)))]
        dim = self._statements.get(f["question"])
        if dim is None:
            need = self.need(self.spec_of(f["question"]))
        else:
            need = np.zeros(len(self.dims))
            need[dim] = STATEMENT_NEED
        raw = need @ self.seen_style.T + self.rater_bias
        raw = raw + rng.normal(scale=self.prm.rater_noise, size=raw.shape)
        lo, hi = self.config.rater_scale
        gain = self.config.scripted.rater_gain * (hi - lo) / 9.0
        scores = np.clip(np.round((lo + hi) / 2 + gain * raw), lo, hi)
        return json.dumps({pid: int(s) for pid, s in zip(self.persona_ids, scores, strict=True)})

    def student(self, request: LLMRequest) -> str:
        """Student handler: the answer to a preference question (a label its prompt offers)."""
        sys_fields = self._ask_system.parse(self._message(request, "system"))
        question = self._ask_questions.get(self._message(request, "user"))
        student = (
            None if sys_fields is None else self._student_by_description.get(sys_fields["student"])
        )
        if student is None or question is None:
            raise ValueError("the student prompt is not one of the config's preference questions")
        probs = self.answer_probabilities(student, question)
        value = int(np.searchsorted(np.cumsum(probs), request_rng(request).random(), "right"))
        value = min(value, len(probs) - 1)
        if question.kind == "pair":
            return PAIR_CHOICES[1 - value]  # answer 1: the first tutor, shown as A
        return str(value) if question.kind == "level" else str(value + 1)

    def answer_probabilities(self, student: int, question: Any) -> np.ndarray:
        """The published answer model's probability of each answer of ``student`` to the
        preference ``question``, at the default answer noise."""
        texts = list(self._questions)
        v = np.array([self.utilities(student, t) for t in texts])  # (Q, K)
        scale = self.prm.judge_beta / DEFAULT_ANSWER_NOISE
        v_bar = v.mean(axis=0)
        if question.kind == "level":
            column = self.style[:, self.dims.index(question.id.split(":", 1)[1])]
            return level_probabilities(scale * float(v_bar @ level_direction(column)))
        if question.kind == "pair":
            a, b = question.pair
            return pair_probabilities(scale * (v_bar[a] - v_bar[b]))
        kinds = np.array([self._questions[t].kind == question.about for t in texts])
        v_kind = v[kinds].mean(axis=0) if kinds.any() else v_bar
        return least_probabilities(scale * v_kind)

    def judge(self, request: LLMRequest) -> str:
        """Judge handler: ``A`` or ``B`` from the student's latent utilities."""
        label_1, label_2, p_first = self.judge_probability(request)
        rng = request_rng(request)
        if rng.random() < self.config.scripted.judge_malformed:
            return _BAD_PICKS[int(rng.integers(len(_BAD_PICKS)))]
        return label_1 if rng.random() < p_first else label_2

    def judge_probability(self, request: LLMRequest) -> tuple[str, str, float]:
        """The labels of a judge prompt (first shown, second shown) and the chance that the
        judge picks the first (malformed answers aside)."""
        sys_fields = self._fields("judge_system", self._message(request, "system"), request)
        f = self._fields("judge_user", self._message(request, "user"), request)
        student = self._student_by_description.get(sys_fields["student"])
        if student is None:
            raise ValueError("the judge prompt's student is not in the config")
        first = self._persona_of_answer(f["answer_1"])
        second = self._persona_of_answer(f["answer_2"])
        v = self.utilities(student, f["question"])
        first_a = f["label_1"] == LABELS[0]
        noise = self._judge_noise(student, f["question"])[first, second, 0 if first_a else 1]
        logit = (
            self.prm.judge_beta * (v[first] - v[second])
            + self.prm.judge_position
            + self.prm.judge_label * (1.0 if first_a else -1.0)
            + noise
        )
        return f["label_1"], f["label_2"], _logistic(logit)

    def _judge_noise(self, student: int, question: str) -> np.ndarray:
        """Judge noise ``(K, K, 2)`` of a (student, question): one value per (first shown,
        second shown, label of the first), fixed across samples."""
        key = (student, question)
        cached = self._noise.get(key)
        if cached is None:
            spec = self.spec_of(question)
            k = self.config.K
            cached = stream(
                self.config.seed,
                "datagen-scripted",
                "judge",
                self.config.students[student].id,
                spec.id if spec is not None else question,
            ).normal(scale=self.prm.judge_noise, size=(k, k, 2))
            self._noise[key] = cached
        return cached

    def handlers(self) -> dict[str, Handler]:
        """``{role: handler}`` for `ScriptedBackend`."""
        return {
            "question": self.question,
            "answer": self.answer,
            "rater": self.rater,
            "judge": self.judge,
            "student": self.student,
        }

    # -- over HTTP ----------------------------------------------------------------------------

    def role_of(self, messages: tuple[Message, ...]) -> str:
        """Which datagen role a conversation is (by the templates it matches)."""
        request = LLMRequest("detect", messages)
        user = self._message(request, "user")
        if self._ask_system.parse(self._message(request, "system")) is not None:
            return "student"
        if self._parse["judge_user"].parse(user) is not None:
            return "judge"
        if self._parse["rater_user"].parse(user) is not None:
            return "rater"
        if self._parse["question_user"].parse(user) is not None:
            return "question"
        return "answer"

    def http_answer(self, body: Mapping[str, Any]) -> str:
        """Answer a chat-completion JSON body (an ``answer`` function for
        `OpenAITestServer`). The sample index is not sent
        over HTTP, so repeated samples of one prompt get the same answer."""
        messages = _messages(body)
        if not messages:
            return "no messages"
        role = self.role_of(messages)
        request = LLMRequest(str(body.get("model") or "test-model"), messages, role=role)
        return self.handlers()[role](request)


    def http_distribution(self, body: Mapping[str, Any]) -> dict[str, float] | None:
        """The judge's pick distribution for a chat-completion body (a ``distribution``
        function for `OpenAITestServer`: the server then draws each
        pick from it and returns it as ``logprobs``); None for the other roles."""
        messages = _messages(body)
        if not messages or self.role_of(messages) != "judge":
            return None
        request = LLMRequest(str(body.get("model") or "test-model"), messages, role="judge")
        label_1, label_2, p_first = self.judge_probability(request)
        return {label_1: p_first, label_2: 1.0 - p_first}


def _messages(body: Mapping[str, Any]) -> tuple[Message, ...]:
    return tuple(
        Message(str(m.get("role")), str(m.get("content")))
        for m in body.get("messages") or []
        if isinstance(m, Mapping)
    )


def scripted_handlers(config: DatagenConfig) -> dict[str, Handler]:
    """The scripted handlers of ``config`` (see `ScriptedWorld`)."""
    return ScriptedWorld(config).handlers()


__all__ = ["ScriptedWorld", "scripted_handlers"]
