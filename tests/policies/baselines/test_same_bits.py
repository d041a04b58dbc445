"""The baselines' cheaper forms of their per-round arithmetic against the forms they replaced:
the same numbers to the bit (the leaderboard's rows must not move)."""

from __future__ import annotations

import numpy as np
import pytest

from prefduel.core import jit
from prefduel.core.btl import top_two
from prefduel.policies import load_policy
from prefduel.policies.base import policy_context
from prefduel.policies.baselines._common import argmax_pair, argmax_pair_inplace, pair_widths
from prefduel.policies.baselines.coldb import fold_components
from prefduel.policies.baselines.conucb import key_term_credit, key_term_spread
from prefduel.policies.baselines.linear_duel import maxinp_candidates, maxinp_pair, maxpair_scores
from prefduel.policies.baselines.rucb import RUCB
from prefduel.policies.laplace import cholesky_jitter
from prefduel.policies.linear import top_pair


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def _cases(seed: int, n: int = 60):
    """Features ``(6, 7)`` with repeated rows (zero widths), means and covariances."""
    rng = np.random.default_rng(seed)
    for case in range(n):
        phi = np.hstack([np.eye(6), rng.normal(size=(6, 1))])
        if case % 4 == 0:
            phi[3] = phi[1]  # a zero-width pair: rounding can make its square negative
        a = rng.normal(size=(7, 7))
        sigma = (10.0 ** rng.uniform(-3, 1)) * (a @ a.T / 7 + 0.01 * np.eye(7))
        yield phi, rng.normal(size=7), sigma


def _old_pair_widths(Phi, sigma):
    a = Phi @ sigma @ Phi.T
    diag = np.diag(a)
    sq = diag[:, None] + diag[None, :] - 2.0 * a
    return np.sqrt(np.maximum(sq, 0.0))


def _old_argmax_pair(scores):
    masked = scores.copy()
    np.fill_diagonal(masked, -np.inf)
    flat = int(np.argmax(masked))
    k = scores.shape[0]
    return flat // k, flat % k


def test_pair_widths_and_scores_are_the_out_of_place_formulas():
    for phi, mu, sigma in _cases(0):
        assert _same(pair_widths(phi, sigma), _old_pair_widths(phi, sigma))
        util = phi @ mu
        old = util[:, None] + util[None, :] + 0.7 * _old_pair_widths(phi, sigma)
        assert _same(maxpair_scores(phi, mu, sigma, 0.7), old)


def test_argmax_pair_in_place_is_the_copying_one():
    rng = np.random.default_rng(1)
    for case in range(200):
        scores = rng.normal(size=(6, 6))
        if case % 3 == 0:
            scores[2, 4] = scores[4, 2] = scores.max() + 1.0  # a tie: the first in C order
        want = _old_argmax_pair(scores)
        assert argmax_pair(scores) == want
        scratch = scores.copy()
        assert argmax_pair_inplace(scratch) == want
        assert np.all(np.diag(scratch) == -np.inf)


@pytest.mark.parametrize("subtract", [False, True])
def test_folding_components_is_numpys_loop_of_in_place_sums(subtract):
    rng = np.random.default_rng(2)
    rows = rng.normal(size=(50, 7, 7)) * 10.0 ** rng.integers(-8, 8, size=(50, 1, 1))
    h_rows = rng.normal(size=(50, 7)) * 10.0 ** rng.integers(-8, 8, size=(50, 1))
    rows[3], h_rows[3] = -0.0, -0.0  # signed zeros stay as numpy leaves them
    for order in ([3], [5, 3, 17, 49, 0], list(rng.permutation(50))):
        prec, info = rng.normal(size=(7, 7)), rng.normal(size=7)
        prec[0, 0], info[0] = -0.0, -0.0
        want_prec, want_info = prec.copy(), info.copy()
        for c in order:
            if subtract:
                want_prec -= rows[c]
                want_info -= h_rows[c]
            else:
                want_prec += rows[c]
                want_info += h_rows[c]
        fold_components(prec, info, rows, h_rows, np.array(order, dtype=np.int64), subtract)
        assert _same(prec, want_prec) and _same(info, want_info)


def _drive_coldb(spec: str, seed: int) -> tuple[list[tuple[int, int]], np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n, s, k, d = 12, 10, 6, 7
    phis = np.zeros((n, s, k, d))
    phis[..., :k] = np.eye(k)
    phis[..., k] = rng.normal(size=(n, s, k))
    thetas = rng.normal(size=(n, d))
    policy = load_policy(spec)
    policy.reset(np.random.default_rng(seed + 1), policy_context(n, s, k, d))
    pairs = []
    for u in range(n):
        policy.start_student()
        for r in range(s):
            i, j = policy.select(phis[u, r])
            pairs.append((i, j))
            z = phis[u, r, i] - phis[u, r, j]
            policy.update(int(rng.random() < 1 / (1 + np.exp(-thetas[u] @ z))))
        policy.end_student()
    return pairs, policy.cluster.mu, policy.cluster.sigma


@pytest.mark.parametrize("spec", ["coldb", "coldb-paper", "coldb:threshold=0.2"])
def test_coldb_folds_components_as_its_numpy_loop_does(spec, monkeypatch):
    """The compiled fold and the numpy loop it replaced drive COLDB to the same bits (only
    the fold is switched: the Laplace updates stay compiled)."""
    if not jit.ENABLED:
        pytest.skip("numba is not installed")
    want = _drive_coldb(spec, 3)
    monkeypatch.setattr(
        "prefduel.policies.baselines.coldb.COLDB._fold", _numpy_fold, raising=True
    )
    got = _drive_coldb(spec, 3)
    assert got[0] == want[0]
    assert _same(got[1], want[1]) and _same(got[2], want[2])


def _numpy_fold(self, prec, info, comps, subtract):
    for c in comps:
        if subtract:
            prec -= self.comp_lam[c]
            info -= self.comp_h[c]
        else:
            prec += self.comp_lam[c]
            info += self.comp_h[c]


def test_key_term_credit_is_the_mean_of_its_terms():
    rng = np.random.default_rng(4)
    for phi, _, sigma in _cases(5, 40):
        centred = phi - phi.mean(axis=0)
        m_inv, key_inv = sigma, np.linalg.inv(sigma + np.eye(7))
        for m in (1, 2, 6):
            directions = rng.normal(size=(m, 7))
            reach = centred @ m_inv @ key_inv @ directions.T
            spread = 1.0 + np.einsum("md,de,me->m", directions, key_inv, directions)
            want = float(np.mean((reach * reach).sum(axis=0) / spread))
            assert key_term_credit(centred, m_inv, key_inv, directions) == want
            kept = key_term_spread(key_inv, directions)
            carried = centred @ m_inv @ key_inv
            assert key_term_credit(centred, m_inv, key_inv, directions, carried, kept) == want


def test_top_pair_is_the_sorted_top_two():
    rng = np.random.default_rng(6)
    rows = [rng.normal(size=6) for _ in range(300)]
    rows += [rng.integers(-2, 3, size=6).astype(float) for _ in range(300)]  # many ties
    inf, nan = np.inf, np.nan
    rows += [
        np.array([3.0, -inf, -inf]),
        np.array([-inf, -inf, 3.0]),
        np.array([-inf, -inf, -inf]),
        np.array([inf, 1.0, inf]),
        np.array([0.0, -0.0, -1.0]),
        np.array([-0.0, 0.0, -1.0]),
        np.array([1.0, nan, 2.0]),
        np.array([nan, nan, 0.0]),
    ]
    for row in rows:
        best, second = top_two(row)
        assert top_pair(row) == (int(best), int(second)), row


def test_the_kept_cholesky_jitter_is_the_one_made_each_round():
    for d in (1, 4, 7):
        assert _same(cholesky_jitter(d), 1e-12 * np.eye(d))
        assert not cholesky_jitter(d).flags.writeable


class _OldRUCB(RUCB):
    """RUCB's selection as first written (a candidate test per persona, np.argmax)."""

    def select(self, Phi):
        k = self.K
        u = self.ucb_matrix()
        cands = [c for c in range(k) if bool(np.all(u[c] >= 0.5))]
        if not cands:
            c = int(self.rng.integers(k))
        else:
            self.best &= set(cands)
            if len(cands) == 1:
                self.best = {cands[0]}
                c = cands[0]
            else:
                probs = np.empty(len(cands))
                n_best = len(self.best)
                rest = len(cands) - n_best
                for a, cand in enumerate(cands):
                    probs[a] = 0.5 if cand in self.best else 1.0 / (2.0**n_best * rest)
                c = cands[int(self.rng.choice(len(cands), p=probs / probs.sum()))]
        col = u[:, c] + 1e-12 * self.rng.random(k)
        col[c] = -np.inf
        d = int(np.argmax(col))
        self._last = (c, d)
        return c, d


@pytest.mark.parametrize("alpha", [0.1, 0.51, 2.0])
def test_rucb_selects_as_first_written(alpha):
    rng = np.random.default_rng(7)
    strength = rng.normal(size=6)
    new, old = RUCB(alpha=alpha), _OldRUCB(alpha=alpha)
    for policy in (new, old):
        policy.reset(np.random.default_rng(8), policy_context(20, 30, 6, 7))
    phi = np.zeros((6, 7))
    for _ in range(600):
        pair = new.select(phi)
        assert old.select(phi) == pair
        outcome = int(rng.random() < 1 / (1 + np.exp(strength[pair[1]] - strength[pair[0]])))
        new.update(outcome)
        old.update(outcome)
    assert _same(new.ucb_matrix(), old.ucb_matrix())


def _old_maxinp_pair(Phi, mu, sigma, beta, util_jitter):
    widths = _old_pair_widths(Phi, sigma)
    util = Phi @ mu
    cand = np.all(util[:, None] - util[None, :] + beta * widths >= 0.0, axis=1)
    util = util + util_jitter
    if cand.sum() >= 2:
        width = widths + util_jitter[:, None] + util_jitter[None, :]
        width[~cand, :] = -np.inf
        width[:, ~cand] = -np.inf
        return _old_argmax_pair(width)
    i = int(np.argmax(np.where(cand, util, -np.inf)))
    rest = util.copy()
    rest[i] = -np.inf
    return i, int(np.argmax(rest))


def test_maxinp_pair_is_the_out_of_place_rule():
    rng = np.random.default_rng(9)
    lone = 0
    for phi, mu, sigma in _cases(10, 200):
        jitter = 1e-9 * rng.random(6)
        for beta in (0.0, 0.25, 3.0):
            want = _old_maxinp_pair(phi, 3 * mu, sigma, beta, jitter)
            assert maxinp_pair(phi, 3 * mu, sigma, beta, jitter) == want
            lone += int(maxinp_candidates(phi, 3 * mu, sigma, beta).sum() == 1)
    assert lone > 20  # both branches are exercised


def test_a_stack_is_inverted_one_matrix_at_a_time():
    """What lets hier-ts-eb keep last arrival's inverses: each matrix of a stack has the
    bits it has inverted alone or in any other stack."""
    rng = np.random.default_rng(11)
    a = rng.normal(size=(40, 7, 7))
    stack = a @ a.transpose(0, 2, 1) + 0.1 * np.eye(7)
    whole = np.linalg.inv(stack)
    for k in range(40):
        assert _same(whole[k], np.linalg.inv(stack[k]))
    assert _same(whole[17:], np.linalg.inv(stack[17:]))


def _full_inverses(self, lams):
    return np.linalg.inv(self.prior_prec[None] + lams)


@pytest.mark.parametrize("spec", ["hier-ts-eb", "hier-ts-eb:eb_users=2,rule=ts"])
def test_hier_ts_eb_keeps_the_inverses_a_full_refit_makes(spec, monkeypatch):
    rng = np.random.default_rng(12)
    n, s, k, d = 30, 8, 6, 7
    phis = np.zeros((n, s, k, d))
    phis[..., :k] = np.eye(k)
    phis[..., k] = rng.normal(size=(n, s, k))
    thetas = rng.normal(size=(n, d))

    def run():
        policy = load_policy(spec)
        policy.reset(np.random.default_rng(13), policy_context(n // 2, s, k, d))  # grows
        clicks = np.random.default_rng(14)
        pairs = []
        for u in range(n):
            policy.start_student()
            for r in range(s):
                i, j = policy.select(phis[u, r])
                pairs.append((i, j))
                z = phis[u, r, i] - phis[u, r, j]
                policy.update(int(clicks.random() < 1 / (1 + np.exp(-thetas[u] @ z))))
            policy.end_student()
        return pairs, policy.prior_cov, policy.meta_prec, policy.meta_info

    want = run()
    monkeypatch.setattr(
        "prefduel.policies.baselines.hier_eb.HierTSEB._posterior_covariances", _full_inverses
    )
    got = run()
    assert got[0] == want[0]
    assert all(_same(a, b) for a, b in zip(got[1:], want[1:], strict=True))


def test_dot_is_matmul_on_the_products_the_baselines_take():
    """``a.dot(b)`` replaces ``a @ b`` in the baselines' per-round products: the same BLAS
    call, so the same bits, for every shape and layout they use (read-only features
    included)."""
    rng = np.random.default_rng(15)
    for case in range(2000):
        scale = 10.0 ** rng.integers(-6, 6)
        phi = rng.normal(size=(6, 7)) * scale
        phi.flags.writeable = case % 2 == 0
        a = rng.normal(size=(7, 7)) * 10.0 ** rng.integers(-6, 6)
        sym = a @ a.T
        chol = np.linalg.cholesky(sym + np.eye(7))
        x = rng.normal(size=7) * 10.0 ** rng.integers(-6, 6)
        assert _same(phi.dot(sym).dot(phi.T), phi @ sym @ phi.T)
        assert _same(phi.dot(x), phi @ x)
        assert _same(a.dot(sym), a @ sym)
        assert _same(a.dot(sym).dot(a), a @ sym @ a)
        assert _same(a.dot(x), a @ x)
        assert _same(chol.dot(x), chol @ x)
