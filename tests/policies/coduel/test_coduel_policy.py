"""The CODuel policy: ablation specs, setting validation, the gate, the population switch,
the recalibration schedule and determinism, on a real dev world cut to a few arrivals."""

from __future__ import annotations

import math

import numpy as np
import pytest

from prefduel.core.btl import top_two
from prefduel.core.errors import SpecError
from prefduel.policies import check_policy, load_policy
from prefduel.policies.base import policy_context, validate_pair
from prefduel.policies.coduel.pair_rule import lookahead_pair
from prefduel.policies.coduel.recal import apply_recalibration
from prefduel.runner.cell import play
from prefduel.worlds import get_world
from prefduel.worlds.world import World

ABLATIONS = [
    "coduel",
    "coduel:population=off",
    "coduel:recal=off",
    "coduel:pair=greedy",
    "coduel:gate=off",
    "coduel:population=off,recal=off",
    "coduel:pair=greedy,gate=off",
    "coduel:recal=off,pair=greedy,gate=off",
    "coduel:gate=off,recal_first=2,recal_every=2,nmin=2",
    "coduel:nmin=2,z=0,recal_first=3,recal_every=1,components=2",
]


def _cut(world: World, n: int) -> World:
    return World(
        roster=world.roster,
        seed=world.seed,
        Phi=world.Phi[:n],
        U=world.U[:n],
        P=world.P[:n],
        u=world.u[:n],
        student_index=world.student_index[:n],
        question_index=world.question_index[:n],
        students=world.students,
        questions=world.questions,
        personas=world.personas,
        info=world.info,
    )


@pytest.fixture(scope="module")
def world() -> World:
    small = _cut(get_world("dev", 0), 30)
    small.validate()
    assert (small.N, small.S, small.K, small.d) == (30, 24, 6, 7)
    return small


def _drive(world, policy, seed, before=None, after_select=None, after_session=None):
    """Run ``policy`` on ``world`` like ``runner.cell.play`` with hooks; returns the pairs.

    ``before(policy, phi, jitter)`` sees the jitter the next ``select`` will draw (from a copy
    of the policy's generator); ``after_select(policy, phi, pair, expected)`` gets what
    ``before`` returned; ``after_session(policy, n)`` runs after each ``end_student``.
    """
    policy.reset(np.random.default_rng(seed), policy_context(world.N, world.S, world.K, world.d))
    pairs = []
    for n in range(world.N):
        policy.start_student()
        for s in range(world.S):
            phi = world.Phi[n, s].copy()
            phi.setflags(write=False)
            expected = None
            if before is not None:
                twin = np.random.default_rng()
                twin.bit_generator.state = policy.rng.bit_generator.state
                expected = before(policy, phi, 1e-9 * twin.random(world.K))
            i, j = validate_pair(policy.select(phi), world.K)
            if after_select is not None:
                after_select(policy, phi, (i, j), expected)
            lo, hi = min(i, j), max(i, j)
            y = int(world.u[n, s] < world.P[n, s, lo, hi])
            policy.update(1 - y if i > j else y)
            pairs.append((i, j))
        policy.end_student()
        if after_session is not None:
            after_session(policy, n + 1)
    return pairs


# --------------------------------------------------------------------- specs and settings


@pytest.mark.parametrize("spec", ABLATIONS)
def test_every_ablation_passes_check_policy(spec):
    check_policy(lambda: load_policy(spec))


@pytest.mark.parametrize("spec", ABLATIONS)
def test_every_ablation_runs_on_a_small_dev_world(world, spec):
    world = _cut(world, 21)  # includes the first recalibration (after 20 sessions)
    policy = load_policy(spec)
    traj = play(world, policy, np.random.default_rng(0), label=spec)
    assert traj.first.shape == (world.N, world.S)
    assert np.all(traj.first != traj.second)
    assert policy.n_sessions == world.N
    assert len(policy.llr) == world.N
    assert all(math.isfinite(x) for x in policy.llr)
    if policy.population:
        assert policy.pop.n_sessions == world.N
        assert policy.lam.shape == (world.N, world.d, world.d)
        assert policy.pop.n_learned <= policy.components


@pytest.mark.parametrize(
    "spec",
    [
        "coduel:pair=foo",
        "coduel:gate=maybe",
        "coduel:population=sometimes",
        "coduel:recal=2",
        "coduel:alpha=-1",
        "coduel:alpha=0",
        "coduel:components=-1",
        "coduel:bank=0",
        "coduel:z=high",
        "coduel:nmin=2.5",
        "coduel:nosuch=1",
    ],
)
def test_bad_settings_raise_spec_error(spec):
    with pytest.raises(SpecError):
        load_policy(spec)


def test_settings_are_parsed():
    policy = load_policy("coduel:population=off,recal=on,pair=greedy,gate=off,alpha=5,z=1.5")
    assert policy.population is False and policy.recal is True and policy.gate is False
    assert policy.pair == "greedy" and policy.alpha == 5.0 and policy.z == 1.5
    default = load_policy("coduel")
    assert (default.alpha, default.components, default.z, default.nmin) == (20.0, 16, 0.5, 8)
    assert (default.bank, default.ridge, default.recal_first, default.recal_every) == (
        16,
        10.0,
        20,
        10,
    )


# ------------------------------------------------------------------------------- the gate


def _expected_gate(policy):
    llr = np.asarray(policy.llr)
    n = llr.size
    if n < policy.nmin:
        return False
    return bool(llr.mean() > policy.z * llr.std(ddof=1) / math.sqrt(n))


def test_gate_decision_and_who_selects(world):
    """pair=greedy, so whoever selects shows its greedy pair: the no-transfer learner's while
    the gate is closed, the mixture belief's while it is open."""
    policy = load_policy("coduel:pair=greedy")
    log = {"closed": 0, "open": 0, "gates": []}

    def before(pol, phi, jitter):
        feats = apply_recalibration(phi, pol.matrix)
        if pol.gate_open:
            log["open"] += 1
            return top_two(feats @ pol.belief.mean() + jitter)
        log["closed"] += 1
        return top_two(feats @ pol.solo.mu + jitter)

    def after_select(pol, phi, pair, expected):
        assert pair == expected

    def after_session(pol, n):
        if n < pol.nmin:
            assert not pol.gate_open  # closed before nmin completed sessions
        assert len(pol.llr) == n
        assert pol.gate_open == _expected_gate(pol)
        log["gates"].append(pol.gate_open)

    _drive(world, policy, 0, before, after_select, after_session)
    assert log["open"] > 0 and log["closed"] > 0  # both regimes were exercised
    assert policy.transfer_rounds == log["open"]
    assert not any(log["gates"][: policy.nmin - 1])
    assert policy.llr[0] == pytest.approx(0.0, abs=1e-9)  # same prior, same predictions


def test_gate_decision_with_the_lookahead_rule(world):
    policy = load_policy("coduel")
    opened_rounds = []

    def before(pol, phi, jitter):
        return pol.gate_open, pol.transfer_rounds

    def after_select(pol, phi, pair, expected):
        was_open, count = expected
        assert pol.transfer_rounds == count + int(was_open)
        opened_rounds.append(was_open)

    def after_session(pol, n):
        assert pol.gate_open == _expected_gate(pol)

    _drive(world, policy, 0, before, after_select, after_session)
    assert any(opened_rounds) and not all(opened_rounds)
    assert not any(opened_rounds[: policy.nmin * world.S])


def test_gate_recomputation_for_other_thresholds(world):
    for spec in ("coduel:z=-5,nmin=3", "coduel:z=3,nmin=3", "coduel:z=0.25,nmin=3"):
        policy = load_policy(spec)
        gates = []

        def after_session(pol, n, gates=gates):
            assert pol.gate_open == (n >= 3 and _expected_gate(pol))
            gates.append(pol.gate_open)

        _drive(_cut(world, 14), policy, 1, after_session=after_session)
        if spec.startswith("coduel:z=-5"):
            assert gates == [False, False] + [True] * 12  # opens as soon as it may


def test_gate_rule_on_crafted_llr_lists():
    """The threshold uses the sample s.d. (ddof = 1): an llr list whose mean lies between
    z sd_0 / sqrt(n) and z sd_1 / sqrt(n) keeps the gate closed."""
    policy = load_policy("coduel")
    policy.reset(np.random.default_rng(0), policy_context(10, 24, 6, 7))
    n, z = 8, policy.z
    pattern = np.array([1.0, -1.0] * 4)
    sd0, sd1 = pattern.std(ddof=0), pattern.std(ddof=1)
    between = z * 0.5 * (sd0 + sd1) / math.sqrt(n)
    policy.llr = list(between + pattern)
    assert not policy._gate()
    policy.llr = list(z * 1.01 * sd1 / math.sqrt(n) + pattern)
    assert policy._gate()
    policy.llr = list(10.0 + pattern[: n - 1])  # a large gain, but fewer than nmin sessions
    assert not policy._gate()
    for spec, expect in (("coduel:gate=off", True), ("coduel:population=off", False)):
        other = load_policy(spec)
        other.reset(np.random.default_rng(0), policy_context(10, 24, 6, 7))
        other.llr = list(10.0 + pattern)
        assert other._gate() is expect


def test_closed_gate_plays_exactly_like_notransfer(world):
    """With recalibration off, a session that starts with the gate closed shows the pairs the
    no-transfer learner would (same generator draws, same isotropic prior)."""
    coduel = load_policy("coduel:recal=off")
    closed = []
    _drive(world, coduel, 0, before=lambda pol, phi, jit: closed.append(not pol.gate_open))
    coduel_pairs = play(world, load_policy("coduel:recal=off"), np.random.default_rng(0))
    reference = play(world, load_policy("notransfer"), np.random.default_rng(0))
    same = (coduel_pairs.first == reference.first) & (coduel_pairs.second == reference.second)
    closed = np.array(closed).reshape(world.N, world.S)
    assert closed[:, 0].sum() >= coduel.nmin
    assert not closed[:, 0].all()  # (with this seed the gate opens after session 13)
    assert np.all(same[closed[:, 0]])
    assert not np.all(same[~closed[:, 0]])  # the open-gate sessions differ


def test_transfer_uses_the_lookahead_over_a_bank_of_recent_questions(world):
    """gate=off, bank=5: every pair comes from the mixture belief; while it is undecided
    (max weight < 0.999) from the lookahead over the last 5 questions shown before this one
    (of any user), with the rounds left in the session; otherwise greedy on its mean."""
    policy = load_policy("coduel:gate=off,bank=5")
    recent = []
    log = {"lookahead": 0, "differs": 0, "t": 0}

    def before(pol, phi, jitter):
        feats = apply_recalibration(phi, pol.matrix)
        weights = pol.belief.weights
        greedy = top_two(feats @ pol.belief.mean() + jitter)
        remaining = world.S - pol.t - 1
        assert pol.t == log["t"] % world.S
        expected = greedy
        if remaining > 0 and weights.max() < 0.999 and recent:
            keep = weights > 1e-4
            expected, _ = lookahead_pair(
                weights[keep] / weights[keep].sum(),
                pol.belief.mu[keep],
                pol.belief.sigma[keep],
                feats,
                apply_recalibration(np.stack(recent[-5:]), pol.matrix),
                remaining,
                "decision",  # pair=kg, the default
            )
            log["lookahead"] += 1
            log["differs"] += set(expected) != set(greedy)
        recent.append(np.array(phi))
        log["t"] += 1
        return expected

    def after_select(pol, phi, pair, expected):
        assert pair == expected

    _drive(_cut(world, 12), policy, 0, before, after_select)
    assert log["lookahead"] > 50
    assert log["differs"] > 0  # the lookahead does not merely repeat greedy choices


# ------------------------------------------------------------------- population switched off


@pytest.mark.parametrize(
    "spec",
    ["coduel:population=off", "coduel:population=off,recal=off", "coduel:population=off,gate=off"],
)
def test_population_off_never_lets_the_population_learner_select(world, spec):
    policy = load_policy(spec)

    def after_session(pol, n):
        assert not pol.gate_open
        assert pol.transfer_rounds == 0
        assert pol.pop.n_learned == 0

    pairs = _drive(world, policy, 5, after_session=after_session)
    assert policy.transfer_rounds == 0
    if "recal=off" in spec:  # then it is the no-transfer learner, draw for draw
        reference = play(world, load_policy("notransfer"), np.random.default_rng(5))
        assert pairs == list(
            zip(reference.first.ravel().tolist(), reference.second.ravel().tolist(), strict=True)
        )


# --------------------------------------------------------------------------- recalibration


@pytest.mark.parametrize(
    ("spec", "n", "refits"),
    [
        ("coduel", 30, {20, 30}),
        ("coduel:recal_first=5,recal_every=3", 15, {5, 8, 11, 14}),
        ("coduel:recal_first=4,recal_every=4,population=off", 12, {4, 8, 12}),
    ],
)
def test_recalibration_schedule(world, spec, n, refits):
    policy = load_policy(spec)
    seen = []
    state = {"matrix": None}

    def after_session(pol, k):
        if k < min(refits):
            assert pol.matrix is None
        else:
            assert pol.matrix is not None and pol.matrix.shape == (world.K, world.K)
            assert np.all(np.isfinite(pol.matrix))
        if pol.matrix is not state["matrix"]:
            seen.append(k)
        state["matrix"] = pol.matrix
        if pol.population:  # the population is fitted to all users' summaries under A
            assert pol.pop.n_sessions == k
            assert pol.pop.counts.sum() == pytest.approx(k)
            np.testing.assert_allclose(pol.lam, pol._summaries(range(k))[0], atol=1e-9)

    def before(pol, phi, jitter):
        return apply_recalibration(phi, pol.matrix)

    def after_select(pol, phi, pair, feats):  # the learners see the recalibrated features
        np.testing.assert_allclose(pol._last[2], feats[pair[0]] - feats[pair[1]], atol=1e-12)

    _drive(_cut(world, n), policy, 0, before, after_select, after_session)
    assert set(seen) == refits


def test_recalibration_off_keeps_the_raw_features(world):
    policy = load_policy("coduel:recal=off,recal_first=2,recal_every=1")
    matrices = []
    _drive(_cut(world, 8), policy, 0, after_session=lambda pol, k: matrices.append(pol.matrix))
    assert matrices == [None] * 8


# ----------------------------------------------------------------------------- determinism


@pytest.mark.parametrize("spec", ["coduel", "coduel:gate=off"])
def test_the_same_seed_gives_identical_choices(world, spec):
    small = _cut(world, 14)
    a = play(small, load_policy(spec), np.random.default_rng(11))
    b = play(small, load_policy(spec), np.random.default_rng(11))
    np.testing.assert_array_equal(a.first, b.first)
    np.testing.assert_array_equal(a.second, b.second)
    reused = load_policy(spec)
    play(small, reused, np.random.default_rng(99))
    c = play(small, reused, np.random.default_rng(11))  # reset() rebuilds all state
    np.testing.assert_array_equal(a.first, c.first)
    np.testing.assert_array_equal(a.second, c.second)


@pytest.mark.parametrize("value", ["1", "0", "1.0", "yes"])
def test_switch_settings_accept_only_on_and_off(value):
    with pytest.raises(SpecError, match="gate: expected on or off"):
        load_policy(f"coduel:gate={value}")


def test_population_learns_on_other_feature_layouts():
    """With features that are not [e_p, g] (d != K + 1), recalibration is off but the population
    model still learns from the clicks as shown: two planted user types give learned
    components and the gate can open."""
    from prefduel.core.rng import stream

    rng = stream(3, "tests", "generic-layout")
    n, s, k, d = 60, 24, 6, 4
    phi = rng.normal(size=(n, s, k, d))
    types = np.array([[2.0, -2.0, 1.0, 0.0], [-2.0, 2.0, 0.0, 1.0]])
    theta = types[np.arange(n) % 2]
    policy = load_policy("coduel:pair=greedy")
    policy.reset(stream(3, "policy"), policy_context(n, s, k, d))
    for a in range(n):
        policy.start_student()
        for r in range(s):
            i, j = validate_pair(policy.select(phi[a, r]), k)
            util = phi[a, r] @ theta[a]
            policy.update(int(rng.random() < 1 / (1 + np.exp(-(util[i] - util[j])))))
        policy.end_student()
    assert policy.matrix is None
    assert np.abs(policy.h).sum() > 0  # summaries carry the clicks
    assert policy.pop.n_learned >= 2
    assert policy.gate_open


@pytest.mark.parametrize("spec", ["coduel", "coduel:recal_first=3,recal_every=2"])
def test_each_stored_summary_equals_a_fresh_pass_over_the_users_clicks(world, spec):
    """The population learns from every completed user's likelihood summary; the new user's
    is read off the no-transfer learner, which must agree with a Laplace pass over the logged
    clicks under the current features (after refits, every user's is recomputed)."""
    from prefduel.policies.coduel.policy import likelihood_summaries

    checked = []

    def after_session(policy, n):
        z, y = policy._click_features(range(n))
        lam, h, _ = likelihood_summaries(z, y, policy.prior_var)
        np.testing.assert_allclose(policy.lam, lam, rtol=1e-7, atol=1e-8)
        np.testing.assert_allclose(policy.h, h, rtol=1e-7, atol=1e-8)
        checked.append(n)

    _drive(_cut(world, 12), load_policy(spec), 0, after_session=after_session)
    assert checked == list(range(1, 13))
