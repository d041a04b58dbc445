"""CODuel's recalibration departures of issue 18: ``recal_scale`` (rescale A to keep the s.d.
of g, or keep the fitted A) and ``recal_prior`` (users held at posteriors under the isotropic
prior and the raw g, or under the population's mixture prior and the current A)."""

from __future__ import annotations

import numpy as np
import pytest

from prefduel.core.errors import SpecError
from prefduel.policies import check_policy, load_policy
from prefduel.policies.coduel.policy import likelihood_summaries
from prefduel.runner.cell import play
from prefduel.worlds import get_world
from prefduel.worlds.world import World

SCHEDULE = "recal_first=6,recal_every=3,nmin=2,z=0"


@pytest.fixture(scope="module")
def world() -> World:
    full = get_world("dev", 0)
    n = 12
    fields = ("Phi", "U", "P", "u", "student_index", "question_index")
    return World(
        roster=full.roster,
        seed=full.seed,
        students=full.students,
        questions=full.questions,
        personas=full.personas,
        info=full.info,
        **{name: getattr(full, name)[:n] for name in fields},
    )


def _logged_g(policy) -> np.ndarray:
    g = np.concatenate(policy.log_g)
    return g[np.concatenate(policy.log_y) >= 0]


def test_default_rescales_a_to_keep_the_spread_of_g(world):
    policy = load_policy(f"coduel:{SCHEDULE}")
    play(world, policy, np.random.default_rng(0))
    g = _logged_g(policy)
    assert policy.recal_scale is True
    assert (g @ policy.matrix.T).std() == pytest.approx(g.std(), rel=1e-12)
    assert not np.allclose(policy.matrix, policy._raw_fit)


def test_recal_scale_off_keeps_the_fitted_matrix(world):
    policy = load_policy(f"coduel:recal_scale=off,{SCHEDULE}")
    play(world, policy, np.random.default_rng(0))
    assert policy.recal_scale is False
    np.testing.assert_array_equal(policy.matrix, policy._raw_fit)
    g = _logged_g(policy)
    assert (g @ policy.matrix.T).std() != pytest.approx(g.std(), rel=1e-3)


def test_isotropic_prior_holds_users_at_their_raw_feature_posterior_means(world):
    policy = load_policy(f"coduel:{SCHEDULE}")
    play(world, policy, np.random.default_rng(0))
    matrix = policy.matrix
    z, y = policy._click_features(range(policy.n_sessions))  # under the current A
    current = likelihood_summaries(z, y, policy.prior_var)[2]
    held = policy._held_thetas()
    assert policy.matrix is matrix  # the raw-feature pass leaves the current A in place
    policy.matrix = None
    z, y = policy._click_features(range(policy.n_sessions))
    np.testing.assert_allclose(held, likelihood_summaries(z, y, policy.prior_var)[2], atol=1e-12)
    assert not np.allclose(held, current)


def test_population_prior_holds_users_at_the_population(world):
    """A population concentrated at one point holds every user there, whatever their clicks;
    the isotropic-prior means scatter around the users' own clicks."""
    policy = load_policy(f"coduel:recal_prior=population,{SCHEDULE}")
    play(world, policy, np.random.default_rng(0))
    assert policy.recal_prior == "population"
    d = world.d
    center = np.r_[2.0, -1.0, 0.5, 0.0, -1.5, 0.0, 1.0]
    center[: world.K] -= center[: world.K].mean()  # no part along the unidentified direction
    pop = policy.pop
    pop.mu = np.stack([center, center])
    pop.cov = np.stack([1e-4 * np.eye(d)] * 2)
    pop.counts = np.array([1.0, policy.n_sessions - 1.0])
    held = policy._held_thetas()
    assert held.shape == (policy.n_sessions, d)
    np.testing.assert_allclose(held, np.broadcast_to(center, held.shape), atol=0.05)
    policy.recal_prior = "isotropic"
    assert np.abs(policy._held_thetas() - center).max() > 0.5


def test_population_prior_weighs_components_by_responsibility(world):
    """Two point-like components: each user is held at a responsibility-weighted average of
    the two points, nearer the one its clicks favour."""
    policy = load_policy(f"coduel:recal_prior=population,{SCHEDULE}")
    play(world, policy, np.random.default_rng(0))
    d, k = world.d, world.K
    isotropic = policy._summaries(range(policy.n_sessions))[2]  # under the current A
    a = np.r_[np.eye(k)[0] - 1.0 / k, 0.0]
    pop = policy.pop
    pop.mu = np.stack([a, -a])
    pop.cov = np.stack([1e-3 * np.eye(d)] * 2)
    pop.counts = np.array([6.0, 6.0])
    held = policy._held_thetas()
    share = (held @ a) / (a @ a)  # held = a (2 r - 1) up to the components' spread
    assert np.all(np.abs(share) <= 1.01)  # within the two points, up to their spread
    np.testing.assert_allclose(held, np.outer(share, a), atol=0.05)
    # users whose own clicks lean toward a are held nearer a
    lean = isotropic @ a
    assert np.all(np.sign(share[np.abs(lean) > 0.5]) == np.sign(lean[np.abs(lean) > 0.5]))


def test_recal_settings_pass_check_policy():
    check_policy(lambda: load_policy("coduel:recal_scale=off,recal_prior=population,nmin=2"))


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("coduel:recal_scale=maybe", "recal_scale: expected on or off"),
        ("coduel:recal_prior=mixture", "recal_prior: expected one of 'isotropic' or 'population'"),
        (
            "coduel:pair=kgg",
            "pair: expected one of 'kg', 'lookahead-legacy', 'lookahead' or 'greedy'",
        ),
    ],
)
def test_bad_recal_settings_are_named(spec, message):
    with pytest.raises(SpecError, match=message):
        load_policy(spec)
