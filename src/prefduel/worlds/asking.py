"""Worlds that can be asked: a public bank of preference questions and every arrival's hidden
answers, replayed on CPU like the clicks (nothing is asked of an LLM while a policy runs).

A question is public: its text, its kind and what it says about the personas (its loadings):

========  ==========================================  ====================================
kind      the question                                answer (an integer)
========  ==========================================  ====================================
level     "How much do you want <style>?"              0..4: strongly not .. strongly yes
pair      "Would you rather have tutor A or tutor B?"  1: A, 0: B
least     "For a <kind> question, which tutor would    the persona index
          you want least?"
========  ==========================================  ====================================

The answer model (`answer_bank`) is published and fixed before any policy runs on it. It reads
a student's *hidden* persona utilities (from the simulator's profile, never from a fitted
estimate): ``v_bar`` (K,), the student's utility of each persona averaged over the session's
question kinds, and ``v_kind`` (3, K), the average within each question kind. With ``beta``
the judge's logits per unit of latent utility and ``noise`` the answer noise (1 = the noise of
one click):

- **level** on a style dimension with persona loadings ``l`` (K,): the least-squares slope of
  ``v_bar`` on ``l``, times the loadings' range, is the utility the student gains from the most
  over the least ``l``-styled persona, ``gap``. The answer is an ordered logit: ``gap * beta /
  noise`` plus a standard logistic draw, cut at -1.5, -0.5, 0.5, 1.5.
- **pair** (a, b): 1 with probability ``sigmoid(beta (v_bar[a] - v_bar[b]) / noise)``, the
  chance a click between the two would go to ``a`` if the student judged them in general.
- **least** for a question kind: persona ``p`` with probability ``softmax(-beta v_kind / noise)``.

Worlds carry the bank as `AskBank`; seeds of a stored world re-order its answers with its
arrivals.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from prefduel.core.answer_model import DEFAULT_ANSWER_NOISE, LEVEL_CUTS, level_direction
from prefduel.core.btl import sigmoid
from prefduel.core.errors import WorldFormatError

AskKind = Literal["level", "pair", "least"]
#: Number of answer values of each kind (``least``: K).
LEVELS = {"level": 5, "pair": 2}
#: PrefDisco's simulated-user styles as answer noise (in units of one click's noise): a
#: cooperative student answers with half a click's noise, a terse one with the published
#: default, a vague one with twice it. The world name ``NAME/STYLE`` (``dev/vague+ask2``)
#: draws a TutorSim world's answers so (`prefduel.worlds.spec`).
ANSWER_STYLES = {"cooperative": 0.5, "terse": DEFAULT_ANSWER_NOISE, "vague": 2.0}


@dataclass(frozen=True)
class AskQuestion:
    """A public preference question.

    Attributes:
        id: Stable id (``level:brevity``, ``pair:0-3``, ``least:why``).
        kind: ``level``, ``pair`` or ``least``.
        text: The question as a student reads it.
        loadings: ``level``: each persona's value on the style dimension asked about (K,).
        pair: ``pair``: the two personas asked about.
        about: ``least``: the question kind asked about (``definition``, ...).
    """

    id: str
    kind: AskKind
    text: str
    loadings: tuple[float, ...] = ()
    pair: tuple[int, int] = (0, 1)
    about: str = ""

    def values(self, k: int) -> int:
        """How many answers the question has (personas for ``least``)."""
        return k if self.kind == "least" else LEVELS[self.kind]

    def to_json(self) -> dict[str, Any]:
        """The question as a policy (and ``world.json``) sees it."""
        out: dict[str, Any] = {"id": self.id, "kind": self.kind, "text": self.text}
        if self.kind == "level":
            out["loadings"] = list(self.loadings)
        elif self.kind == "pair":
            out["pair"] = list(self.pair)
        else:
            out["about"] = self.about
        return out

    @classmethod
    def from_json(cls, data: Any, where: str) -> AskQuestion:
        """Read a question back (`to_json`), checking its fields."""
        try:
            kind = data["kind"]
            if kind not in ("level", "pair", "least"):
                raise ValueError(f"kind {kind!r}")
            return cls(
                id=str(data["id"]),
                kind=kind,
                text=str(data["text"]),
                loadings=tuple(float(x) for x in data.get("loadings", ())),
                pair=tuple(int(x) for x in data.get("pair", (0, 1))),  # type: ignore[arg-type]
                about=str(data.get("about", "")),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise WorldFormatError(f"{where}: not a preference question ({exc})") from None


@dataclass(frozen=True)
class AskBank:
    """A world's preference questions and its arrivals' hidden answers.

    Attributes:
        questions: The public bank.
        answers: ``(N, Q)`` int64: arrival ``n``'s answer to question ``q``.
        noise: The answer noise the answers were drawn with (1 = one click).
    """

    questions: tuple[AskQuestion, ...]
    answers: np.ndarray
    noise: float = DEFAULT_ANSWER_NOISE

    def validate(self, n: int, k: int, where: str) -> None:
        """Check the answers' shape and range against the world's N and K."""
        if self.answers.shape != (n, len(self.questions)):
            raise WorldFormatError(
                f"{where}: answers must be {n} x {len(self.questions)}, got {self.answers.shape}"
            )
        for q, question in enumerate(self.questions):
            column = self.answers[:, q]
            if column.size and not (0 <= column.min() and column.max() < question.values(k)):
                raise WorldFormatError(f"{where}: answers to {question.id!r} out of range")

    def reordered(self, order: np.ndarray) -> AskBank:
        """The bank with its arrivals in ``order`` (a stored world's replicate)."""
        return AskBank(self.questions, self.answers[order], self.noise)

    def to_json(self) -> dict[str, Any]:
        """The bank as ``world.json`` stores it."""
        return {
            "noise": self.noise,
            "questions": [q.to_json() for q in self.questions],
            "answers": self.answers.tolist(),
        }

    @classmethod
    def from_json(cls, data: Any, where: str) -> AskBank:
        """Read a bank back (`to_json`)."""
        if not isinstance(data, dict):
            raise WorldFormatError(f"{where}: 'asks' must be a mapping")
        questions = tuple(
            AskQuestion.from_json(q, f"{where}, question {i}")
            for i, q in enumerate(data.get("questions", []))
        )
        try:
            answers = np.asarray(data.get("answers", []), dtype=np.int64)
            noise = float(data.get("noise", DEFAULT_ANSWER_NOISE))
        except (TypeError, ValueError) as exc:
            raise WorldFormatError(f"{where}: answers are not integers ({exc})") from None
        if answers.size == 0:
            answers = answers.reshape(0, len(questions))
        return cls(questions, answers, noise)


def question_bank(
    style: Sequence[tuple[str, str]],
    persona_style: np.ndarray,
    persona_names: Sequence[str],
    kinds: Sequence[str],
) -> tuple[AskQuestion, ...]:
    """The standard bank: a ``level`` question per style dimension, a ``pair`` question per
    persona pair, a ``least`` question per question kind.

    Args:
        style: ``(id, description)`` of each style dimension.
        persona_style: ``(K, m)`` each persona's value on each dimension.
        persona_names: The personas' names, for the texts.
        kinds: The question kinds (``definition``, ``computation``, ``why``).
    """
    out = [
        AskQuestion(
            f"level:{dim}",
            "level",
            f"How much do you want this: {text.rstrip('.').lower()}?",
            loadings=tuple(float(x) for x in persona_style[:, d]),
        )
        for d, (dim, text) in enumerate(style)
    ]
    out += pair_questions(persona_names, "Would you rather have {a} or {b} as your tutor?")
    out += [
        AskQuestion(
            f"least:{kind}",
            "least",
            f"For a {kind} question, which tutor would you want least?",
            about=kind,
        )
        for kind in kinds
    ]
    return tuple(out)


def pair_questions(names: Sequence[str], text: str) -> list[AskQuestion]:
    """A ``pair`` question per pair of personas ``a < b``, ``text`` formatted with their names
    (``{a}``, ``{b}``)."""
    k = len(names)
    return [
        AskQuestion(f"pair:{a}-{b}", "pair", text.format(a=names[a], b=names[b]), pair=(a, b))
        for a in range(k)
        for b in range(a + 1, k)
    ]


def answer_bank(
    questions: Sequence[AskQuestion],
    v_bar: np.ndarray,
    v_kind: dict[str, np.ndarray],
    beta: float,
    noise: float,
    rng: np.random.Generator,
) -> np.ndarray:
    """Every arrival's answer to every question, by the published answer model.

    Args:
        questions: The bank.
        v_bar: ``(N, K)`` each arrival's hidden utility of each persona, averaged over kinds.
        v_kind: Question kind -> ``(N, K)`` the same within that kind.
        beta: Logits per unit of latent utility (the judge's).
        noise: The answer noise (1: the noise of one click).
        rng: The answers' stream (drawn in question order, then arrival order).

    Returns:
        ``(N, Q)`` int64 answers.
    """
    n = v_bar.shape[0]
    scale = beta / noise
    out = np.empty((n, len(questions)), dtype=np.int64)
    for q, question in enumerate(questions):
        if question.kind == "level":
            latent = scale * level_gap(v_bar, np.asarray(question.loadings))
            draws = latent + rng.logistic(size=n)
            out[:, q] = np.searchsorted(LEVEL_CUTS, draws)
        elif question.kind == "pair":
            a, b = question.pair
            chance = sigmoid(scale * (v_bar[:, a] - v_bar[:, b]))
            out[:, q] = (rng.random(n) < chance).astype(np.int64)
        else:
            logits = -scale * v_kind[question.about]
            logits -= logits.max(axis=1, keepdims=True)
            weights = np.exp(logits)
            cumulative = np.cumsum(weights / weights.sum(axis=1, keepdims=True), axis=1)
            picked = (cumulative < rng.random((n, 1))).sum(axis=1)
            out[:, q] = np.minimum(picked, v_bar.shape[1] - 1)
    return out


def level_gap(v_bar: np.ndarray, loadings: np.ndarray) -> np.ndarray:
    """``(N,)`` the least-squares slope of each row of ``v_bar`` (N, K) on ``loadings`` (K,),
    times the loadings' range: what the most over the least loaded persona is worth."""
    return v_bar @ level_direction(loadings)
