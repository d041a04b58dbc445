"""coduel-ask: CODuel that, on an ask track, asks its questions before the session's duels.

Everything is ``coduel-restarts`` (`prefduel.policies.coduel.policy` with the population
restarts of `prefduel.policies.coduel.restarted`, chosen on ``dev``; ``coduel-ask:restarts=0``
is the first version, on CODuel's population as is); on an ask track, at the start of each
session:

1. **Which question**: the unasked question of highest value under the current mixture belief
   (which component is this user, and where in it), estimated on ``draws`` draws of theta from
   the belief: ``value=info``, the expected information gain (mutual information between the
   answer and theta), or ``value=decision``, the expected gain in the value of the best pair
   (a knowledge gradient on the decision).
2. **Answers as likelihood terms**: through the published answer model
   (`prefduel.core.answer_model`, assumed at noise ``answer_noise``), each answer updates every
   component by an exact Laplace step and reweights the mixture by the component's evidence
   (`prefduel.policies.coduel.answers`), as a click does; the no-transfer learner beside it (the
   gate's yardstick and the choice while the gate is closed) takes the same answers.
3. Asking stops when the budget is spent, or earlier when no question is worth ``min_gain``.

The population is still learned from clicks only: each completed session's likelihood summary
is that of its clicks (a learner that saw the clicks alone runs beside), so a user's answers
never enter the prior of later users twice.

On a track without questions it learns as CODuel does (with its own random stream, so exact
ties, e.g. at the first arrival's zero prior mean, break differently).
"""

from __future__ import annotations

import inspect
from typing import Any, ClassVar, Literal

import numpy as np

from prefduel.core import jit
from prefduel.core.answer_model import DEFAULT_ANSWER_NOISE, level_direction
from prefduel.core.laplace import laplace_update
from prefduel.policies.base import Count, NonNegative, Positive
from prefduel.policies.coduel import answers as model
from prefduel.policies.coduel.ask_kernels import replay_clicks
from prefduel.policies.coduel.policy import CODuel
from prefduel.policies.coduel.restarted import CODuelRestarts
from prefduel.policies.laplace import LaplaceBelief
from prefduel.policies.loading import POLICIES


def _signature(base: Any, own: Any) -> inspect.Signature:
    """``own``'s signature with ``base``'s named parameters in place of ``**coduel``."""
    params = list(inspect.signature(own).parameters.values())[:-1]
    params += list(inspect.signature(base).parameters.values())[1:]
    return inspect.Signature(params)


@POLICIES.register("coduel-ask")
class CODuelAsk(CODuelRestarts):
    """CODuel with questions (see the module docstring). Settings: CODuel's (with
    ``coduel-restarts``' defaults), and

    Args:
        value: ``info`` | ``decision`` - how a question is valued (``info``).
        draws: Draws of theta from the belief that value the questions (256).
        answer_noise: The answer noise the answers are read with (1.0, the published default).
        min_gain: Ask only questions whose value exceeds this (0: spend the whole budget).
    """

    name = "coduel-ask"
    SETTINGS: ClassVar[dict[str, Any]] = {
        **CODuel.SETTINGS,
        "value": Literal["info", "decision"],
        "draws": Count,
        "answer_noise": Positive,
        "min_gain": NonNegative,
    }

    def __init__(
        self,
        value: str = "info",
        draws: int = 256,
        answer_noise: float = DEFAULT_ANSWER_NOISE,
        min_gain: float = 0.0,
        **coduel: Any,
    ) -> None:
        super().__init__(**coduel)
        self.configure(value=value, draws=draws, answer_noise=answer_noise, min_gain=min_gain)

    # every CODuel setting by name, so a spec's unknown setting is refused with the full list
    __init__.__signature__ = _signature(  # type: ignore[attr-defined]
        CODuelRestarts.__init__, __init__
    )

    def reset(self, rng: np.random.Generator, context: dict[str, Any]) -> None:
        super().reset(rng, context)
        self.questions = list(context.get("questions", []))
        self.budget = int(context.get("ask_budget", 0))
        self._directions = [  # a level question's direction depends on its loadings only
            level_direction(np.asarray(q["loadings"], dtype=float))
            if q["kind"] == "level"
            else None
            for q in self.questions
        ]

    def start_student(self) -> None:
        super().start_student()
        self.clicks: list[tuple[np.ndarray, int]] = []  # the session's clicks, for its summary
        self.asked: set[int] = set()
        self._session: tuple[np.ndarray, list[np.ndarray]] | None = None

    # -- asking ------------------------------------------------------------------------------

    def ask(self) -> int | None:
        """The unasked question of highest value, before the session's first duel."""
        if self.t > 0 or self._last is not None or len(self.asked) >= self.budget:
            return None
        candidates = [q for q in range(len(self.questions)) if q not in self.asked]
        if not candidates:
            return None
        utility, features = self._session_features()
        kinds = [self.questions[q]["kind"] for q in candidates]
        feats = [features[q] for q in candidates]
        weights, mu, sigma = self._asking_belief()
        theta = model.mixture_draws(weights, mu, sigma, self.draws, self.rng)
        if self.value == "info":
            gains = model.information_gain(kinds, feats, theta)
        else:
            gains = model.decision_gain(kinds, feats, theta, utility)
        best = int(np.argmax(gains))
        if gains[best] <= self.min_gain:
            return None
        self.asked.add(candidates[best])
        return candidates[best]

    def answer(self, question: int, value: int) -> None:
        """Add the answer to the mixture (weights by evidence) and to the no-transfer learner."""
        kind = self.questions[question]["kind"]
        feats = self._session_features()[1][question]
        belief = self.belief
        # value=decision chooses among questions whose values often differ by rounding alone
        # (many are exactly 0 in exact arithmetic), so it keeps the numpy path it was run with
        compiled = self.value == "info"
        evidence = model.observe_answer(
            kind, feats, int(value), belief.mu, belief.sigma, compiled=compiled
        )
        belief.log_weight = belief.log_weight + evidence
        belief._weights = None  # the weights moved with the evidence
        mu, sigma = self.solo.mu[None].copy(), self.solo.sigma[None].copy()
        model.observe_answer(kind, feats, int(value), mu, sigma, compiled=compiled)
        self.solo = LaplaceBelief(mu[0], sigma[0])

    def _asking_belief(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The belief the questions are valued under: the mixture while transfer is on, else
        the no-transfer learner (what the duels will be chosen by)."""
        if self.population and (self.gate_open or not self.gate):
            keep = self.belief.weights > 1e-4
            weights = self.belief.weights[keep] / self.belief.weights[keep].sum()
            return weights, self.belief.mu[keep], self.belief.sigma[keep]
        return np.ones(1), self.solo.mu[None], self.solo.sigma[None]

    def _session_features(self) -> tuple[np.ndarray, list[np.ndarray]]:
        """``M`` (K, d) and every question's features, once per session (questions are asked
        before the first duel, so the recent questions and the map do not change meanwhile).

        ``M`` is under the current recalibration: the mean rater score of each persona over
        the recent questions (none yet: 0)."""
        if self._session is None:
            gbar = None
            if self.layout_ok and self._bank_len:
                bank = self._bank_buf[self._bank_start : self._bank_start + self._bank_len]
                gbar = bank[:, :, -1].mean(axis=0)
            utility = model.utility_map(self.K, self.d, gbar)
            features = [
                model.question_features(q, utility, self.answer_noise, direction)
                for q, direction in zip(self.questions, self._directions, strict=True)
            ]
            self._session = (utility, features)
        return self._session

    # -- the population learns from clicks only -----------------------------------------------

    def update(self, outcome: int) -> None:
        if self._last is not None:
            self.clicks.append((self._last[2], int(outcome)))
        super().update(outcome)

    def clicks_only(self) -> LaplaceBelief:
        """The learner that saw the session's clicks alone: the per-click Laplace pass of
        `LaplaceBelief.observe` from the isotropic prior, made when the summary needs it."""
        mu = np.zeros((1, self.d))
        sigma = (self.prior_var * np.eye(self.d))[None].copy()
        if self.clicks and jit.ENABLED:  # the same compiled step, one call for the session
            z = np.array([z for z, _ in self.clicks], dtype=float)
            y = np.array([y for _, y in self.clicks], dtype=float)
            replay_clicks(mu, sigma, z, y)
        else:
            for z, y in self.clicks:
                laplace_update(mu, sigma, z, y)
        return LaplaceBelief(mu[0], sigma[0])

    def _solo_summary(self) -> tuple[np.ndarray, np.ndarray]:
        """The session's clicks' likelihood summary, read off the clicks-only learner."""
        learner = self.clicks_only()
        prec = np.linalg.inv(learner.sigma)
        prec = 0.5 * (prec + prec.T)
        return prec - np.eye(self.d) / self.prior_var, prec @ learner.mu
