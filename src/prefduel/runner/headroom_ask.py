"""``ref:oracle-prior-ask``: the population-prior reference that also asks.

The learner of `prefduel.runner.headroom` (a prior of particles, the other users' hindsight
weights ``theta_m``, updated exactly by Bayes' rule) first spends the arrival's question budget:
each question is the unasked one of highest expected information gain on the particles (the
mutual information between its answer and the particle, exact on a finite prior), and each
stored answer reweights the particles by its probability under the published answer model
(`prefduel.core.answer_model`). A particle's utility of a persona is its ``theta_m`` on the
arrival's own questions (known in hindsight, as the lookahead uses them), averaged over the
session (``pair``, ``level``) or over the questions of the kind asked about (``least``), in
click logits (``beta``) divided by the world's answer noise. Then the session is played as
``ref:oracle-prior`` (greedy) or ``ref:oracle-prior-lookahead`` plays it.

It says how much a perfect population model gains from B questions.
"""

from __future__ import annotations

import numpy as np

from prefduel.core import jit
from prefduel.core.answer_model import (
    answer_entropy,
    least_probabilities,
    level_direction,
    level_probabilities,
    pair_probabilities,
)
from prefduel.runner import headroom, headroom_kernels
from prefduel.worlds.world import World

#: Arrivals whose answers are valued together: the arrays of a few arrivals are a few MB, which
#: the allocator reuses and the cache holds, where those of a whole world (150 MB each on 350
#: arrivals) are fresh memory each time (measured on 2 shared cores: the answers' values and
#: weights took half the CPU in chunks of 16; the whole reference takes 0.77 s per 350-arrival
#: world in chunks of 8 against 0.85 s in chunks of 16). The result does not depend on it.
ARRIVAL_CHUNK = 8


def answer_log_likelihoods(
    world: World, theta: np.ndarray, beta: float, arrivals: slice | None = None
) -> np.ndarray:
    """``(N, Q, M, A)`` log probability of each answer to each question under each particle,
    for each arrival (``A`` = the most answers any question has; impossible answers -inf);
    with ``arrivals``, for those arrivals only (their rows of the whole world's array)."""
    asks = world.asks
    rows = slice(None) if arrivals is None else arrivals
    util = _particle_utilities(world.Phi[rows], theta, beta / asks.noise)  # (n, S, M, K)
    v_bar = util.mean(axis=1)  # (N, M, K)
    kinds = _question_kinds(world)[rows]
    count = max(q.values(world.K) for q in asks.questions)
    out = np.full((util.shape[0], len(asks.questions), theta.shape[0], count), -np.inf)
    for q, question in enumerate(asks.questions):
        if question.kind == "pair":
            a, b = question.pair
            probs = pair_probabilities(v_bar[..., a] - v_bar[..., b])
        elif question.kind == "level":
            probs = level_probabilities(v_bar @ level_direction(np.array(question.loadings)))
        else:
            probs = least_probabilities(_kind_mean(util, kinds == question.about, v_bar))
        out[:, q, :, : probs.shape[-1]] = np.log(np.maximum(probs, 1e-300))
    return out


def _particle_utilities(phi: np.ndarray, theta: np.ndarray, scale: float) -> np.ndarray:
    """``(n, S, M, K)`` each particle's utility of each persona, times ``scale``, from
    ``phi (n, S, K, d)`` (compiled when `prefduel.core.jit.ENABLED`; the same values)."""
    if jit.ENABLED:
        return headroom_kernels.particle_utilities(phi, np.ascontiguousarray(theta), scale)
    return np.einsum("nskd,md->nsmk", phi, theta) * scale


def _question_kinds(world: World) -> np.ndarray:
    """``(N, S)`` the kind of each round's question ('' where the world does not say)."""
    names = np.array([str(q.get("kind", "")) for q in world.questions] or [""])
    return names[world.question_index] if world.questions else np.full(world.U.shape[:2], "")


def _kind_mean(util: np.ndarray, mask: np.ndarray, fallback: np.ndarray) -> np.ndarray:
    """``(N, M, K)`` mean utility over each arrival's rounds in ``mask`` (N, S), else
    ``fallback`` (arrivals without such a round)."""
    count = mask.sum(axis=1)
    total = np.einsum("nsmk,ns->nmk", util, mask)
    mean = total / np.maximum(count, 1)[:, None, None]
    return np.where((count > 0)[:, None, None], mean, fallback)


def ask_by_information(
    log_weights: np.ndarray, answer_loglik: np.ndarray, answers: np.ndarray, budget: int
) -> tuple[np.ndarray, np.ndarray]:
    """Spend ``budget`` questions per arrival, each of highest expected information gain.

    Args:
        log_weights: ``(N, M)`` log prior over the particles.
        answer_loglik: ``(N, Q, M, A)`` from `answer_log_likelihoods`.
        answers: ``(N, Q)`` the stored answers.
        budget: Questions per arrival.

    Returns:
        ``(log_weights (N, M) after the answers, asked (N, budget) question indices)``.
    """
    n, q_count = answers.shape
    rows = np.arange(n)
    log_w = log_weights.copy()
    asked = np.empty((n, min(budget, q_count)), dtype=np.int64)
    probs = np.exp(answer_loglik)  # (N, Q, M, A)
    conditional = answer_entropy(probs)  # (N, Q, M): the answer's entropy given the particle
    for b in range(asked.shape[1]):
        w = headroom.normalized(log_w)  # (N, M)
        predictive = np.einsum("nm,nqma->nqa", w, probs)
        gain = answer_entropy(predictive) - np.einsum("nm,nqm->nq", w, conditional)
        for done in range(b):
            gain[rows, asked[:, done]] = -np.inf
        pick = np.argmax(gain, axis=1)
        asked[:, b] = pick
        log_w = log_w + answer_loglik[rows, pick, :, answers[rows, pick]]
    return log_w, asked


def play_oracle_prior_ask(
    world: World,
    theta: np.ndarray,
    budget: int,
    *,
    horizon: int = 1,
    beta: float = headroom.BETA,
    past_only: bool = False,
) -> tuple[headroom.PriorRun, np.ndarray]:
    """Replay ``world`` with the population-prior learner that first asks ``budget`` questions.

    Args:
        world: A world with preference questions (``world.asks``).
        theta: ``(N, d)`` hindsight weights of the arrivals (the particles).
        budget: Questions per arrival.
        horizon: 1 for greedy pairs, more for the lookahead (`headroom.lookahead_values`).
        beta: Logits per unit of utility of the click likelihood (and of the answers').
        past_only: Particles of earlier arrivals only (the online variant).

    Returns:
        The run (`headroom.PriorRun`) and the questions asked ``(N, budget)``.
    """
    if world.asks is None:
        raise ValueError(f"world {world.name!r} has no preference questions")
    log_w = headroom.prior_log_weights(world.student_index, past_only)
    asked = np.empty((world.N, min(budget, len(world.asks.questions))), dtype=np.int64)
    for lo in range(0, world.N, ARRIVAL_CHUNK):  # arrivals are independent given the particles
        rows = slice(lo, lo + ARRIVAL_CHUNK)
        loglik = answer_log_likelihoods(world, theta, beta, rows)
        log_w[rows], asked[rows] = ask_by_information(
            log_w[rows], loglik, world.asks.answers[rows], budget
        )
    run = headroom.play_oracle_prior(world, theta, horizon=horizon, beta=beta, log_weights=log_w)
    return run, asked
