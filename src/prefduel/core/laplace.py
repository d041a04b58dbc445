"""One-click Laplace updates of Gaussian beliefs on pairwise clicks: the one solver.

A click on a shown pair with features ``z = phi_first - phi_second`` is modeled as
``P(first wins) = sigmoid(theta . z)``. A Gaussian belief ``N(mu, Sigma)`` over ``theta`` is
updated after every click in O(d^2) (assumed-density filtering with a Laplace step):

* the new mode lies on the line ``mu + alpha Sigma z``, where ``alpha`` is the root of the
  increasing scalar function ``f(alpha) = alpha - y + sigmoid(m + alpha s)``, ``m = z . mu``,
  ``s = z . Sigma z`` (`solve_step`);
* the new covariance follows by Sherman-Morrison:
  ``Sigma' = Sigma - w Sigma z z^T Sigma / (1 + w s)`` with ``w = p (1 - p)`` at the mode.

The root is found by plain Newton from the step taken with the predictive probability (``f``
has slope in ``[1, 1 + s/4]``; 4-5 iterations on every click of a CODuel run on ``dev``), each
entry stopping at its first iterate with ``|f| < TOLERANCE``; entries plain Newton leaves
unconverged (very surprising clicks on very wide beliefs, where it can cycle) are solved again
by safeguarded Newton (bisection when the Newton point leaves the bracket ``(y - 1, y)`` or does
not halve the step: ``rtsafe`` of Numerical Recipes).

`laplace_update` runs it in place on a batch of beliefs: compiled with numba when
`prefduel.core.jit.ENABLED`, else in numpy (`laplace_step_batch`; one belief alone takes numpy
products around the scalar root); all take the same iterations to the same tolerance, so they
agree to rounding. Every Laplace update of prefduel
(the per-user learners, CODuel's mixture components, its lookahead and its likelihood summaries)
is this one.

References:
    Chapelle & Li (2011), An empirical evaluation of Thompson sampling (Laplace-approximated
    logistic posteriors). Spiegelhalter & Lauritzen (1990), sequential updating.
"""

from __future__ import annotations

import math

import numpy as np

from prefduel.core import jit
from prefduel.core.btl import sigmoid, sigmoid_scalar

#: ``pi / 8``: the probit approximation of the predictive probability,
#: ``sigmoid(m / sqrt(1 + PROBIT s))``.
PROBIT = math.pi / 8.0
#: The root is accepted at the first iterate with ``|f(alpha)| < TOLERANCE`` (then
#: ``|alpha - root| < TOLERANCE``, since ``f' >= 1``).
TOLERANCE = 1e-12
#: Plain Newton iterations before the safeguarded ones.
NEWTON_STEPS = 6
#: Cap on the safeguarded iterations (bisection halves the bracket of width 1 each time).
SAFEGUARDED_STEPS = 60

_sigmoid = jit.compiled(inline="always")(sigmoid_scalar)


@jit.compiled()
def solve_root(m: float, s: float, y: float, p0: float) -> float:
    """The step ``alpha`` of one click (see the module docstring), for one belief.

    Args:
        m: ``z . mu``.
        s: ``z . Sigma z``.
        y: The outcome (1.0: the first item won, 0.0: it lost).
        p0: The predictive probability that the first item wins (the start).

    Returns:
        ``alpha`` with ``|alpha - y + sigmoid(m + alpha s)| < TOLERANCE`` (or the last
        safeguarded iterate).
    """
    alpha = (y - p0) / (1.0 + s * (p0 - p0 * p0))
    for _ in range(NEWTON_STEPS):
        p = _sigmoid(m + alpha * s)
        f = alpha - y + p
        if abs(f) < TOLERANCE:
            return alpha
        alpha -= f / (1.0 + s * (p - p * p))
    lo, hi = y - 1.0, y
    alpha = min(max(alpha, lo), hi)
    dx = dx_old = 1.0
    for _ in range(SAFEGUARDED_STEPS):
        p = _sigmoid(m + alpha * s)
        f = alpha - y + p
        if abs(f) < TOLERANCE:
            break
        if f > 0:
            hi = alpha
        else:
            lo = alpha
        df = 1.0 + s * (p - p * p)
        newton = alpha - f / df
        if (newton - hi) * (newton - lo) >= 0.0 or 2.0 * abs(f) > abs(dx_old * df):
            dx_old, dx = dx, 0.5 * (hi - lo)
            alpha = lo + dx
        else:
            dx_old, dx = dx, f / df
            alpha = newton
    return alpha


@jit.compiled()
def update_rows(mu, sigma, z, y):  # pragma: no cover - compiled
    """`laplace_update` (compiled), in place: ``mu (B, d)``, ``sigma (B, d, d)``, clicks
    ``z (1 or B, d)`` and ``y (1 or B,)`` (one row: shared by every belief); returns
    ``p_first (B,)``."""
    n, d = mu.shape
    p_first = np.empty(n)
    sz = np.empty(d)
    for b in range(n):
        r = b if z.shape[0] > 1 else 0
        y_b = y[b] if y.shape[0] > 1 else y[0]
        m = 0.0
        s = 0.0
        for i in range(d):
            acc = 0.0
            for j in range(d):
                acc += sigma[b, i, j] * z[r, j]
            sz[i] = acc
            m += z[r, i] * mu[b, i]
            s += z[r, i] * acc
        p0 = _sigmoid(m / math.sqrt(1.0 + PROBIT * s))
        p_first[b] = p0
        alpha = solve_root(m, s, y_b, p0)
        p = _sigmoid(m + alpha * s)
        w = p * (1.0 - p)
        c = w / (1.0 + w * s)
        for i in range(d):
            mu[b, i] += alpha * sz[i]
            for j in range(d):
                # c (sz_i sz_j), as numpy's outer product: the covariance stays symmetric to
                # the bit (symmetric ties in pair rules then break as they did before)
                sigma[b, i, j] -= c * (sz[i] * sz[j])
    return p_first


def _safeguarded_step(
    m: np.ndarray, s: np.ndarray, y: np.ndarray, alpha: np.ndarray
) -> np.ndarray:
    """The safeguarded iterations of `solve_root`, elementwise; converged entries keep their
    alpha."""
    lo, hi = y - 1.0, y.copy()
    alpha = np.clip(alpha, lo, hi)
    dx = dx_old = np.ones_like(m)
    for _ in range(SAFEGUARDED_STEPS):
        p = sigmoid(m + alpha * s)
        f = alpha - y + p
        abs_f = np.abs(f)
        if abs_f.max() < TOLERANCE:
            break
        above = f > 0
        hi = np.where(above, alpha, hi)
        lo = np.where(above, lo, alpha)
        df = 1.0 + s * (p - p * p)
        step = f / df
        newton = alpha - step
        bisect = ((newton - hi) * (newton - lo) >= 0.0) | (2.0 * abs_f > np.abs(dx_old * df))
        dx_old, dx = dx, np.where(bisect, 0.5 * (hi - lo), step)
        alpha = np.where(abs_f >= TOLERANCE, np.where(bisect, lo + dx, newton), alpha)
    return alpha


def solve_step(m: np.ndarray, s: np.ndarray, y: np.ndarray, p_first: np.ndarray) -> np.ndarray:
    """`solve_root` elementwise, in numpy (the path without numba).

    Each entry stops at its own first iterate with ``|f| < TOLERANCE``, so its root does not
    depend on the rest of the batch.

    Args:
        m: ``z . mu`` (any shape).
        s: ``z . Sigma z`` (same shape).
        y: Outcomes (same shape; 1 = first item won).
        p_first: Predictive probabilities that the first item wins (same shape).

    Returns:
        ``alpha`` (same shape).
    """
    alpha = (y - p_first) / (1.0 + s * (p_first - p_first * p_first))
    for _ in range(NEWTON_STEPS):
        p = sigmoid(m + alpha * s)
        f = alpha - y + p
        done = np.abs(f) < TOLERANCE
        if done.all():
            return alpha
        # converged entries stay where they stopped: each entry's root is then the same
        # whatever else is in the batch
        alpha = np.where(done, alpha, alpha - f / (1.0 + s * (p - p * p)))
    f = alpha - y + sigmoid(m + alpha * s)
    bad = ~(np.abs(f) < TOLERANCE)  # also catches NaN
    if bad.any():
        alpha = alpha.copy()
        alpha[bad] = _safeguarded_step(m[bad], s[bad], y[bad], alpha[bad])
    return alpha


def laplace_step_batch(
    mu: np.ndarray,
    sigma: np.ndarray,
    z: np.ndarray,
    y: np.ndarray | float,
    *,
    with_sigma: bool = True,
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """One-click Laplace updates of B Gaussian beliefs in numpy (pure: new arrays).

    Args:
        mu: Means ``(B, d)``.
        sigma: Covariances ``(B, d, d)``.
        z: Feature differences ``(B, d)`` or one ``(d,)`` shared by all beliefs.
        y: Outcomes ``(B,)`` or a scalar (1 = first item won).
        with_sigma: Also return the updated covariances (else ``None``; saves the rank-one
            update when only the means are needed).

    Returns:
        ``(mu', sigma', p_first)`` with shapes ``(B, d)``, ``(B, d, d)``, ``(B,)``; ``p_first``
        is the probit-approximated predictive probability that the first item wins,
        ``sigmoid(m / sqrt(1 + PROBIT s))``, computed before the update.
    """
    z = np.broadcast_to(z, mu.shape)
    y = np.broadcast_to(np.asarray(y, dtype=float), mu.shape[:1])
    sz = np.einsum("bij,bj->bi", sigma, z)
    m = np.einsum("bi,bi->b", z, mu)
    s = np.einsum("bi,bi->b", z, sz)
    p_first = sigmoid(m / np.sqrt(1.0 + PROBIT * s))
    alpha = solve_step(m, s, y, p_first)
    p = sigmoid(m + alpha * s)
    w = p * (1.0 - p)
    new_mu = mu + alpha[:, None] * sz
    if not with_sigma:
        return new_mu, None, p_first
    new_sigma = sigma - (w / (1.0 + w * s))[:, None, None] * np.einsum("bi,bj->bij", sz, sz)
    return new_mu, new_sigma, p_first


def laplace_update(
    mu: np.ndarray, sigma: np.ndarray, z: np.ndarray, y: np.ndarray | float
) -> np.ndarray:
    """One-click Laplace updates of B Gaussian beliefs, in place (compiled when numba is on).

    Args:
        mu: Means ``(B, d)``, float64, C-contiguous; overwritten.
        sigma: Covariances ``(B, d, d)``, float64, C-contiguous; overwritten.
        z: Feature differences: one ``(d,)`` shared by all beliefs, or ``(B, d)``.
        y: Outcomes: a scalar shared by all beliefs, or ``(B,)`` (1 = first item won).

    Returns:
        ``p_first (B,)``: the predictive probability that the first item wins, computed before
        the update (see `laplace_step_batch`).

    Raises:
        ValueError: the shapes do not fit, or ``mu``/``sigma`` cannot be written in place.
    """
    n, d = mu.shape
    z = np.asarray(z, dtype=float)
    if sigma.shape != (n, d, d) or z.ndim not in (1, 2) or z.shape[-1] != d:
        raise ValueError(f"mu {mu.shape}, sigma {sigma.shape} and z {z.shape} do not fit")
    for name, arr in (("mu", mu), ("sigma", sigma)):
        if arr.dtype != np.float64 or not arr.flags.c_contiguous or not arr.flags.writeable:
            raise ValueError(f"{name} must be a writeable C-contiguous float64 array")
    z = np.ascontiguousarray(z).reshape(-1, d)
    y = np.asarray(y, dtype=float).reshape(-1)
    if z.shape[0] not in (1, n) or y.shape[0] not in (1, n):
        raise ValueError(f"z {z.shape} and y {y.shape} must be shared or one per belief")
    if jit.ENABLED:
        return update_rows(mu, sigma, z, y)
    if n == 1:
        return _update_one(mu[0], sigma[0], z[0], float(y[0]))
    new_mu, new_sigma, p_first = laplace_step_batch(mu, sigma, z, y)
    mu[...], sigma[...] = new_mu, new_sigma
    return p_first


def update_one(mu: np.ndarray, sigma: np.ndarray, z: np.ndarray, y: float) -> float:
    """`laplace_update` of one belief ``mu (d,)``, ``sigma (d, d)`` in place: the same kernels
    (so the same result to the bit), without the batch's checks and reshapes, which cost about
    as much as the update itself for one belief. The per-click learners' update.

    Args:
        mu: Mean ``(d,)``, float64, C-contiguous; overwritten.
        sigma: Covariance ``(d, d)``, float64, C-contiguous; overwritten.
        z: Feature difference ``(d,)``.
        y: Outcome (1 = first item won).

    Returns:
        ``p_first``: the predictive probability that the first item wins, before the update.

    Raises:
        ValueError: the shapes do not fit.
    """
    z = np.ascontiguousarray(z, dtype=float)
    d = mu.shape[0]
    if mu.ndim != 1 or sigma.shape != (d, d) or z.shape != (d,):
        raise ValueError(f"mu {mu.shape}, sigma {sigma.shape} and z {z.shape} do not fit")
    if jit.ENABLED:
        return float(update_rows(mu[None], sigma[None], z[None], np.array([y], dtype=float))[0])
    return float(_update_one(mu, sigma, z, float(y))[0])


def _update_one(mu: np.ndarray, sigma: np.ndarray, z: np.ndarray, y: float) -> np.ndarray:
    """`laplace_update` of one belief ``mu (d,)``, ``sigma (d, d)`` without numba, in place:
    numpy products around the scalar root `solve_root` (several times cheaper than the batched
    numpy step for a single belief). Returns ``p_first (1,)``."""
    sz = sigma @ z
    m, s = float(z @ mu), float(z @ sz)
    p0 = sigmoid_scalar(m / math.sqrt(1.0 + PROBIT * s))
    alpha = solve_root(m, s, y, p0)
    p = sigmoid_scalar(m + alpha * s)
    w = p * (1.0 - p)
    mu += alpha * sz
    sigma -= (w / (1.0 + w * s)) * np.outer(sz, sz)
    return np.array([p0])
