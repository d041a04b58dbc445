"""Recalibration-aware online headroom rows: the population-prior learner on recalibrated features.

The online rows of `prefduel.runner.headroom` (``online:oracle-prior*``: a prior over the exact
weights of the *earlier* arrivals) use the rater's score g as it is, while CODuel replaces it by
``(A g)_p`` with a learned ``K x K`` map ``A`` (`prefduel.policies.coduel.recal`). The rows here
give the learner the best map of that class:

* **The map.** With features ``phi(p, q) = [x(p, q), (A g(q))_p]`` (``x`` the persona
  indicators ``e_p``, or with ``kind`` the indicators of persona *and* question kind), ``A`` and
  every user's weights are fitted jointly by least squares of the utilities ``U`` on the
  features (`fit_map`): the map under which the per-user linear oracle (`ref:oracle-user`'s fit)
  explains the users best. In TutorSim a user's weight on g multiplies the true suitability of
  a persona to a question, so this is the best linear map of the rater onto that suitability
  that the utilities reveal. ``A`` is fitted without a penalty (CODuel's ridge shrinks toward
  a multiple of the identity; the best map needs none), and rescaled so that ``A g`` keeps the
  root mean square of g (the scale is shared with the users' weights; CODuel rescales too).
* ``online:oracle-prior-recal`` and ``online:oracle-prior-lookahead-recal``: for each arrival
  ``A`` is fitted on the arrivals of its prior only (the earlier ones, other students), so the
  map is at best what an online learner could know when that arrival comes; its prior is the
  earlier users' weights under that map, and its own features are seen through the same map.
* ``online:oracle-prior-lookahead-recal-hindsight``: one ``A`` fitted in hindsight on every
  arrival of the world (an upper envelope for the map; the prior stays past-only).
* ``online:oracle-prior-lookahead-recal-kind``: as ``...-lookahead-recal`` with persona-by-kind
  indicators in place of ``e_p`` (a user may prefer one persona for definitions and another for
  why-questions): TutorSim's chains are definition, computation, why in a fixed order, so a
  policy may know each question's kind.

A world whose features are not ``[e_p, g]`` (d = K + 1) has no rater score to recalibrate, and
one whose questions carry no ``kind`` has no kind row: `recal_pairs` leaves them out.

The map is fitted by alternating least squares on per-user sufficient statistics (``O(f K^2)``
numbers per user), so refitting it for every arrival is cheap next to the lookahead.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from prefduel.runner.headroom import HORIZON, PriorRun, play_oracle_prior, prior_log_weights
from prefduel.worlds.world import World

#: The recalibration-aware online rows, in the order `recal_pairs` returns them.
RECAL_ROWS = (
    "online:oracle-prior-recal",
    "online:oracle-prior-lookahead-recal",
    "online:oracle-prior-lookahead-recal-hindsight",
    "online:oracle-prior-lookahead-recal-kind",
)
#: Ridge of the users' least squares (as `prefduel.runner.references.linear_oracle_theta`).
THETA_RIDGE = 1e-6
#: Alternating least squares: at most this many rounds, and stop when A moves less than TOL.
MAX_ROUNDS = 200
TOL = 1e-7


@dataclass(frozen=True)
class MapStats:
    """Per-user sufficient statistics of the least squares of ``U`` on ``[x, A g]``.

    With ``f`` fixed features ``x (S, K, f)``, rater scores ``g (S, K)`` and utilities
    ``U (S, K)`` of a user, summed over rounds ``s`` (and personas where shown):

    The fixed features are indicators (each ``x_sp`` has one 1), so the sum of ``x_sp x_sp^T``
    is diagonal and only its diagonal is kept.

    Attributes:
        xx: ``(N, f)`` the diagonal of the sum of ``x_sp x_sp^T`` (how often each indicator is on).
        xu: ``(N, f)`` sum of ``x_sp U_sp``.
        gg: ``(N, K, K)`` sum of ``g_s g_s^T``.
        ug: ``(N, K, K)`` ``[p, q]``: sum of ``U_sp g_sq``.
        xg: ``(N, f, K, K)`` ``[i, p, q]``: sum of ``x_spi g_sq``.
    """

    xx: np.ndarray
    xu: np.ndarray
    gg: np.ndarray
    ug: np.ndarray
    xg: np.ndarray

    @classmethod
    def of(cls, x: np.ndarray, g: np.ndarray, utilities: np.ndarray) -> MapStats:
        """Statistics of users with fixed features ``x (N, S, K, f)``, rater scores
        ``g (N, S, K)`` and utilities ``(N, S, K)``."""
        return cls(
            xx=np.einsum("nspi,nspi->ni", x, x),
            xu=np.einsum("nspi,nsp->ni", x, utilities),
            gg=np.einsum("nsp,nsq->npq", g, g),
            ug=np.einsum("nsp,nsq->npq", utilities, g),
            xg=np.einsum("nspi,nsq->nipq", x, g),
        )

    def take(self, users: np.ndarray) -> MapStats:
        """The statistics of ``users`` only."""
        return MapStats(*(getattr(self, f.name)[users] for f in dataclasses.fields(self)))


def theta_given_map(stats: MapStats, matrix: np.ndarray) -> np.ndarray:
    """Each user's least-squares weights ``(N, f + 1)`` on the features ``[x, A g]`` (with the
    tiny ridge of `ref:oracle-user`'s fit).

    The indicators' Gram matrix is diagonal (one indicator per round and persona), so the
    ``(f + 1)``-dimensional solve is a Schur complement on the score's weight: ``O(f)`` per user.
    """
    n, f, k = stats.xx.shape[0], stats.xx.shape[1], matrix.shape[0]
    cross = stats.xg.reshape(n, f, k * k) @ matrix.ravel()  # sum of x_sp (A g_s)_p
    own = stats.gg.reshape(n, k * k) @ (matrix.T @ matrix).ravel()  # sum of (A g_s)_p^2
    on_g = stats.ug.reshape(n, k * k) @ matrix.ravel()  # sum of U_sp (A g_s)_p
    diag = stats.xx + THETA_RIDGE
    schur = own + THETA_RIDGE - np.sum(cross**2 / diag, axis=1)
    c = (on_g - np.sum(cross * stats.xu / diag, axis=1)) / schur
    b = (stats.xu - cross * c[:, None]) / diag
    return np.concatenate([b, c[:, None]], axis=1)


def map_given_theta(stats: MapStats, theta: np.ndarray) -> np.ndarray:
    """The least-squares ``A (K, K)`` for fixed user weights ``theta (N, f + 1)``.

    Each row ``a_p`` of ``A`` solves ``min sum_{n,s} (U_nsp - x_nsp . b_n - c_n g_ns . a_p)^2``
    (``b_n, c_n`` the weights on ``x`` and on the score): the rows share the Gram matrix
    ``sum_n c_n^2 G_n``. Directions it cannot see (g centered over personas never moves along
    the all-ones vector) get the minimum-norm answer, as `numpy.linalg.lstsq` gives.
    """
    n, f, k = stats.xg.shape[:3]
    b, c = theta[:, :-1], theta[:, -1]
    gram = (c**2 @ stats.gg.reshape(n, k * k)).reshape(k, k)
    target = c @ stats.ug.reshape(n, k * k) - (c[:, None] * b).ravel() @ stats.xg.reshape(
        n * f, k * k
    )
    return target.reshape(k, k) @ np.linalg.pinv(gram, rcond=1e-10, hermitian=True)


def rescaled(matrix: np.ndarray, stats: MapStats) -> np.ndarray | None:
    """``matrix`` scaled so that ``A g`` keeps the root mean square of g over the users'
    questions (None when ``A g`` is 0 there: no map to speak of)."""
    total = stats.gg.sum(axis=0)
    raw = float(np.trace(total))
    mapped = float(np.sum(total * (matrix.T @ matrix)))
    if not (mapped > 1e-12 * max(raw, 1e-300) and raw > 0):
        return None
    return matrix * np.sqrt(raw / mapped)


def fit_map(stats: MapStats, start: np.ndarray | None = None) -> np.ndarray:
    """The map ``A`` of the joint least squares of ``U`` on ``[x, A g]`` (with every user's
    weights), by alternating least squares from ``start`` (the identity when None), rescaled
    (`rescaled`). A fit that collapses returns ``start``."""
    k = stats.gg.shape[1]
    matrix = np.eye(k) if start is None else np.array(start, dtype=float)
    for _ in range(MAX_ROUNDS):
        new = rescaled(map_given_theta(stats, theta_given_map(stats, matrix)), stats)
        if new is None:
            return matrix
        moved = float(np.abs(new - matrix).max())
        matrix = new
        if moved < TOL:
            break
    return matrix


def recal_layout(world: World) -> bool:
    """True when the features are ``[e_p, g]`` (d = K + 1): a rater score to recalibrate."""
    indicators = world.Phi[..., : world.K]
    return world.d == world.K + 1 and bool(np.all(indicators == np.eye(world.K)))


def question_kinds(world: World) -> np.ndarray | None:
    """``(N, S)`` index of each round's question kind (TutorSim: definition, computation,
    why), or None when the world's questions carry no kind."""
    if not world.questions or any("kind" not in q for q in world.questions):
        return None
    names, index = np.unique([str(q["kind"]) for q in world.questions], return_inverse=True)
    return index[world.question_index] if names.size > 1 else None


def fixed_features(world: World, kinds: np.ndarray | None = None) -> np.ndarray:
    """``(N, S, K, f)`` the features ``A`` does not touch: ``e_p`` (f = K), or with ``kinds``
    the indicator of persona p *and* the round's kind (f = K x kinds)."""
    eye = np.broadcast_to(np.eye(world.K), (world.N, world.S, world.K, world.K))
    if kinds is None:
        return eye
    one_hot = np.eye(int(kinds.max()) + 1)[kinds]  # (N, S, kinds)
    return np.einsum("nspq,nsc->nspqc", eye, one_hot).reshape(world.N, world.S, world.K, -1)


def features(x: np.ndarray, g: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """``[x, A g]`` of rounds with fixed features ``x (..., K, f)`` and scores ``g (..., K)``."""
    return np.concatenate([x, (g @ matrix.T)[..., None]], axis=-1)


def online_maps(stats: MapStats, student_index: np.ndarray) -> np.ndarray:
    """``(N, K, K)``: for each arrival, the map fitted on the arrivals of its past-only prior
    (`headroom.prior_log_weights`; the identity while it holds nobody), each fit started from
    the previous arrival's."""
    allowed = np.isfinite(prior_log_weights(student_index, past_only=True))
    n, k = allowed.shape[0], stats.gg.shape[1]
    maps = np.empty((n, k, k))
    matrix = np.eye(k)
    for a in range(n):
        users = np.flatnonzero(allowed[a])
        maps[a] = fit_map(stats.take(users), matrix) if users.size else np.eye(k)
        matrix = maps[a]
    return maps


def play_online_recal(world: World, x: np.ndarray, maps: np.ndarray, horizon: int) -> PriorRun:
    """Replay ``world`` with the past-only population prior under per-arrival maps: arrival
    ``n`` sees its features through ``maps[n]`` and its prior holds the earlier users'
    least-squares weights under ``maps[n]``.

    Returns:
        The shown pairs, clicks and final posterior (as `headroom.play_oracle_prior`).
    """
    g = world.Phi[..., -1]
    phi = np.stack([features(x[a], g[a], maps[a]) for a in range(world.N)])
    stats = MapStats.of(x, g, world.U)
    particles = np.stack([theta_given_map(stats, maps[a]) for a in range(world.N)])
    seen = dataclasses.replace(world, Phi=phi)
    return play_oracle_prior(seen, particles, horizon=horizon, past_only=True)


def recal_pairs(world: World, horizon: int = HORIZON) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Shown pairs ``(first, second)`` of the rows of `RECAL_ROWS` that ``world`` defines
    (none without a ``[e_p, g]`` layout; no kind row without question kinds)."""
    if not recal_layout(world):
        return {}
    g = world.Phi[..., -1]
    x = fixed_features(world)
    stats = MapStats.of(x, g, world.U)
    maps = online_maps(stats, world.student_index)
    out = {}
    for name, h in zip(RECAL_ROWS[:2], (1, horizon), strict=True):
        run = play_online_recal(world, x, maps, h)
        out[name] = (run.first, run.second)
    hindsight = fit_map(stats)
    seen = dataclasses.replace(world, Phi=features(x, g, hindsight))
    particles = theta_given_map(stats, hindsight)
    run = play_oracle_prior(seen, particles, horizon=horizon, past_only=True)
    out[RECAL_ROWS[2]] = (run.first, run.second)
    kinds = question_kinds(world)
    if kinds is not None:
        xk = fixed_features(world, kinds)
        kind_maps = online_maps(MapStats.of(xk, g, world.U), world.student_index)
        run = play_online_recal(world, xk, kind_maps, horizon)
        out[RECAL_ROWS[3]] = (run.first, run.second)
    return out
