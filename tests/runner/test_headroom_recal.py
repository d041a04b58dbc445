"""Recalibration-aware online headroom rows: the map's least squares against numpy's, the
per-arrival particles of the replay, and the rows on tiny worlds (finite; equal to the plain
online rows when the rater is already an exact linear map of what users weigh)."""

from __future__ import annotations

import numpy as np

from pb_toys import make_world
from prefduel.core.btl import btl_matrix
from prefduel.core.rng import stream
from prefduel.runner.cell import summarize
from prefduel.runner.headroom import play_oracle_prior
from prefduel.runner.headroom_recal import (
    RECAL_ROWS,
    THETA_RIDGE,
    MapStats,
    fit_map,
    fixed_features,
    map_given_theta,
    question_kinds,
    recal_layout,
    recal_pairs,
    rescaled,
    theta_given_map,
)
from prefduel.runner.references import linear_oracle_theta
from prefduel.worlds.world import World

K = 4


def _toy(seed: int, n: int = 5, s: int = 6, centered: bool = False):
    rng = stream(seed, "tests", "recal-toy")
    g = rng.normal(size=(n, s, K))
    if centered:
        g -= g.mean(axis=-1, keepdims=True)
    x = np.broadcast_to(np.eye(K), (n, s, K, K)).copy()
    utilities = rng.normal(size=(n, s, K))
    return x, g, utilities, rng


def test_the_map_given_the_users_is_numpys_least_squares():
    x, g, utilities, rng = _toy(0)
    theta = rng.normal(size=(x.shape[0], K + 1))
    b, c = theta[:, :K], theta[:, K]
    # U_nsp - b_n[p] = c_n sum_q A[p, q] g_nsq, one least squares per row p of A
    rows = (c[:, None, None, None] * g[:, :, None, :]).reshape(-1, K)  # (n s, K) per p
    expected = np.stack(
        [
            np.linalg.lstsq(rows, (utilities[..., p] - b[:, None, p]).ravel(), rcond=None)[0]
            for p in range(K)
        ]
    )
    got = map_given_theta(MapStats.of(x, g, utilities), theta)
    np.testing.assert_allclose(got, expected, atol=1e-10)


def test_the_map_on_centered_scores_is_the_minimum_norm_answer():
    x, g, utilities, rng = _toy(1, centered=True)  # g never moves along the all-ones vector
    theta = rng.normal(size=(x.shape[0], K + 1))
    c = theta[:, K]
    rows = (c[:, None, None] * g).reshape(-1, K)
    target = utilities - theta[:, None, :K]
    expected = np.stack(
        [np.linalg.lstsq(rows, target[..., p].ravel(), rcond=None)[0] for p in range(K)]
    )
    got = map_given_theta(MapStats.of(x, g, utilities), theta)
    np.testing.assert_allclose(got, expected, atol=1e-10)


def test_the_users_given_the_map_are_numpys_ridge_least_squares():
    x, g, utilities, rng = _toy(2)
    matrix = rng.normal(size=(K, K))
    phi = np.concatenate([x, (g @ matrix.T)[..., None]], axis=-1)  # (n, s, K, K + 1)
    for n in range(x.shape[0]):
        design = phi[n].reshape(-1, K + 1)
        gram = design.T @ design + THETA_RIDGE * np.eye(K + 1)
        expected = np.linalg.solve(gram, design.T @ utilities[n].ravel())
        got = theta_given_map(MapStats.of(x, g, utilities), matrix)[n]
        np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-9)


def test_the_joint_fit_recovers_an_exact_map():
    x, g, _, rng = _toy(3, n=30, s=8)
    truth = np.eye(K) + 0.5 * rng.normal(size=(K, K))
    theta = rng.normal(size=(x.shape[0], K + 1))
    utilities = np.einsum("nspf,nf->nsp", np.concatenate([x, (g @ truth.T)[..., None]], -1), theta)
    stats = MapStats.of(x, g, utilities)
    fitted = fit_map(stats)
    expected = rescaled(truth, stats)
    # the scale is shared with the users' weights; the fit keeps the rms of g, up to the sign
    sign = np.sign(np.sum(fitted * expected))
    np.testing.assert_allclose(sign * fitted, expected, atol=1e-5)


def _linear_world(n: int = 10, s: int = 6, k: int = 4, seed: int = 0) -> World:
    """Utilities exactly linear in ``[e_p, g]`` for every user (the rater needs no map), with
    questions of three kinds in a fixed order."""
    rng = stream(seed, "tests", "recal-linear")
    g = rng.normal(size=(n, s, k))
    g -= g.mean(axis=-1, keepdims=True)
    phi = np.concatenate([np.broadcast_to(np.eye(k), (n, s, k, k)), g[..., None]], axis=-1)
    theta = np.concatenate([rng.uniform(-0.2, 0.2, (n, k)), rng.uniform(-0.1, 0.1, (n, 1))], 1)
    utilities = 0.5 + np.einsum("nskd,nd->nsk", phi, theta)
    kinds = ("definition", "computation", "why")
    return World(
        roster="linear-toy",
        seed=seed,
        Phi=np.ascontiguousarray(phi),
        U=utilities,
        P=btl_matrix(utilities, scale=8.0),
        u=rng.random((n, s)),
        student_index=np.arange(n),
        question_index=np.tile(np.arange(s) % 3, (n, 1)),
        questions=[{"id": f"q{i}", "kind": kind} for i, kind in enumerate(kinds)],
    )


def test_with_an_exactly_linear_rater_the_recal_rows_are_the_plain_online_rows():
    world = _linear_world()
    assert np.all((world.U >= 0) & (world.U <= 1))
    theta = linear_oracle_theta(world.Phi, world.U)
    plain = {h: play_oracle_prior(world, theta, horizon=h, past_only=True) for h in (1, 4)}
    rows = recal_pairs(world, horizon=4)
    assert set(rows) == set(RECAL_ROWS)
    for name, (first, second) in rows.items():
        run = plain[1 if name == RECAL_ROWS[0] else 4]
        np.testing.assert_array_equal(first, run.first, err_msg=name)
        np.testing.assert_array_equal(second, run.second, err_msg=name)


def test_the_rows_on_a_tiny_world_are_finite_scores():
    world = make_world(0, n=8, s=6)  # every arrival its own student below
    world.student_index = np.arange(world.N)
    rows = recal_pairs(world, horizon=2)
    assert set(rows) == set(RECAL_ROWS[:3])  # its questions carry no kind
    for first, second in rows.values():
        assert np.all(first != second)
        assert np.isfinite(summarize(world, first, second)["score"])


def test_per_arrival_particles_replay_as_one_shared_set():
    world = make_world(1, n=9, s=6)
    theta = linear_oracle_theta(world.Phi, world.U)
    for h in (1, 3):
        shared = play_oracle_prior(world, theta, horizon=h, past_only=True)
        own = play_oracle_prior(
            world, np.broadcast_to(theta, (world.N, *theta.shape)), horizon=h, past_only=True
        )
        np.testing.assert_array_equal(own.first, shared.first)
        np.testing.assert_array_equal(own.second, shared.second)
        np.testing.assert_allclose(own.log_weights, shared.log_weights, rtol=1e-12)


def test_layouts_without_a_rater_score_or_kinds_have_no_rows():
    assert recal_pairs(make_world(0, n=6, s=4, d=5)) == {}  # d = K - 1: no [e_p, g] layout
    assert not recal_layout(make_world(0, n=6, s=4, d=8))
    world = _linear_world()
    kinds = question_kinds(world)
    np.testing.assert_array_equal(kinds[0], [1, 0, 2, 1, 0, 2])  # sorted names: c, d, w
    x = fixed_features(world, kinds)
    assert x.shape == (world.N, world.S, world.K, 3 * world.K)
    np.testing.assert_array_equal(x.sum(axis=-1), 1.0)  # one indicator per round and persona
