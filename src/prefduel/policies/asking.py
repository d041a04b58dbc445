"""Policies that may ask before they duel: answers become pseudo-clicks on a per-user learner.

On an ask track a policy may spend up to ``ask_budget`` preference questions per user
(`prefduel.worlds.asking` describes the questions and the published answer model). A policy
here reads an answer as one or two clicks its Laplace learner could have seen:

- ``pair`` (a, b), answer 1 (a) or 0 (b): a click on ``z = e_a - e_b`` (the persona indicators;
  the rater feature does not enter a question about tutors in general);
- ``level`` with loadings ``l``: the answer model's latent is the utility gap between the most
  and the least ``l``-styled persona, so the click is on ``z = range(l) (l - mean l) / |l - mean
  l|^2`` (``theta . z`` is that gap in the learner's units); answers 3 and 4 are one and two
  clicks for it, 1 and 0 one and two against, 2 (neutral) none;
- ``least`` persona p for a question kind: one click of p lost against the others' average,
  ``z = e_p - mean_{q != p} e_q``.

Which question: the unasked one whose click the learner is least sure of (largest ``z' Sigma
z``), asked at the start of the session until the budget is spent.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from prefduel.core.answer_model import level_direction
from prefduel.policies.linear import NoTransfer
from prefduel.policies.loading import POLICIES


def question_clicks(question: dict[str, Any], answer: int, k: int, d: int) -> list[tuple]:
    """The pseudo-clicks ``(z (d,), y)`` an answer stands for (see the module docstring).

    Args:
        question: The public question (`prefduel.worlds.asking.AskQuestion.to_json`).
        answer: Its answer.
        k: Personas.
        d: Feature dimension (persona indicators first; further features are 0 in ``z``).
    """
    z = np.zeros(d)
    kind = question["kind"]
    if kind == "pair":
        a, b = question["pair"]
        z[a], z[b] = 1.0, -1.0
        return [(z, int(answer))]
    if kind == "level":
        z[:k] = level_direction(np.asarray(question["loadings"], dtype=float))
        strength = int(answer) - 2
        return [(z, int(strength > 0))] * abs(strength)
    z[:k] = -1.0 / (k - 1)
    z[int(answer)] = 1.0
    return [(z, 0)]


@POLICIES.register("notransfer-ask")
class NoTransferAsk(NoTransfer):
    """`notransfer`, which on an ask track asks its questions at the start of each session and
    reads the answers as pseudo-clicks on its per-user learner (see the module docstring).

    Settings: as ``notransfer`` (``rule``, ``prior_var``). On a track without questions it
    learns as ``notransfer`` does (with its own random stream, so ties break differently).
    """

    name = "notransfer-ask"
    SETTINGS: ClassVar[dict[str, Any]] = {}

    def reset(self, rng: np.random.Generator, context: dict[str, Any]) -> None:
        super().reset(rng, context)
        self.questions = list(context.get("questions", []))
        self.budget = int(context.get("ask_budget", 0))

    def start_student(self) -> None:
        super().start_student()
        self.asked: set[int] = set()
        self.selected = False

    def ask(self) -> int | None:
        """The most uncertain unasked question, while the session has not started."""
        if self.selected or len(self.asked) >= self.budget:
            return None
        best, width = None, -1.0
        for q, question in enumerate(self.questions):
            if q in self.asked:
                continue
            for z, _ in question_clicks(question, _probe(question), self.K, self.d)[:1]:
                spread = float(z @ self.belief.sigma @ z)
                if spread > width:
                    best, width = q, spread
        if best is not None:
            self.asked.add(best)
        return best

    def answer(self, question: int, value: int) -> None:
        """Update the learner with the answer's pseudo-clicks."""
        for z, y in question_clicks(self.questions[question], value, self.K, self.d):
            self.belief.observe(z, y)

    def select(self, Phi: np.ndarray) -> tuple[int, int]:
        self.selected = True
        return super().select(Phi)


def _probe(question: dict[str, Any]) -> int:
    """An answer that gives the question's pseudo-click direction (its strongest ``level``)."""
    return 4 if question["kind"] == "level" else 0
