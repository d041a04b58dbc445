"""Shared pieces of the baselines: pair widths, a per-user Laplace learner, and Gaussian
algebra for hierarchical (meta-learned) priors.

The baselines write the products of their small per-round arrays as ``a.dot(b)``: for the
matrix-matrix and matrix-vector products used here it is the same BLAS call as ``a @ b``, so
the same bits (``tests/policies/baselines/test_same_bits.py`` checks each form), with less
call overhead, which is most of the cost of a product of 7 x 7 arrays.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, ClassVar

import numpy as np
from pydantic import PlainValidator
from pydantic_core import PydanticCustomError

from prefduel.policies.base import Policy, Positive
from prefduel.policies.laplace import LaplaceBelief, cholesky_jitter


def _radius(value: Any) -> float | str:
    if value == "theory":
        return "theory"
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if not number or not math.isfinite(value) or value < 0:
        raise PydanticCustomError(
            "radius", "expected a number >= 0 or theory, got {value}", {"value": repr(value)}
        )
    return float(value)


#: A confidence multiplier: a number >= 0, or ``"theory"`` for the papers' radius
#: ``sqrt(d ln T)`` (`theory_radius`), resolved when a run starts.
Radius = Annotated[Any, PlainValidator(_radius)]


def theory_radius(d: int, horizon: int) -> float:
    """``sqrt(d ln T)``: the leading order of the confidence radius in the regret analyses of
    CoLSTIM, MaxInP and COLDB, with their problem constants (the link's slope bound, the norm
    bound of theta) set to 1, since the benchmark's learners do not know them.

    Args:
        d: Feature dimension.
        horizon: Rounds ``T`` the estimate is built from (at least 2 is used).
    """
    return math.sqrt(d * math.log(max(int(horizon), 2)))


def resolve_radius(value: float | str, d: int, horizon: int) -> float:
    """A `Radius` setting as a number: itself, or `theory_radius` for ``"theory"``."""
    return theory_radius(d, horizon) if value == "theory" else float(value)


def pair_widths(Phi: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """Confidence widths of all pair differences under a covariance.

    Args:
        Phi: Features ``(K, d)``.
        sigma: Covariance ``(d, d)`` (a Laplace posterior covariance, i.e. ``V^{-1}``).

    Returns:
        ``(K, K)`` matrix ``W[i, j] = sqrt((phi_i - phi_j)^T Sigma (phi_i - phi_j))``
        (zero diagonal), computed as ``A_ii + A_jj - 2 A_ij`` with ``A = Phi Sigma Phi^T``.
    """
    a = Phi.dot(sigma).dot(Phi.T)
    diag = a.diagonal()
    # (A_ii + A_jj) - 2 A_ij, then clipped and rooted in place: the same operations as
    # out-of-place ones, with fewer temporaries (this runs every round of several baselines)
    sq = diag[:, None] + diag[None, :]
    sq -= 2.0 * a
    np.maximum(sq, 0.0, out=sq)
    return np.sqrt(sq, out=sq)


def argmax_pair(scores: np.ndarray) -> tuple[int, int]:
    """``(i, j)``, ``i != j``, maximizing a ``(K, K)`` pair score (the diagonal is ignored)."""
    return argmax_pair_inplace(scores.copy())


def argmax_pair_inplace(scores: np.ndarray) -> tuple[int, int]:
    """`argmax_pair` of a scratch array: its diagonal is overwritten with ``-inf``."""
    k = scores.shape[0]
    scores.flat[:: k + 1] = -np.inf  # the diagonal (flat index i (k + 1) in C order)
    flat = int(scores.argmax())
    return flat // k, flat % k


def marginal_summary(
    lam: np.ndarray,
    h: np.ndarray,
    prior_prec: np.ndarray,
    post_cov: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """What one user's clicks say about the population mean, in information form.

    A user's theta is ``N(mean, Sigma0)``; the user's clicks have the Gaussian likelihood
    summary ``exp(-theta^T lam theta / 2 + h^T theta)``. Integrating theta out gives a Gaussian
    likelihood for ``mean`` with precision ``P = (Sigma0 + lam^{-1})^{-1}
    = lam - lam (Sigma0^{-1} + lam)^{-1} lam`` and information ``(I - lam (Sigma0^{-1} +
    lam)^{-1}) h``; both forms stay valid when ``lam`` is singular (e.g. no click ever moved
    the sum of the persona indicators).

    Args:
        lam: Likelihood precision ``(d, d)``.
        h: Likelihood information vector ``(d,)``.
        prior_prec: ``Sigma0^{-1}`` ``(d, d)``, the within-population precision.
        post_cov: ``(Sigma0^{-1} + lam)^{-1}`` if already known (saves an inversion).

    Returns:
        ``(P (d, d), p (d,))``: precision and information contributed to the mean's posterior.
    """
    if post_cov is None:
        post_cov = np.linalg.inv(prior_prec + lam)
    lam_cov = lam.dot(post_cov)
    prec = lam - lam_cov.dot(lam)
    info = h - lam_cov.dot(h)
    return 0.5 * (prec + prec.T), info


def gaussian_sample(
    rng: np.random.Generator, mean: np.ndarray, cov: np.ndarray, scale: float = 1.0
) -> np.ndarray:
    """One draw from ``N(mean, scale^2 cov)`` (``cov`` symmetrized, jittered for Cholesky)."""
    d = mean.size
    chol = np.linalg.cholesky(0.5 * (cov + cov.T) + cholesky_jitter(d))
    return mean + scale * chol.dot(rng.standard_normal(d))


class UserLaplacePolicy(Policy):
    """Base of the per-user contextual baselines: a fresh Laplace posterior for every user.

    The belief ``N(mu, Sigma)`` over the user's theta starts at ``N(0, prior_var I)`` at each
    arrival and takes the one-click Laplace step of
    `prefduel.policies.laplace.laplace_step` after every click on
    ``z = phi_first - phi_second``. Subclasses implement `_choose`.

    Args:
        prior_var: Variance of the isotropic zero-mean prior on theta (logit units).
    """

    name = "user-laplace"
    SETTINGS: ClassVar[dict[str, Any]] = {"prior_var": Positive}

    def __init__(self, prior_var: float = 1.0) -> None:
        self.configure(prior_var=prior_var)

    def reset(self, rng: np.random.Generator, context: dict[str, Any]) -> None:
        super().reset(rng, context)
        self.belief = self._fresh_belief()
        self._last: np.ndarray | None = None

    def _fresh_belief(self) -> LaplaceBelief:
        return LaplaceBelief.isotropic(self.d, self.prior_var)

    def start_student(self) -> None:
        self.belief = self._fresh_belief()
        self._last = None

    def select(self, Phi: np.ndarray) -> tuple[int, int]:
        phi = np.asarray(Phi, dtype=float)
        i, j = self._choose(phi)
        self._last = phi[i] - phi[j]
        return int(i), int(j)

    def _choose(self, Phi: np.ndarray) -> tuple[int, int]:
        raise NotImplementedError

    def update(self, outcome: int) -> None:
        if self._last is None:
            raise RuntimeError(f"{self.name}: update() called before select()")
        self.belief.observe(self._last, int(outcome))
        self._last = None
