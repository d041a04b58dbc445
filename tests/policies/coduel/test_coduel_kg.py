"""CODuel's corrected lookahead (``pair=kg``, ``value="decision"``): the value of the best
persona no longer depends on which pair is shown, the rest is today's rule, and the policy
setting selects it (issue 18)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from prefduel.core.btl import top_two
from prefduel.policies import check_policy, load_policy
from prefduel.policies.coduel import pair_rule
from prefduel.policies.coduel.pair_rule import LOOKAHEAD_VALUES, lookahead_pair
from prefduel.policies.laplace import laplace_step
from prefduel.runner.cell import play
from prefduel.worlds import get_world
from prefduel.worlds.world import World

D = 7
K = 6


def _belief(rng, c):
    weights = rng.dirichlet(np.ones(c))
    mu = rng.normal(scale=1.2, size=(c, D))
    a = rng.normal(size=(c, D, D))
    sigma = 0.3 * (a @ a.transpose(0, 2, 1) / D + 0.2 * np.eye(D))
    return weights, mu, sigma


def _question(rng, q=None):
    phi = rng.normal(size=(K, D) if q is None else (q, K, D))
    phi[..., :K] = np.eye(K)
    return phi


def _parts_by_loops(weights, mu, sigma, phi, bank):
    """Per pair (in `pairs_of` order): regret now, the expected top-two mixture-mean utility
    after the click, and the expected best-persona term of today's rule (each component's
    updated mean), all by explicit loops, averaged over the bank."""
    now, top2, best_updated = [], [], []
    for a, b in itertools.combinations(range(phi.shape[0]), 2):
        u = mu @ phi.T
        now.append(float(weights @ (2 * u.max(axis=1) - u[:, a] - u[:, b])))
        z = phi[a] - phi[b]
        e_top2 = e_best = 0.0
        for y in (1, 0):
            steps = [laplace_step(mu[c].copy(), sigma[c].copy(), z, y) for c in range(len(mu))]
            joint = np.array(
                [w * (p if y == 1 else 1 - p) for w, (_, _, p) in zip(weights, steps, strict=True)]
            )
            new_w = joint / joint.sum()
            new_mu = np.stack([s[0] for s in steps])
            util = np.einsum("cd,qkd->cqk", new_mu, bank)  # (C, Q, K)
            mean_u = np.einsum("c,cqk->qk", new_w, util)
            e_top2 += joint.sum() * np.mean(np.sort(mean_u, axis=1)[:, -2:].sum(axis=1))
            e_best += joint.sum() * np.mean(new_w @ util.max(axis=2))
        top2.append(e_top2)
        best_updated.append(e_best)
    return np.array(now), np.array(top2), np.array(best_updated)


@pytest.mark.parametrize(("seed", "c", "remaining"), [(0, 1, 5), (1, 3, 9), (2, 2, 23)])
def test_decision_value_matches_loops_and_differs_from_today_only_by_the_best_term(
    seed, c, remaining
):
    rng = np.random.default_rng(seed)
    weights, mu, sigma = _belief(rng, c)
    phi, bank = _question(rng), _question(rng, 5)
    now, top2, best_updated = _parts_by_loops(weights, mu, sigma, phi, bank)
    best_now = np.mean(weights @ np.einsum("cd,qkd->cqk", mu, bank).max(axis=2))
    _, decision = lookahead_pair(weights, mu, sigma, phi, bank, remaining, "decision")
    _, updated = lookahead_pair(weights, mu, sigma, phi, bank, remaining, "updated")
    np.testing.assert_allclose(decision, now + remaining * (2 * best_now - top2), atol=1e-8)
    np.testing.assert_allclose(updated, now + remaining * (2 * best_updated - top2), atol=1e-8)


@pytest.mark.parametrize("seed", range(4))
def test_the_best_persona_value_does_not_depend_on_the_pair_for_one_component(seed):
    """For the exact single-component belief E_y E[max_p u_p | y] is the same whatever pair is
    shown. The decision value's best-persona term is one number for every pair; today's rule's
    (the max over the updated mean) moves with how far each pair's click moves the mean."""
    rng = np.random.default_rng(10 + seed)
    weights, mu, sigma = _belief(rng, 1)
    phi, bank = _question(rng), _question(rng, 4)
    remaining = 7
    now, top2, _ = _parts_by_loops(weights, mu, sigma, phi, bank)
    _, decision = lookahead_pair(weights, mu, sigma, phi, bank, remaining, "decision")
    _, updated = lookahead_pair(weights, mu, sigma, phi, bank, remaining, "updated")
    best_term = ((decision - now) / remaining + top2) / 2
    np.testing.assert_allclose(best_term, best_term[0], rtol=0, atol=1e-9)
    today = ((updated - now) / remaining + top2) / 2
    assert np.ptp(today) > 1e-3


def test_with_no_rounds_left_the_decision_rule_is_greedy():
    for seed in range(8):
        rng = np.random.default_rng(40 + seed)
        weights, mu, sigma = _belief(rng, 3)
        phi = _question(rng)
        pair, _ = lookahead_pair(weights, mu, sigma, phi, _question(rng, 3), 0, "decision")
        assert pair == top_two(phi @ (weights @ mu))


def test_unknown_lookahead_value_is_named():
    rng = np.random.default_rng(0)
    weights, mu, sigma = _belief(rng, 2)
    with pytest.raises(ValueError, match="value must be one of updated, decision"):
        lookahead_pair(weights, mu, sigma, _question(rng), _question(rng, 2), 3, "kg")
    assert LOOKAHEAD_VALUES == ("updated", "decision")


# ----------------------------------------------------------------------------- the policy


def _cut(world: World, n: int) -> World:
    fields = ("Phi", "U", "P", "u", "student_index", "question_index")
    kept = {name: getattr(world, name)[:n] for name in fields}
    return World(
        roster=world.roster,
        seed=world.seed,
        students=world.students,
        questions=world.questions,
        personas=world.personas,
        info=world.info,
        **kept,
    )


def test_pair_kg_passes_check_policy():
    check_policy(lambda: load_policy("coduel:pair=kg,nmin=2,z=0"))


def test_pair_kg_asks_the_lookahead_for_the_decision_value(monkeypatch):
    """``pair=kg`` (the default since issue 18's settling on dev) asks for the decision value,
    ``pair=lookahead-legacy`` (the rule before it, also under its old name ``lookahead``) for
    the updated one."""
    seen = []
    original = pair_rule.lookahead_pair

    def spy(*args, **kwargs):
        seen.append(args[6] if len(args) > 6 else kwargs.get("value", "updated"))
        return original(*args, **kwargs)

    monkeypatch.setattr("prefduel.policies.coduel.policy.lookahead_pair", spy)
    world = _cut(get_world("dev", 0), 14)
    cases = (
        ("coduel:nmin=2,z=0", "decision"),
        ("coduel:pair=kg,nmin=2,z=0", "decision"),
        ("coduel:pair=lookahead-legacy,nmin=2,z=0", "updated"),
        ("coduel:pair=lookahead,nmin=2,z=0", "updated"),  # the legacy rule's old name
    )
    for spec, value in cases:
        seen.clear()
        policy = load_policy(spec)
        play(world, policy, np.random.default_rng(0), label=spec)
        assert policy.pair == ("kg" if value == "decision" else "lookahead-legacy")
        assert seen and set(seen) == {value}
