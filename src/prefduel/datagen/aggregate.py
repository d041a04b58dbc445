"""From judge picks and rater scores to a stored World (pure functions).

* `tally`: picks ``(I, Q, 15, 4, samples)`` -> wins and valid counts per configuration;
  `expected_tally` adds the configurations measured by logprobs (``p * samples`` wins of
  ``samples``).
* `judge_probabilities` (TutorSim's, reused): smoothed log-odds averaged over display
  orders and label assignments -> click probabilities ``P (I, Q, K, K)``.
* `bt_utilities` (TutorSim's, reused): per-(student, question) ridge Bradley-Terry fit
  -> utilities ``U (I, Q, K)`` on a common scale of ``bt_scale`` logits.
* `rater_features`: rater scores centered over personas, divided by one standard
  deviation over the whole bank (as TutorSim's g) -> ``g (Q, K)``.
* `layout`: arrivals (seeded, balanced students; S distinct questions each, drawn
  uniformly without replacement; uniform click draws).
* `assemble_world`: ``Phi[n, s] = [e_p, g(p, q)]``, ``U``, ``P`` and ``u`` of every
  arrival and round.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from prefduel.core.rng import stream
from prefduel.worlds.asking import AskBank
from prefduel.worlds.tutorsim import JUDGE_CONFIGS, bt_utilities, judge_probabilities
from prefduel.worlds.world import World

#: ``picks`` value of a pick that is missing (malformed answer, or not asked).
NO_PICK = -1


def tally(picks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Wins of the lower-index persona and valid picks per configuration.

    Args:
        picks: ``(..., C, samples)`` int array: 1 when the lower-index persona ``a`` of the
            pair won, 0 when ``b`` won, `NO_PICK` when there is no valid pick.

    Returns:
        ``(wins, total)``, each ``(..., C)`` int64.
    """
    picks = np.asarray(picks)
    return (picks == 1).sum(axis=-1), (picks >= 0).sum(axis=-1)


def expected_tally(
    picks: np.ndarray, probs: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """`tally`, with each configuration measured by logprobs counted as its expectation.

    Args:
        picks: ``(..., C, samples)`` picks (see `tally`).
        probs: ``(..., C)`` probability that the lower-index persona wins, from logprobs; NaN
            where the configuration was sampled (None: all were).

    Returns:
        ``(wins, total)``: sampled wins plus ``p * samples``, valid picks plus ``samples``
        where ``p`` is known (ints when ``probs`` is None, else floats). ``samples`` sampled
        picks of a judge picking with probability ``p`` win ``p * samples`` on average, so both
        modes feed the same smoothed log-odds in expectation.
    """
    wins, total = tally(picks)
    if probs is None:
        return wins, total
    samples = np.shape(picks)[-1]
    known = np.isfinite(probs)
    return (
        wins + np.where(known, np.nan_to_num(probs) * samples, 0.0),
        total + np.where(known, samples, 0),
    )


def probabilities_and_utilities(
    picks: np.ndarray,
    k: int,
    *,
    ridge: float,
    scale: float,
    probs: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Click probabilities and utilities from judge picks.

    Args:
        picks: ``(I, Q, k(k-1)/2, 4, samples)`` picks (see `tally`), configurations in
            `JUDGE_CONFIGS` order.
        k: Personas.
        ridge: Ridge of the Bradley-Terry fit.
        scale: Logits spanning U in [0, 1].
        probs: ``(I, Q, k(k-1)/2, 4)`` probabilities from logprobs (see `expected_tally`).

    Returns:
        ``P (I, Q, k, k)`` and ``U (I, Q, k)``.
    """
    wins, total = expected_tally(picks, probs)
    prob = judge_probabilities(wins, total, k)
    return prob, bt_utilities(prob, ridge=ridge, scale=scale)


def rater_features(scores: np.ndarray) -> np.ndarray:
    """The feature g from rater scores.

    Args:
        scores: ``(Q, K)`` scores; a row of NaN marks a question without usable scores.

    Returns:
        ``(Q, K)``: scores centered over personas per question and divided by the standard
        deviation of all centered scores of the bank (unit s.d.); 0 for rows without scores
        and when every score is equal.
    """
    scores = np.asarray(scores, dtype=float)
    valid = np.all(np.isfinite(scores), axis=1)
    g = np.zeros_like(scores)
    if valid.any():
        centered = scores[valid] - scores[valid].mean(axis=1, keepdims=True)
        sd = centered.std()
        g[valid] = centered / sd if sd > 0 else 0.0
    return g


def layout(
    n_students: int, n_questions: int, arrivals: int, rounds: int, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Arrivals of a generated world.

    Students are assigned in a random order that uses each ``floor`` or ``ceil(N / I)`` times;
    each arrival gets ``rounds`` distinct questions drawn uniformly without replacement, in
    random order; the click draws are uniform. Streams: ``stream(seed, "datagen", "layout")``
    and ``stream(seed, "datagen", "clicks")``.

    Returns:
        ``student_index (N,)``, ``question_index (N, S)`` (int64) and ``u (N, S)``.
    """
    if rounds > n_questions:
        raise ValueError(f"rounds: expected at most {n_questions} questions, got {rounds}")
    rng = stream(seed, "datagen", "layout")
    student_index = rng.permutation(np.resize(np.arange(n_students), arrivals)).astype(np.int64)
    question_index = np.stack(
        [rng.choice(n_questions, size=rounds, replace=False) for _ in range(arrivals)]
    ).astype(np.int64)
    uniforms = stream(seed, "datagen", "clicks").random((arrivals, rounds))
    return student_index, question_index, uniforms


def assemble_world(
    *,
    name: str,
    seed: int,
    prob: np.ndarray,
    utility: np.ndarray,
    g: np.ndarray,
    student_index: np.ndarray,
    question_index: np.ndarray,
    uniforms: np.ndarray,
    students: Sequence[dict[str, Any]],
    questions: Sequence[dict[str, Any]],
    personas: Sequence[dict[str, Any]],
    info: dict[str, Any],
    asks: AskBank | None = None,
) -> World:
    """The world of the judged cells laid out into arrivals.

    Args:
        name: World (roster) name.
        seed: Layout seed.
        prob: ``(I, Q, K, K)`` click probabilities per (student, question).
        utility: ``(I, Q, K)`` utilities.
        g: ``(Q, K)`` rater feature.
        student_index: ``(N,)`` student of each arrival.
        question_index: ``(N, S)`` question of each round.
        uniforms: ``(N, S)`` click draws.
        students: I student records.
        questions: Q question records.
        personas: K persona records.
        info: Free-form metadata.
        asks: The preference questions and every arrival's answers (None: not askable).

    Returns:
        A validated World with ``Phi (N, S, K, K + 1)``.
    """
    n, s = question_index.shape
    k = utility.shape[-1]
    rows = student_index[:, None]
    phi = np.concatenate(
        [np.broadcast_to(np.eye(k), (n, s, k, k)), g[question_index][..., None]], axis=-1
    )
    world = World(
        roster=name,
        seed=int(seed),
        Phi=np.ascontiguousarray(phi),
        U=np.ascontiguousarray(utility[rows, question_index]),
        P=np.ascontiguousarray(prob[rows, question_index]),
        u=uniforms,
        student_index=student_index,
        question_index=question_index,
        students=list(students),
        questions=list(questions),
        personas=list(personas),
        info=info,
        asks=asks,
    )
    world.validate(where=f"generated world {name!r}")
    return world


def pick_diagnostics(picks: np.ndarray, probs: np.ndarray | None = None) -> dict[str, float]:
    """How the judge behaved: position and label biases, indifference.

    Args:
        picks: ``(I, Q, pairs, 4, samples)`` picks (see `tally`).
        probs: ``(I, Q, pairs, 4)`` probabilities from logprobs (see `expected_tally`), whose
            configurations count as ``samples`` picks at their expectation.

    Returns:
        ``valid``, ``missing``, ``first_shown_won`` (share of valid picks that chose the
        answer displayed first; 0.5 = no position bias) and ``label_a_chosen`` (share that
        chose label A); with ``probs``, also ``from_logprobs`` (configurations measured by
        logprobs, whose pick slots are not missing).
    """
    picks = np.asarray(picks)
    a_first = np.array([c[0] for c in JUDGE_CONFIGS])
    a_label_a = np.array([c[1] for c in JUDGE_CONFIGS])
    wins, total = expected_tally(picks, probs)
    known = np.zeros(picks.shape[:-1], bool) if probs is None else np.isfinite(probs)
    n = float(total.sum())
    out = {
        "valid": int((picks >= 0).sum()),
        "missing": int(((picks < 0) & ~known[..., None]).sum()),
        "first_shown_won": float(np.where(a_first, wins, total - wins).sum() / n)
        if n
        else float("nan"),
        "label_a_chosen": float(np.where(a_label_a, wins, total - wins).sum() / n)
        if n
        else float("nan"),
    }
    if probs is not None:
        out["from_logprobs"] = int(known.sum())
    return out


__all__ = [
    "NO_PICK",
    "assemble_world",
    "expected_tally",
    "layout",
    "pick_diagnostics",
    "probabilities_and_utilities",
    "rater_features",
    "tally",
]
