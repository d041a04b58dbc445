"""Scripted roles: every PrefDisco role played offline and deterministically.

`scripted_handlers` returns handlers for `
ScriptedBackend` (``handlers={role: fn(request) -> str}``) that read PrefDisco's own prompts:

* ``ask``: a scripted model under test that asks about ``k`` attributes (``k`` from the model
  name, ``scripted-ask3`` asks 3; or from ``asks``), drawn with weights relevance^4 to the
  task's domain (it cannot see the hidden profile), using each attribute's natural question;
  then ``READY``.
* ``answer``: reads the information block (the oracle's profile lines, or the user's replies)
  and writes a response whose realized style is stated on a ``Style:`` line
  (``attribute=value`` pairs; unlisted attributes keep the taxonomy default). Known
  preferences are followed with probability ``follow``; when it personalizes, it also changes
  other attributes with probability ``overcorrect`` (over-correction, the paper's main cause of
  negative NormAlign). It answers correctly with probability ``accuracy - cost * known`` (the
  cost of personalization), and sometimes (``slip``) omits the ``Final answer:`` line, which
  sends the item to the grader.
* ``judge``: scores the realized value against the target: 5 - 4 x (ordinal distance), or 5 /
  2 for categorical, with occasional ±1 noise (``judge_noise``) and an unparsable first reply
  (``judge_garbage``) to exercise the retries.
* ``grader``: CORRECT if the reference answer appears in the response.
* ``router``: the keyword router's ids as a JSON list (an occasional unparsable first reply).
* ``phrase``: the interviewer's question in the taxonomy's words (the template question of the
  aspect named in the prompt).
* ``persona``, ``rubric``: a backstory from the profile; the draft rubric, lightly rewritten.

Randomness comes from ``(role, model, messages)`` only (not the sample index or parameters), so
the same conversation gets the same answer through the scripted backend and through
`server_answer` on the OpenAI-compatible test server: a run through HTTP reproduces the
offline run exactly.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from prefduel.core.rng import stream
from prefduel.llm.request import LLMRequest
from prefduel.llm.scripted import Handler
from prefduel.prefdisco.dataset.tasks import Task
from prefduel.prefdisco.dataset.taxonomy import Attribute, Taxonomy
from prefduel.prefdisco.episode import prompts
from prefduel.prefdisco.episode.matching import normalize_text
from prefduel.prefdisco.episode.user import KeywordRouter
from prefduel.prefdisco.interviewer.replies import scripted_phrase_handler

_STYLE = re.compile(r"([a-z]+\.[a-z0-9_]+)=([a-z0-9_]+)")
_INFO_LINE = re.compile(r"(?:^- |About )([^:\n]+): (?:I prefer )?(.+?) — ", re.MULTILINE)
# the replies of a terse user ("A1: Length of the response: short.") and of a vague one
_TERSE = re.compile(r"^A\d+: ([^:\n]+): ([^.\n]+)\.$", re.MULTILINE)
_VAGUE_SIDE = re.compile(r"About ([^:\n]+): more towards (.+?), I guess")
_VAGUE_MIDDLE = re.compile(r"About ([^:\n]+): somewhere in the middle")
_VAGUE_PAIR = re.compile(r"About ([^:\n]+): maybe (.+?)(?: or .+?)?, I'm not sure")


def _rng(request: LLMRequest, *labels: str) -> np.random.Generator:
    payload = json.dumps(
        [request.role, request.model, [[m.role, m.content] for m in request.messages]],
        separators=(",", ":"),
        ensure_ascii=False,
    )
    digest = hashlib.sha256(payload.encode("utf-8")).hexdigest()
    words = [int(digest[i : i + 8], 16) for i in range(0, 64, 8)]
    return stream(words[0], *words[1:], *labels)


def _between(text: str, start: str, end: str) -> str:
    i = text.find(start)
    if i < 0:
        return ""
    i += len(start)
    j = text.find(end, i)
    return text[i:] if j < 0 else text[i:j]


def _users(request: LLMRequest) -> list[str]:
    return [m.content for m in request.messages if m.role == "user"]


class ScriptedWorld:
    """The state shared by the scripted roles (see the module docstring for the knobs).

    Args:
        taxonomy: The taxonomy the prompts refer to.
        tasks: Tasks the scripted model can recognize (to know the domain and the answer);
            unknown tasks get domain-free questions and an "unknown" final answer.
        asks: Model name -> number of attributes it asks about (default: ``askN`` in the
            name, else 2).
        follow: Probability that a known preference is realized exactly.
        overcorrect: Probability that a personalizing response changes an unknown attribute.
        accuracy: Probability of a correct answer without personalization.
        cost: Accuracy lost per known preference.
        slip: Probability that the final-answer line is missing.
        judge_noise: Probability of a ±1 judging error.
        judge_garbage: Probability that the judge's first reply has no score.
    """

    def __init__(
        self,
        taxonomy: Taxonomy,
        tasks: Sequence[Task] = (),
        *,
        asks: Mapping[str, int] | None = None,
        follow: float = 0.9,
        overcorrect: float = 0.06,
        accuracy: float = 0.85,
        cost: float = 0.03,
        slip: float = 0.05,
        judge_noise: float = 0.15,
        judge_garbage: float = 0.04,
    ) -> None:
        self.taxonomy = taxonomy
        self.tasks = {prompts.task_block(t.question, t.options): t for t in tasks}
        self.asks = dict(asks or {})
        self.follow = follow
        self.overcorrect = overcorrect
        self.accuracy = accuracy
        self.cost = cost
        self.slip = slip
        self.judge_noise = judge_noise
        self.judge_garbage = judge_garbage
        self.router = KeywordRouter(taxonomy)

    # -- model under test ------------------------------------------------------------------

    def k_for(self, model: str) -> int:
        """How many attributes ``model`` asks about."""
        if model in self.asks:
            return self.asks[model]
        match = re.search(r"ask(\d+)", model)
        return int(match.group(1)) if match else 2

    def ask(self, request: LLMRequest) -> str:
        """``QUESTION: ...`` for the next planned attribute, or ``READY``."""
        users = _users(request)
        block = _between(users[0], "The user's question:\n\n", "\n\nBefore you answer")
        task = self.tasks.get(block)
        domain = task.domain if task is not None else "*"
        # replies shown back for a retry are not questions asked
        asked = sum(
            m.role == "assistant" and m.content.startswith("QUESTION") for m in request.messages
        )
        plan_rng = stream(
            int(hashlib.sha256(f"{request.model}\n{users[0]}".encode()).hexdigest()[:8], 16),
            "plan",
        )
        weights = np.array([a.relevance_for(domain) for a in self.taxonomy], dtype=float) ** 4
        k = min(self.k_for(request.model), int((weights > 0).sum()))
        plan = plan_rng.choice(len(weights), size=k, replace=False, p=weights / weights.sum())
        if asked < k:
            return f"QUESTION: {self.taxonomy.attributes[int(plan[asked])].question}"
        return "READY"

    def known(self, info: str) -> dict[str, str]:
        """Attribute id -> value stated in an information block (oracle lines or replies;
        a vague reply is read as the value it hints at: the end of the scale it leans to, the
        middle, or the first of two candidates)."""
        out = {}
        pairs = [*_INFO_LINE.findall(info), *_TERSE.findall(info)]
        pairs += _VAGUE_SIDE.findall(info) + _VAGUE_PAIR.findall(info)
        for name, label in pairs:
            attribute = self.taxonomy.by_name(name)
            if attribute is None:
                continue
            for v in attribute.values:
                if v.label.lower() == label.strip().lower():
                    out[attribute.id] = v.value
        for name in _VAGUE_MIDDLE.findall(info):
            attribute = self.taxonomy.by_name(name)
            if attribute is not None:
                out[attribute.id] = attribute.values[(len(attribute.values) - 1) // 2].value
        return out

    def _deviate(self, attribute: Attribute, value: str, rng: np.random.Generator) -> str:
        if attribute.ordinal:
            i = attribute.index(value)
            steps = [j for j in (i - 1, i + 1) if 0 <= j < len(attribute.values)]
            return attribute.values[int(rng.choice(steps))].value
        others = [v.value for v in attribute.values if v.value != value]
        return others[int(rng.integers(len(others)))]

    def answer(self, request: LLMRequest) -> str:
        """A response with a ``Style:`` line and (usually) a ``Final answer:`` line."""
        text = _users(request)[0]
        block = _between(text, "The user's question:\n\n", "\n\nWhat you know about")
        info = _between(text, "preferences:\n", "\n\n" + prompts.FINAL_MARKER)
        task = self.tasks.get(block)
        rng = _rng(request)
        known = self.known(info)
        realized = {}
        for attr_id, value in known.items():
            attribute = self.taxonomy[attr_id]
            realized[attr_id] = (
                value if rng.random() < self.follow else self._deviate(attribute, value, rng)
            )
        if known:
            for attribute in self.taxonomy:
                if attribute.id not in known and rng.random() < self.overcorrect:
                    realized[attribute.id] = self._deviate(attribute, attribute.default, rng)
        correct = rng.random() < self.accuracy - self.cost * len(known)
        final = self._final(task, correct, rng)
        style = ", ".join(f"{a}={v}" for a, v in sorted(realized.items())) or "defaults"
        lines = [
            f"[scripted answer by {request.model}]",
            f"Style: {style}",
            f"Here is my reasoning, shaped to what I know about you ({len(known)} preferences).",
        ]
        if rng.random() < self.slip:
            lines.append(f"All things considered, I would go with {final}.")
        else:
            lines.append(f"Final answer: {final}")
        return "\n".join(lines)

    def _final(self, task: Task | None, correct: bool, rng: np.random.Generator) -> str:
        if task is None:
            return "unknown"
        if task.answer_type == "choice":
            if correct:
                return f"({task.answer}) {task.answer_text}"
            wrong = [label for label, _ in task.options if label != task.answer]
            label = wrong[int(rng.integers(len(wrong)))]
            return f"({label}) {dict(task.options)[label]}"
        if correct:
            return task.answer
        try:
            return str(int(float(task.answer)) + 1 + int(rng.integers(3)))
        except ValueError:
            return "I could not determine it"

    # -- judge, grader, router -------------------------------------------------------------

    def judge(self, request: LLMRequest) -> str:
        """``SCORE: n`` from the distance of the realized value to the target."""
        text = _users(request)[0]
        name = _between(text, "Grade ONE aspect only: ", " — ")
        label = _between(text, "This user's preference: ", " — ")
        response = _between(text, "<response>\n", "\n</response>")
        attribute = self.taxonomy.by_name(name)
        if attribute is None:
            return "I cannot tell which aspect to grade."
        target = next((v for v in attribute.values if v.label == label), None)
        if target is None:
            return "I cannot tell the target value."
        rng = _rng(request)
        first = len(request.messages) <= 2
        if first and rng.random() < self.judge_garbage:
            return "The response addresses this aspect reasonably well overall."
        styles = dict(_STYLE.findall(_between(response, "Style: ", "\n")))
        realized = styles.get(attribute.id, attribute.default)
        if realized not in attribute.value_ids:
            realized = attribute.default
        if attribute.ordinal:
            score = round(5 - 4 * attribute.distance(realized, target.value))
        else:
            score = 5 if realized == target.value else 2
        if rng.random() < self.judge_noise:
            score += 1 if rng.random() < 0.5 else -1
        return f"SCORE: {min(5, max(1, score))}"

    def grader(self, request: LLMRequest) -> str:
        """CORRECT if the reference answer (label or text) appears in the response."""
        text = _users(request)[0]
        reference = _between(text, "Reference answer: ", "\n")
        response = normalize_text(_between(text, "<response>\n", "\n</response>"))
        label = re.match(r"\(([A-Z])\) (.*)", reference)
        candidates = [label.group(2)] if label else [reference]
        hit = any(normalize_text(c) and normalize_text(c) in response for c in candidates)
        return "CORRECT" if hit else "INCORRECT"

    def route(self, request: LLMRequest) -> str:
        """The keyword router's ids as JSON (sometimes prose first, to exercise the retry)."""
        question = _between(_users(request)[0], "<<<\n", "\n>>>")
        if len(request.messages) <= 2 and _rng(request).random() < 0.05:
            return "That question seems to be about the style of the answer."
        return json.dumps(list(self.router.route_sync(question).attributes))

    # -- generation ------------------------------------------------------------------------

    def persona(self, request: LLMRequest) -> str:
        """A three-sentence backstory built from the profile line."""
        profile = _between(_users(request)[0], "Profile: ", "\n\n")
        match = re.match(
            r"Age (\d+), ([^,]+), ([^,]+), from ([^;]+); education: ([^.]+)\.", profile
        )
        if match is None:
            return "No backstory."
        age, gender, job, region, education = match.groups()
        learns = _between(profile, "Learns best through ", ",")
        goal = _between(profile, "usually wants to ", " when")
        pronoun = {"woman": "She", "man": "He"}.get(gender, "They")
        verb = "are" if pronoun == "They" else "is"
        return (
            (
                f"{pronoun} {verb} a {age}-year-old {job} from {region} with a {education} "
                f"education. {pronoun} often turns to an AI assistant between other tasks, usually "
                f"wanting to {goal or 'understand'} something quickly but properly. {pronoun} "
                f"learns best through {learns or 'examples'} and notices at once when an "
                "explanation misses the point."
            )
            .replace("They often turns", "They often turn")
            .replace("They learns", "They learn")
        )

    def rubric(self, request: LLMRequest) -> str:
        """The draft anchors as JSON, each prefixed with what a grader should look for."""
        draft = _between(_users(request)[0], "Draft rubric (score: anchor):\n", "\n\nRewrite")
        anchors = {}
        for line in draft.splitlines():
            score, _, anchor = line.partition(": ")
            anchors[score.strip()] = f"Observable in the response: {anchor.strip()}"
        return json.dumps(anchors, sort_keys=True)

    def handlers(self) -> dict[str, Handler]:
        """Role -> handler, for `ScriptedBackend`."""
        return {
            "ask": self.ask,
            "answer": self.answer,
            "judge": self.judge,
            "grader": self.grader,
            "router": self.route,
            "phrase": scripted_phrase_handler(self.taxonomy),
            "persona": self.persona,
            "rubric": self.rubric,
        }


def scripted_handlers(
    taxonomy: Taxonomy, tasks: Sequence[Task] = (), **settings: Any
) -> dict[str, Handler]:
    """Handlers for every PrefDisco role (see `ScriptedWorld` for ``settings``)."""
    return ScriptedWorld(taxonomy, tasks, **settings).handlers()


def server_answer(handlers: Mapping[str, Handler]) -> Callable[[dict[str, Any]], str]:
    """An ``answer`` function for `OpenAITestServer`.

    The role is recovered from the messages (`role_of`)
    and the scripted handler answers, so an endpoint run reproduces the scripted run.
    """

    def answer(body: dict[str, Any]) -> str:
        messages = tuple((m["role"], m.get("content") or "") for m in body.get("messages", []))
        role = prompts.role_of(messages) or "default"
        params = {
            k: v
            for k, v in body.items()
            if k not in ("model", "messages", "seed", "stream", "n") and v is not None
        }
        request = LLMRequest(str(body.get("model")), messages, params, role=role)
        handler = handlers.get(role)
        return handler(request) if handler is not None else f"[no scripted role {role}]"

    return answer
