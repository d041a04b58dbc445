"""CODuel's incremental EM: its sums equal a recomputation, with every user refreshed it is the
full refit, a full pass is one iteration of `Population.fit`, deaths keep the terms
consistent, the full passes follow a schedule whose cost per session is bounded, and runs are
deterministic."""

from __future__ import annotations

import numpy as np
import pytest

from prefduel.core import jit
from prefduel.policies import load_policy
from prefduel.policies.coduel.incremental import (
    IncrementalEM,
    full_pass_points,
    next_full_pass,
    store_terms,
    store_terms_numpy,
    user_terms,
)
from prefduel.policies.coduel.population import Population, component_evidence
from prefduel.runner.cell import play
from prefduel.worlds import get_world
from prefduel.worlds.world import World

D = 7
K = 6


def _two_clusters(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Likelihood summaries ``(n, d, d)``, ``(n, d)`` of users from two far clusters."""
    rng = np.random.default_rng(seed)
    u = np.r_[np.ones(K) / np.sqrt(K), 0.0]
    q = np.eye(D) - np.outer(u, u)
    centers = [q @ rng.normal(size=D) * 2.5, q @ rng.normal(size=D) * 2.5]
    lam, h = [], []
    for i in range(n):
        theta = centers[i % 2] + 0.3 * q @ rng.normal(size=D)
        a = q @ rng.normal(size=(D, 12))
        li = 0.6 * a @ a.T  # information orthogonal to u, as every click's
        lam.append(li)
        h.append(li @ theta + q @ rng.normal(size=D))
    return np.stack(lam), np.stack(h)


def _population(death: float = 1.5) -> Population:
    return Population(D, K, death=death)


def _feed_both(n: int, chunk: int, death: float, seed: int = 0):
    """The same sessions into a full-refit population and an incrementally fitted one."""
    lam, h = _two_clusters(seed, n)
    full, inc_pop = _population(death), _population(death)
    inc = IncrementalEM(inc_pop, chunk)
    for i in range(1, n + 1):
        full.add_session(lam[i - 1], h[i - 1], lam[:i], h[:i], 1)
        inc.add_session(lam[:i], h[:i])
        yield i, full, inc, lam[:i], h[:i]


def test_sums_equal_a_recomputation_from_the_stored_terms():
    """After every session the running sums (updated by subtracting and adding users' terms)
    equal the sums of the stored terms to 1e-9 relative, and the counts sum to n."""
    for n, _, inc, _, _ in _feed_both(60, chunk=7, death=1.5):
        w, s1, s2 = inc.w_sum.copy(), inc.s1_sum.copy(), inc.s2_sum.copy()
        inc.resum()
        np.testing.assert_allclose(w, inc.w_sum, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(s1, inc.s1_sum, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(s2, inc.s2_sum, rtol=1e-9, atol=1e-9)
        assert inc.pop.counts.sum() == pytest.approx(n, abs=1e-6 * n)
        free = sorted(set(range(inc.r.shape[1])) - set(inc.slots))
        assert not inc.r[:n, free].any() and not inc.s2[:n, free].any()  # freed slots are empty


def test_stored_terms_are_a_fresh_e_step_of_each_refreshed_user():
    lam, h = _two_clusters(3, 30)
    pop = _population(death=0.0)
    inc = IncrementalEM(pop, chunk=4)
    for i in range(1, 31):
        inc.add_session(lam[:i], h[:i])
    users = np.array([0, 5, 29])
    inc.refresh(users, lam[users], h[users])
    loglik, m, second = component_evidence(lam[users], h[users], pop.mu, pop.cov)
    logr = loglik + np.log(pop.weights())
    r = np.exp(logr - logr.max(axis=1, keepdims=True))
    r /= r.sum(axis=1, keepdims=True)
    slots = np.asarray(inc.slots)
    np.testing.assert_allclose(inc.r[users][:, slots], r, atol=1e-12)
    expect_s1 = r[:, 1:, None] * m[:, 1:]
    expect_s2 = r[:, 1:, None, None] * second[:, 1:]
    np.testing.assert_allclose(inc.s1[users][:, slots[1:]], expect_s1, atol=1e-10)
    np.testing.assert_allclose(inc.s2[users][:, slots[1:]], expect_s2, atol=1e-10)


def test_refreshing_every_user_each_session_is_the_full_refit():
    """With ``chunk`` >= n and no deaths, every session's E-step covers all users under the
    same components as `Population.add_session` with one EM iteration: the fits agree to
    rounding, session after session (births included)."""
    births = 0
    for _, full, inc, _, _ in _feed_both(50, chunk=10_000, death=0.0):
        pop = inc.pop
        assert pop.n_learned == full.n_learned
        np.testing.assert_allclose(pop.mu, full.mu, atol=1e-8)
        np.testing.assert_allclose(pop.cov, full.cov, atol=1e-8)
        np.testing.assert_allclose(pop.counts, full.counts, atol=1e-8)
        births = pop.n_learned
    assert births >= 2


def test_a_full_pass_is_one_iteration_of_the_full_refit():
    """From the same state (stale terms from a small chunk), ``full_pass(1)`` equals
    `Population.fit` with one iteration: the E-step of every user, then the M-step."""
    lam, h = _two_clusters(5, 80)
    pop = _population(death=0.0)
    inc = IncrementalEM(pop, chunk=3)
    for i in range(1, 81):
        inc.add_session(lam[:i], h[:i])
    ref = _population(death=0.0)
    ref.mu, ref.cov, ref.counts = pop.mu.copy(), pop.cov.copy(), pop.counts.copy()
    ref.born, ref.n_sessions = list(pop.born), pop.n_sessions
    ref.fit(lam, h, 1)
    inc.full_pass(lam, h, 1)
    np.testing.assert_allclose(pop.mu, ref.mu, atol=1e-9)
    np.testing.assert_allclose(pop.cov, ref.cov, atol=1e-9)
    np.testing.assert_allclose(pop.counts, ref.counts, atol=1e-9)


def test_the_full_pass_batches_cover_every_user(monkeypatch):
    import prefduel.policies.coduel.incremental as incremental

    monkeypatch.setattr(incremental, "FULL_PASS_BATCH", 7)  # 80 users: 12 batches
    test_a_full_pass_is_one_iteration_of_the_full_refit()


def test_a_death_drops_the_terms_and_refreshes_the_users_it_held():
    lam, h = _two_clusters(11, 40)
    pop = _population(death=1.5)
    inc = IncrementalEM(pop, chunk=5)
    for i in range(1, 41):
        inc.add_session(lam[:i], h[:i])
    # plant a component far from everyone, born long ago: the next M-step's deaths remove it
    far = np.r_[np.full(K, 0.0), 0.0]
    far[0], far[1] = 40.0, -40.0
    pop.mu = np.vstack([pop.mu, far])
    pop.cov = np.concatenate([pop.cov, 0.01 * np.eye(D)[None]])
    pop.counts = np.r_[pop.counts, 0.0]
    pop.born.append(0)
    inc.slots.append(inc._free_slot())
    slot = inc.slots[-1]
    inc.deaths(lam, h)
    assert pop.n_learned == len(inc.slots) - 1 and slot not in inc.slots
    assert not inc.r[:40, slot].any()
    assert pop.counts.sum() == pytest.approx(40, abs=1e-6)


def test_numpy_and_compiled_e_step_terms_agree():
    if not jit.ENABLED:
        pytest.skip("numba is not installed")
    lam, h = _two_clusters(2, 25)
    rng = np.random.default_rng(4)
    mu = rng.normal(size=(4, D))
    a = rng.normal(size=(4, D, D))
    cov = a @ np.swapaxes(a, 1, 2) / D + 0.1 * np.eye(D)
    compiled = user_terms(lam, h, mu, cov, 1.0)
    jit.ENABLED = False
    try:
        plain = user_terms(lam, h, mu, cov, 1.0)
    finally:
        jit.ENABLED = True
    for x, y in zip(compiled, plain, strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-10, atol=1e-10)


# ------------------------------------------------------------------------ the schedule


def test_full_pass_schedule_gaps_grow_with_n():
    assert full_pass_points(20, 10, 0.0, 60) == [20, 30, 40, 50, 60]  # the fixed schedule
    points = full_pass_points(20, 10, 0.1, 5_000)
    assert points[:9] == [20, 30, 40, 50, 60, 70, 80, 90, 100]  # recal_every while larger
    gaps = np.diff(points)
    assert np.all(gaps == np.maximum(10, np.ceil(0.1 * np.array(points[:-1]))))
    assert next_full_pass(10_000, 10, 0.1) == 11_000


@pytest.mark.parametrize("growth", [0.1, 0.5])
def test_the_full_passes_revisit_a_bounded_number_of_users_per_session(growth):
    """Up to N sessions the full passes revisit at most (1 + 1/growth) N users in all plus the
    first gap's worth: a bounded cost per session, for any N."""
    for n_max in (1_000, 10_000, 1_000_000):
        points = full_pass_points(20, 10, growth, n_max)
        assert sum(points) <= (1 + 1 / growth) * n_max + 10 * 20
        assert len(points) <= 20 + np.log(n_max) / np.log(1 + growth) + 1


def _cut(world: World, n: int) -> World:
    fields = ("Phi", "U", "P", "u", "student_index", "question_index")
    return World(
        roster=world.roster,
        seed=world.seed,
        students=world.students,
        questions=world.questions,
        personas=world.personas,
        info=world.info,
        **{name: getattr(world, name)[:n] for name in fields},
    )


@pytest.fixture(scope="module")
def small_world() -> World:
    return _cut(get_world("dev", 0), 40)


def test_a_run_does_full_passes_on_the_schedule_and_chunks_in_between(small_world):
    spec = "coduel:recal_first=5,recal_every=4,recal_growth=0.5,em_chunk=6"
    policy = load_policy(spec)
    play(small_world, policy, np.random.default_rng(0))
    points = full_pass_points(5, 4, 0.5, 40)
    assert policy.full_passes == points == [5, 9, 14, 21, 32]
    state = policy.em_state
    per_session = sum(min(6, n - 1) + 1 for n in range(1, 41))
    passes = sum(n * 10 for n in points)  # 10 EM iterations after a recalibration refit
    assert state.refreshed - state.death_refreshed <= per_session + passes
    # the summaries the population was fitted to are those of the current features
    np.testing.assert_allclose(policy.lam, policy._summaries(range(40))[0], atol=1e-9)


@pytest.mark.parametrize("spec", ["coduel", "coduel:em=full", "coduel:em_chunk=3,gate=off"])
def test_runs_are_deterministic(small_world, spec):
    a = play(small_world, load_policy(spec), np.random.default_rng(3))
    reused = load_policy(spec)
    play(small_world, reused, np.random.default_rng(8))
    b = play(small_world, reused, np.random.default_rng(3))
    np.testing.assert_array_equal(a.first, b.first)
    np.testing.assert_array_equal(a.second, b.second)
    np.testing.assert_array_equal(a.outcome, b.outcome)


def test_numpy_and_compiled_paths_play_the_same_pairs(small_world, monkeypatch):
    """The compiled kernels compute the numpy path's quantities (same roots, to rounding):
    on this world both show the same pairs in every round."""
    if not jit.ENABLED:
        pytest.skip("numba is not installed")
    spec = "coduel:gate=off"
    compiled = play(small_world, load_policy(spec), np.random.default_rng(1))
    monkeypatch.setattr(jit, "ENABLED", False)
    plain = play(small_world, load_policy(spec), np.random.default_rng(1))
    np.testing.assert_array_equal(compiled.first, plain.first)
    np.testing.assert_array_equal(compiled.second, plain.second)


@pytest.mark.skipif(not jit.ENABLED, reason="numba is not installed")
@pytest.mark.parametrize("update_sums", [True, False])
def test_compiled_bookkeeping_equals_numpy_to_the_bit(update_sums):
    """The stored terms and their sums, written by the compiled loop, are numpy's bit for bit
    (zero responsibilities make -0.0 products, whose sums numpy starts from 0.0)."""
    rng = np.random.default_rng(5)
    n, n_slots, d = 30, 6, 4
    store = [
        rng.normal(size=shape) for shape in ((n, n_slots), (n, n_slots, d), (n, n_slots, d, d))
    ]
    sums = [rng.normal(size=shape) for shape in ((n_slots,), (n_slots, d), (n_slots, d, d))]
    users, slots = np.array([7, 2, 19, 3]), np.array([0, 4, 1, 5])
    r = rng.dirichlet(np.ones(4), size=4)
    r[1, 2:] = 0.0
    m, second = rng.normal(size=(4, 3, d)), rng.normal(size=(4, 3, d, d))
    m[1] = -np.abs(m[1])
    fast = [a.copy() for a in (*store, *sums)]
    slow = [a.copy() for a in (*store, *sums)]
    store_terms(*fast, users, slots, r, m[:, :], second, update_sums)
    store_terms_numpy(*slow, users, slots, r, m, second, update_sums)
    for got, want in zip(fast, slow, strict=True):
        np.testing.assert_array_equal(got, want)
        assert np.array_equal(np.signbit(got), np.signbit(want))
