"""Incremental EM for CODuel's population: cost per session that does not grow with the users.

The full refit (`Population.fit`) revisits every completed user after every session, so a
session costs O(n) and a run O(N^2). Incremental EM (Neal & Hinton, 1998, "A view of the EM
algorithm that justifies incremental, sparse, and other variants") keeps each user's last
E-step, its responsibilities and its responsibility-weighted posterior moments, and their
sums over users, which are the M-step's sufficient statistics:

    W_c = sum_n r_nc,   S1_c = sum_n r_nc m_nc,   S2_c = sum_n r_nc (m_nc m_nc^T + P_nc)

(``m_nc``, ``P_nc``: user n's posterior mean and covariance under component c), from which
the extreme-deconvolution M-step is ``mu_c = S1_c / W_c``, ``Sigma_c = S2_c / W_c - mu_c mu_c^T``
(the same update as `Population.fit`'s). After each session only the new user and the next
``chunk`` earlier users (round robin) get a fresh E-step: their old terms are subtracted from
the sums and the new ones added, then one M-step follows. Every step does not decrease the
free energy that EM maximizes, as a full EM iteration does not.

A full pass (every user's E-step, the sums recomputed from the stored terms, ``iters`` times)
runs when every user's summary changes (after a recalibration refit) and at the policy's
full-pass schedule, whose gaps grow in proportion to n; its cost per session is therefore
bounded too. Deaths drop a component's terms; the users it held (responsibility > 1e-8) get a
fresh E-step under the survivors, the others lose at most 1e-8 of their weight.

Storage is by slot: ``max_components + 1`` columns, component i of the population in slot
``slots[i]``, so births and deaths do not copy the per-user arrays.
"""

from __future__ import annotations

import math

import numpy as np

from prefduel.core import jit
from prefduel.policies.coduel.population import Population, component_evidence

#: Users per batch in a full pass (bounds the memory of the batched E-step).
FULL_PASS_BATCH = 2048
#: A dying component's users with more responsibility than this get a fresh E-step.
DEATH_REFRESH = 1e-8


def next_full_pass(n: int, every: int, growth: float) -> int:
    """The session of the next full pass (and recalibration refit) after one at session
    ``n``: ``n + max(every, ceil(growth n))``. With ``growth > 0`` the passes up to N number
    O(log N) and revisit O(N (1 + 1 / growth)) users in all, a bounded cost per session."""
    return n + max(every, math.ceil(growth * n))


def full_pass_points(first: int, every: int, growth: float, upto: int) -> list[int]:
    """All full-pass sessions ``<= upto`` of the schedule starting at session ``first``."""
    points, n = [], first
    while n <= upto:
        points.append(n)
        n = next_full_pass(n, every, growth)
    return points


def user_terms(
    lam: np.ndarray, h: np.ndarray, mu: np.ndarray, cov: np.ndarray, prior_var: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """E-step terms of users under the isotropic component and learned ones.

    Args:
        lam: ``(n, d, d)``, h: ``(n, d)`` the users' likelihood summaries.
        mu: ``(C', d)``, cov: ``(C', d, d)`` the learned components.
        prior_var: Variance of the isotropic component (component 0).

    Returns:
        ``(loglik (n, 1 + C'), m (n, C', d), second (n, C', d, d))``: the log evidence of
        `component_evidence` (isotropic first), and under each learned component the posterior
        mean and ``m m^T + P`` (P the posterior covariance).
    """
    d = h.shape[1]
    mu_all = np.concatenate([np.zeros((1, d)), mu])
    cov_all = np.concatenate([prior_var * np.eye(d)[None], cov])
    loglik, m, second = component_evidence(lam, h, mu_all, cov_all)
    return loglik, m[:, 1:], second[:, 1:]


class IncrementalEM:
    """Per-user E-step terms and their sums for a `Population` (see the module docstring).

    Args:
        pop: The population whose components are fitted (its ``mu``, ``cov``, ``counts`` and
            ``born`` are updated in place).
        chunk: Earlier users refreshed after each session (round robin).
    """

    def __init__(self, pop: Population, chunk: int) -> None:
        self.pop = pop
        self.chunk = chunk
        d, n_slots = pop.d, pop.max_components + 1
        # slot of each component (component 0, the isotropic one: slot 0)
        self.slots = list(range(pop.mu.shape[0]))
        self.n = 0
        self.r = np.zeros((0, n_slots))
        self.s1 = np.zeros((0, n_slots, d))
        self.s2 = np.zeros((0, n_slots, d, d))
        self.w_sum = np.zeros(n_slots)
        self.s1_sum = np.zeros((n_slots, d))
        self.s2_sum = np.zeros((n_slots, d, d))
        self.cursor = 0
        self.refreshed = 0  # user E-steps done (for the cost bound), of which
        self.death_refreshed = 0  # those of users whose component died

    # -- per session ---------------------------------------------------------------------

    def add_session(self, all_lam: np.ndarray, all_h: np.ndarray) -> bool:
        """Account for the session of user ``n`` (the last row of ``all_lam``, ``all_h``):
        a birth if the seed's rule says so, the E-step of that user and of ``chunk`` earlier
        users, one M-step, deaths. Returns True if a component was born."""
        pop = self.pop
        n = all_lam.shape[0]
        self._grow(n)
        pop.n_sessions += 1
        born = pop.birth(all_lam[-1], all_h[-1])
        if born:
            self.slots.append(self._free_slot())
        if pop.n_learned == 0:
            pop.counts = np.array([float(n)])
            self.n = n
            self.r[n - 1] = 0.0
            self.r[n - 1, 0] = 1.0
            self.w_sum[0] += 1.0
            return born
        earlier = n - 1
        take = min(self.chunk, earlier)
        older = (self.cursor + np.arange(take)) % max(earlier, 1)
        self.cursor = int((self.cursor + take) % max(earlier, 1))
        users = np.r_[n - 1, older].astype(int)
        self.n = n
        self.refresh(users, all_lam[users], all_h[users])
        self.m_step()
        self.deaths(all_lam, all_h)
        return born

    def full_pass(self, all_lam: np.ndarray, all_h: np.ndarray, iters: int) -> None:
        """``iters`` full EM iterations over all ``n`` users (E-steps in batches of
        `FULL_PASS_BATCH`), each followed by the M-step from sums recomputed exactly from the
        stored terms, and deaths."""
        n = all_lam.shape[0]
        self._grow(n)
        self.n = n
        for _ in range(iters):
            if self.pop.n_learned == 0:
                self.pop.counts = np.array([float(n)])
                return
            for start in range(0, n, FULL_PASS_BATCH):
                users = np.arange(start, min(start + FULL_PASS_BATCH, n))
                self.refresh(users, all_lam[users], all_h[users], update_sums=False)
            self.resum()
            self.m_step()
            self.deaths(all_lam, all_h)

    # -- E-step, sums, M-step -------------------------------------------------------------

    def refresh(
        self, users: np.ndarray, lam: np.ndarray, h: np.ndarray, *, update_sums: bool = True
    ) -> None:
        """E-step of ``users`` under the current components; their stored terms are replaced
        (and the sums updated, unless ``update_sums`` is False: then call `resum`)."""
        pop = self.pop
        self.refreshed += len(users)
        loglik, m, second = user_terms(lam, h, pop.mu[1:], pop.cov[1:], pop.prior_var)
        logr = loglik + np.log(np.maximum(pop.weights(), 1e-300))
        logr -= logr.max(axis=1, keepdims=True)
        r = np.exp(logr)
        r /= r.sum(axis=1, keepdims=True)
        slots = np.asarray(self.slots, dtype=np.int64)
        args = (self.r, self.s1, self.s2, self.w_sum, self.s1_sum, self.s2_sum)
        store = store_terms if jit.ENABLED else store_terms_numpy
        store(*args, np.asarray(users, dtype=np.int64), slots, r, m, second, update_sums)

    def resum(self) -> None:
        """Recompute the sums from the stored terms of the ``n`` users (no rounding drift)."""
        n = self.n
        self.w_sum = self.r[:n].sum(axis=0)
        self.s1_sum = self.s1[:n].sum(axis=0)
        self.s2_sum = self.s2[:n].sum(axis=0)

    def m_step(self) -> None:
        """Components from the sums (`Population.component_moments`), and ``counts``."""
        pop = self.pop
        slots = np.asarray(self.slots)
        pop.counts = self.w_sum[slots].copy()
        learned = slots[1:]
        weight = self.w_sum[learned]
        ok = weight >= 1e-8  # components with no membership keep their parameters
        if not ok.any():
            return
        mean, cov = pop.component_moments(
            weight[ok], self.s1_sum[learned[ok]], self.s2_sum[learned[ok]]
        )
        index = 1 + np.flatnonzero(ok)
        pop.mu[index], pop.cov[index] = mean, cov

    def deaths(self, all_lam: np.ndarray, all_h: np.ndarray) -> None:
        """`Population`'s death rule; the dead components' terms are dropped and the users
        they held get a fresh E-step under the survivors."""
        pop = self.pop
        before = list(self.slots)
        if not pop._deaths():
            return
        kept = set(pop.kept)
        dead = [slot for i, slot in enumerate(before) if i not in kept]
        self.slots = [slot for i, slot in enumerate(before) if i in kept]
        n = self.n
        held = np.flatnonzero((self.r[:n, dead] > DEATH_REFRESH).any(axis=1))
        for slot in dead:
            self.r[:n, slot] = 0.0
            self.s1[:n, slot] = 0.0
            self.s2[:n, slot] = 0.0
        self.resum()
        if held.size:
            self.death_refreshed += held.size
            self.refresh(held, all_lam[held], all_h[held])
        pop.counts = self.w_sum[np.asarray(self.slots)].copy()

    # -- storage --------------------------------------------------------------------------

    def _free_slot(self) -> int:
        used = set(self.slots)
        return next(s for s in range(self.r.shape[1]) if s not in used)

    def _grow(self, n: int) -> None:
        """Room for ``n`` users (capacity doubles, so appends cost O(1) amortized)."""
        cap = self.r.shape[0]
        if n <= cap:
            return
        new = max(n, 2 * cap, 64)
        for name in ("r", "s1", "s2"):
            old = getattr(self, name)
            grown = np.zeros((new, *old.shape[1:]))
            grown[:cap] = old
            setattr(self, name, grown)


def store_terms_numpy(
    r_all: np.ndarray,
    s1: np.ndarray,
    s2: np.ndarray,
    w_sum: np.ndarray,
    s1_sum: np.ndarray,
    s2_sum: np.ndarray,
    users: np.ndarray,
    slots: np.ndarray,
    r: np.ndarray,
    m: np.ndarray,
    second: np.ndarray,
    update_sums: bool,
) -> None:
    """`store_terms` in numpy (the path without numba)."""
    rows, cols = users[:, None], slots[None, :]
    if update_sums:  # unused slots hold zeros for every user: only these columns change
        w_sum[slots] -= r_all[rows, cols].sum(axis=0)
        s1_sum[slots] -= s1[rows, cols].sum(axis=0)
        s2_sum[slots] -= s2[rows, cols].sum(axis=0)
    r_all[rows, cols] = r
    if slots.size > 1:
        rl = r[:, 1:]
        s1[rows, cols[:, 1:]] = rl[..., None] * m
        s2[rows, cols[:, 1:]] = rl[..., None, None] * second
    if update_sums:
        w_sum[slots] += r.sum(axis=0)
        s1_sum[slots] += s1[rows, cols].sum(axis=0)
        s2_sum[slots] += s2[rows, cols].sum(axis=0)


@jit.compiled()
def store_terms(
    r_all, s1, s2, w_sum, s1_sum, s2_sum, users, slots, r, m, second, update_sums
):  # pragma: no cover - compiled
    """`IncrementalEM.refresh`'s bookkeeping, in place: the stored terms of ``users`` in
    ``slots`` replaced by ``r (n_u, S')``, ``r m`` and ``r second`` (``m``, ``second``: the
    learned slots, ``slots[1:]``), and with ``update_sums`` the old terms subtracted from the
    sums and the new ones added. Sums over users are formed as numpy forms them, so the two
    paths agree to the bit (`store_terms_numpy`)."""
    n_u, n_s = r.shape
    d = s1.shape[2]
    if update_sums:
        _add_user_sums(r_all, s1, s2, w_sum, s1_sum, s2_sum, users, slots, -1.0)
    for a in range(n_u):
        u = users[a]
        for b in range(n_s):
            r_all[u, slots[b]] = r[a, b]
        for b in range(1, n_s):
            slot = slots[b]
            for i in range(d):
                s1[u, slot, i] = r[a, b] * m[a, b - 1, i]
                for j in range(d):
                    s2[u, slot, i, j] = r[a, b] * second[a, b - 1, i, j]
    if update_sums:
        _add_user_sums(r_all, s1, s2, w_sum, s1_sum, s2_sum, users, slots, 1.0)


@jit.compiled()
def _add_user_sums(r_all, s1, s2, w_sum, s1_sum, s2_sum, users, slots, sign):  # pragma: no cover
    """Add (``sign`` 1) or subtract (-1) the users' summed stored terms to the sums of
    ``slots``; each sum over users is formed first, from 0.0 in the users' order (numpy's
    order for these sums: a sum of -0.0 terms is 0.0)."""
    d = s1.shape[2]
    for slot in slots:
        total = 0.0
        for u in users:
            total += r_all[u, slot]
        w_sum[slot] += sign * total  # a + (-b) is a - b exactly
        for i in range(d):
            total = 0.0
            for u in users:
                total += s1[u, slot, i]
            s1_sum[slot, i] += sign * total
            for j in range(d):
                total = 0.0
                for u in users:
                    total += s2[u, slot, i, j]
                s2_sum[slot, i, j] += sign * total
