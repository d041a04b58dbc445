"""CODuel's population model: per-component posteriors and evidence, one EM iteration
(extreme deconvolution in information form) against a slow loop, births, deaths, the
isotropic floor, the cap, the unidentified direction, and recovery of two user clusters."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import multivariate_normal

from prefduel.core import jit
from prefduel.policies.coduel.population import (
    Population,
    component_evidence,
    unidentified_direction,
)

D = 7
K = 6
U = unidentified_direction(D, K)
Q = np.eye(D) - np.outer(U, U)  # projector on the identifiable subspace


def _sig(x):
    return 1.0 / (1.0 + np.exp(-x))


def _random_pd(rng, d=D, scale=1.0):
    a = rng.normal(size=(d, d))
    return scale * (a @ a.T / d + 0.3 * np.eye(d))


def _component_cov(rng, prior_var=1.0, scale=0.5):
    """A learned component's covariance: random on the identifiable subspace, prior_var on u."""
    return Q @ _random_pd(rng, scale=scale) @ Q + prior_var * np.outer(U, U)


def _click_z(rng):
    i, j = rng.choice(K, size=2, replace=False)
    z = np.zeros(D)
    z[i], z[j] = 1.0, -1.0
    z[K] = rng.normal()
    return z


def _summary(rng, theta, clicks=24, boost=4.0):
    """A user's likelihood summary: Lambda = boost x the Fisher information of ``clicks``
    random clicks at theta (orthogonal to u, as every click is), h = Lambda m_lik with
    m_lik ~ N(theta, Lambda^+) on Lambda's range."""
    lam = np.zeros((D, D))
    for _ in range(clicks):
        z = _click_z(rng)
        p = _sig(z @ theta)
        lam += p * (1 - p) * np.outer(z, z)
    lam = boost * 0.5 * (lam + lam.T)
    vals, vecs = np.linalg.eigh(lam)
    root = vecs @ np.diag(np.sqrt(np.clip(vals, 0, None))) @ vecs.T
    h = lam @ theta + root @ rng.normal(size=D)
    return lam, h


def _center(rng, norm=3.0):
    c = Q @ rng.normal(size=D)
    return norm * c / np.linalg.norm(c)


# -------------------------------------------------------------------- component_evidence


@pytest.mark.parametrize("compiled", [False, True], ids=["numpy", "kernel"])
def test_component_evidence_matches_dense_inverses_one_pair_at_a_time(compiled, monkeypatch):
    """Both paths (the kernel runs as plain Python without numba)."""
    monkeypatch.setattr(jit, "ENABLED", compiled)
    rng = np.random.default_rng(0)
    n, c = 5, 3
    lam = np.stack([_random_pd(rng, scale=2.0) for _ in range(n)])
    h = rng.normal(size=(n, D))
    mu = rng.normal(size=(c, D))
    cov = np.stack([_random_pd(rng, scale=0.8) for _ in range(c)])
    loglik, m, second = component_evidence(lam, h, mu, cov)
    assert m.shape == (n, c, D) and second.shape == (n, c, D, D) and loglik.shape == (n, c)
    for i in range(n):
        m_lik = np.linalg.solve(lam[i], h[i])
        ref_ll = []
        for k in range(c):
            prec = np.linalg.inv(cov[k])
            v = np.linalg.inv(prec + lam[i])
            np.testing.assert_allclose(second[i, k] - np.outer(m[i, k], m[i, k]), v, atol=1e-12)
            np.testing.assert_allclose(m[i, k], v @ (prec @ mu[k] + h[i]), atol=1e-10)
            # exp(h.t - t'Lam t/2) = const_i x N(m_lik; t, Lam^-1), so the evidence of
            # component k is const_i x N(m_lik; mu_k, V_k + Lam^-1)
            ref_ll.append(multivariate_normal(mu[k], cov[k] + np.linalg.inv(lam[i])).logpdf(m_lik))
        ref_ll = np.array(ref_ll)
        np.testing.assert_allclose(loglik[i] - loglik[i, 0], ref_ll - ref_ll[0], atol=1e-9)


@pytest.mark.parametrize("singular", [False, True])
def test_log_evidence_differences_equal_brute_force_integrals(singular):
    """d = 2: log of int N(t; mu_c, V_c) exp(h.t - t'Lam t / 2) dt by quadrature, also for a
    rank-one (improper) likelihood."""
    rng = np.random.default_rng(1 if singular else 2)
    if singular:
        v = np.array([1.0, -0.6])
        lam = 1.5 * np.outer(v, v)[None]
    else:
        lam = _random_pd(rng, d=2, scale=1.5)[None]
    h = np.array([[0.8, -0.4]])
    mu = np.array([[0.0, 0.0], [1.0, -0.5], [-0.7, 0.9]])
    cov = np.stack([np.eye(2), _random_pd(rng, d=2, scale=0.4), _random_pd(rng, d=2, scale=0.7)])
    loglik = component_evidence(lam, h, mu, cov)[0]
    exact = []
    for k in range(3):
        prior = multivariate_normal(mu[k], cov[k])
        sd = math.sqrt(cov[k].diagonal().max())
        lo_x, hi_x = mu[k, 0] - 12 * sd, mu[k, 0] + 12 * sd
        lo_y, hi_y = mu[k, 1] - 12 * sd, mu[k, 1] + 12 * sd

        # a fine tensor grid: the integrand is a smooth bump vanishing at the edges, so the
        # plain Riemann sum converges fast
        xs = np.linspace(lo_x, hi_x, 801)
        ys = np.linspace(lo_y, hi_y, 801)
        gx, gy = np.meshgrid(xs, ys, indexing="ij")
        pts = np.stack([gx, gy], axis=-1)
        vals = prior.pdf(pts) * np.exp(
            pts @ h[0] - 0.5 * np.einsum("...i,ij,...j->...", pts, lam[0], pts)
        )
        val = vals.sum() * (xs[1] - xs[0]) * (ys[1] - ys[0])
        exact.append(math.log(val))
    exact = np.array(exact)
    np.testing.assert_allclose(loglik[0] - loglik[0, 0], exact - exact[0], atol=1e-9)


# ------------------------------------------------------------------------------- EM step


def _slow_em_iteration(pop_mu, pop_cov, counts, n_sessions, alpha, prior_var, lam, h):
    """One extreme-deconvolution EM iteration by explicit loops (information-form data)."""
    n, c = lam.shape[0], pop_mu.shape[0]
    iso = max(alpha / (alpha + n_sessions), counts[0] / max(n_sessions, 1))
    weights = np.r_[iso, (1 - iso) * counts[1:] / counts[1:].sum()]
    post_m = np.zeros((n, c, D))
    post_v = np.zeros((n, c, D, D))
    logr = np.zeros((n, c))
    for i in range(n):
        for k in range(c):
            prec = np.linalg.inv(pop_cov[k])
            a = prec + lam[i]
            v = np.linalg.inv(a)
            b = prec @ pop_mu[k] + h[i]
            post_m[i, k] = v @ b
            post_v[i, k] = v
            log_ev = (
                0.5 * b @ v @ b
                - 0.5 * pop_mu[k] @ prec @ pop_mu[k]
                - 0.5 * np.linalg.slogdet(pop_cov[k])[1]
                - 0.5 * np.linalg.slogdet(a)[1]
            )
            logr[i, k] = math.log(weights[k]) + log_ev
    r = np.zeros((n, c))
    for i in range(n):
        top = logr[i].max()
        e = [math.exp(x - top) for x in logr[i]]
        r[i] = np.array(e) / sum(e)
    new_counts = r.sum(axis=0)
    new_mu, new_cov = pop_mu.copy(), pop_cov.copy()
    for k in range(1, c):
        mean = sum(r[i, k] * post_m[i, k] for i in range(n)) / new_counts[k]
        scatter = np.zeros((D, D))
        for i in range(n):
            dev = post_m[i, k] - mean
            scatter += r[i, k] * (np.outer(dev, dev) + post_v[i, k])
        cov = scatter / new_counts[k] + 1e-6 * np.eye(D)
        cov = 0.5 * (cov + cov.T)
        # the unidentified direction goes back to the isotropic prior
        new_mu[k] = Q @ mean
        new_cov[k] = Q @ cov @ Q + prior_var * np.outer(U, U)
    return new_mu, new_cov, new_counts


@pytest.mark.parametrize("likelihood", ["clicks", "generic"])
def test_one_em_iteration_matches_a_slow_loop(likelihood):
    """``generic``: positive definite Lambda with a component along u, so posterior means leave
    the identifiable subspace and only the projection brings them back."""
    rng = np.random.default_rng(10)
    n, prior_var, alpha = 14, 1.0, 20.0
    centers = [_center(rng), _center(rng), _center(rng, 1.5)]
    lam, h = [], []
    for i in range(n):
        theta = centers[i % 3] + 0.3 * Q @ rng.normal(size=D)
        if likelihood == "clicks":
            li, hi = _summary(rng, theta)
        else:
            li = _random_pd(rng, scale=3.0)
            hi = li @ theta + rng.normal(size=D)
        lam.append(li)
        h.append(hi)
    lam, h = np.stack(lam), np.stack(h)
    pop = Population(D, K, prior_var=prior_var, alpha=alpha, death=0.0)
    pop.mu = np.vstack([np.zeros(D)] + [Q @ (c + 0.5 * rng.normal(size=D)) for c in centers])
    pop.cov = np.stack([prior_var * np.eye(D)] + [_component_cov(rng) for _ in centers])
    pop.counts = np.array([2.0, 5.0, 4.0, 3.0])
    pop.born = [0, 0, 0, 0]
    pop.n_sessions = n
    ref_mu, ref_cov, ref_counts = _slow_em_iteration(
        pop.mu.copy(), pop.cov.copy(), pop.counts.copy(), n, alpha, prior_var, lam, h
    )
    pop.fit(lam, h, 1)
    assert pop.n_learned == 3
    np.testing.assert_allclose(pop.counts, ref_counts, atol=1e-9)
    np.testing.assert_allclose(pop.mu, ref_mu, atol=1e-9)
    np.testing.assert_allclose(pop.cov, ref_cov, atol=1e-10)  # catches a lost 1e-6 jitter
    np.testing.assert_array_equal(pop.mu[0], np.zeros(D))  # the isotropic component is fixed
    np.testing.assert_array_equal(pop.cov[0], prior_var * np.eye(D))
    assert pop.counts.sum() == pytest.approx(n)


# ----------------------------------------------------------------------- births and deaths


def _feed(pop, rng, thetas):
    """Add one session per theta; returns the list of ``born`` flags."""
    lam = list(getattr(pop, "_test_lam", []))
    h = list(getattr(pop, "_test_h", []))
    flags = []
    for theta in thetas:
        li, hi = _summary(rng, theta)
        lam.append(li)
        h.append(hi)
        flags.append(pop.add_session(li, hi, np.stack(lam), np.stack(h), 3))
    pop._test_lam, pop._test_h = lam, h
    return flags


def test_births_for_a_far_session_and_not_for_a_near_one():
    rng = np.random.default_rng(20)
    c1 = _center(rng)
    pop = Population(D, K)
    flags = _feed(pop, rng, [c1 + 0.2 * Q @ rng.normal(size=D) for _ in range(10)])
    assert flags[0]  # the first session always founds a component
    # (a newborn component is one user's posterior, so narrow that the next similar user can
    # found a second one; EM and deaths merge them within a few sessions)
    before = pop.n_learned
    assert before >= 1
    near = _feed(pop, rng, [c1 + 0.2 * Q @ rng.normal(size=D) for _ in range(5)])
    assert near == [False] * 5  # sessions near a learned component are explained by it
    far = -c1  # distance 6 from c1, 3 from the isotropic mean
    assert _feed(pop, rng, [far]) == [True]
    assert pop.n_learned == before + 1
    newborn = pop.mu[-1]
    assert pop.born[-1] == pop.n_sessions
    assert np.linalg.norm(newborn - far) < np.linalg.norm(newborn - c1)


def test_birth_rule_is_the_isotropic_evidence_against_every_learned_component():
    rng = np.random.default_rng(21)
    c1 = _center(rng)
    pop = Population(D, K)
    _feed(pop, rng, [c1 + 0.2 * Q @ rng.normal(size=D) for _ in range(5)])
    for theta in (c1, 0.5 * c1, np.zeros(D), -c1, Q @ rng.normal(size=D) * 2):
        li, hi = _summary(rng, theta)
        ll = component_evidence(li[None], hi[None], pop.mu, pop.cov)[0]
        expect = bool(ll[0, 0] >= ll[0, 1:].max())
        probe = Population(D, K)  # a copy of the state, so the probe does not change pop
        probe.mu, probe.cov, probe.counts = pop.mu.copy(), pop.cov.copy(), pop.counts.copy()
        probe.born, probe.n_sessions = list(pop.born), pop.n_sessions
        lam = np.stack([*pop._test_lam, li])
        h = np.stack([*pop._test_h, hi])
        assert probe.add_session(li, hi, lam, h, 1) == expect


def test_no_more_than_max_components():
    rng = np.random.default_rng(22)
    pop = Population(D, K, max_components=3, grace=50)
    flags = []
    for _ in range(12):  # every session from a new, far cluster
        flags += _feed(pop, rng, [_center(rng, 5.0)])
        assert pop.n_learned <= 3
        assert pop.mu.shape[0] == pop.cov.shape[0] == pop.counts.size == len(pop.born)
    assert pop.n_learned == 3  # the cap binds
    assert sum(flags) == 3


def test_deaths_after_grace_when_membership_is_low():
    rng = np.random.default_rng(23)
    c1 = _center(rng)
    thetas = [c1 + 0.2 * Q @ rng.normal(size=D) for _ in range(12)]
    summaries = [_summary(rng, t) for t in thetas]
    lam = np.stack([s[0] for s in summaries])
    h = np.stack([s[1] for s in summaries])

    def population(born_empty):
        pop = Population(D, K, death=1.5, grace=5)
        pop.mu = np.vstack([np.zeros(D), c1, -c1])  # component 2: nobody lives there
        pop.cov = np.stack([np.eye(D), _component_cov(rng, scale=0.1), _component_cov(rng, 0.1)])
        pop.counts = np.array([1.0, 10.0, 1.0])
        pop.born = [0, 0, born_empty]
        pop.n_sessions = 12
        return pop

    old = population(born_empty=3)  # 12 - 3 >= grace: may die
    old.fit(lam, h, 1)
    assert old.n_learned == 1
    np.testing.assert_allclose(old.mu[1], Q @ old.mu[1])
    assert np.linalg.norm(old.mu[1] - c1) < 0.5  # the supported component survives
    assert old.born == [0, 0]

    young = population(born_empty=10)  # 12 - 10 < grace: kept regardless
    young.fit(lam, h, 1)
    assert young.n_learned == 2
    assert young.counts[2] < 1.5  # it would have died without the grace period
    assert young.born == [0, 0, 10]


# ------------------------------------------------------- whole runs on two user clusters


@pytest.fixture(scope="module")
def two_cluster_run():
    rng = np.random.default_rng(30)
    c1 = _center(rng)
    c2 = _center(rng)
    while np.linalg.norm(c1 - c2) < 4.0:
        c2 = _center(rng)
    pop = Population(D, K, max_components=16)
    history = []
    for s in range(60):
        center = c1 if rng.random() < 0.5 else c2
        theta = center + 0.3 * Q @ rng.normal(size=D) + rng.normal() * U  # u: unidentified
        _feed(pop, rng, [theta])
        history.append(
            {
                "n": pop.n_sessions,
                "weights": pop.weights(),
                "n_learned": pop.n_learned,
                "mu": pop.mu.copy(),
                "cov": pop.cov.copy(),
                "session": s,
            }
        )
    return pop, (c1, c2), history


def test_isotropic_weight_floor_holds_at_all_times(two_cluster_run):
    pop, _, history = two_cluster_run
    for state in history:
        w = state["weights"]
        assert w.size == state["n_learned"] + 1
        assert np.all(w >= 0)
        assert w.sum() == pytest.approx(1.0)
        assert w[0] >= pop.alpha / (pop.alpha + state["n"]) - 1e-15
    assert history[-1]["n"] == 60
    assert history[-1]["weights"][0] < 0.5  # the learned components do take over


def test_unidentified_direction_stays_at_the_isotropic_prior(two_cluster_run):
    pop, _, history = two_cluster_run
    for state in history:
        for mu, cov in zip(state["mu"], state["cov"], strict=True):
            assert abs(mu @ U) < 1e-12
            assert U @ cov @ U == pytest.approx(pop.prior_var, abs=1e-12)
            np.testing.assert_allclose(cov @ U, pop.prior_var * U, atol=1e-12)
            assert np.linalg.eigvalsh(cov).min() > 0


def test_learned_components_find_the_two_clusters(two_cluster_run):
    pop, (c1, c2), _ = two_cluster_run
    w = pop.weights()
    assert w[1:].sum() > 0.6
    heavy = [c for c in range(1, pop.mu.shape[0]) if pop.counts[c] >= 5]
    assert heavy
    for c in heavy:  # every well-supported component sits on a cluster
        dist = min(np.linalg.norm(Q @ (pop.mu[c] - ctr)) for ctr in (c1, c2))
        assert dist < 0.6, (c, dist)
    for ctr in (c1, c2):  # and each cluster has one
        dist = min(np.linalg.norm(Q @ (pop.mu[c] - ctr)) for c in heavy)
        assert dist < 0.6, dist
    assert pop.counts[heavy].sum() > 45  # most users belong to those components


def test_unidentified_direction_helper():
    u = unidentified_direction(7, 6)
    np.testing.assert_allclose(u, np.r_[np.ones(6), 0.0] / math.sqrt(6))
    assert not unidentified_direction(5, 6).any()
    pop = Population(5, 6)  # generic features: nothing is projected
    mu, cov = pop._project(np.ones(5), 2 * np.eye(5))
    np.testing.assert_array_equal(mu, np.ones(5))
    np.testing.assert_array_equal(cov, 2 * np.eye(5))
