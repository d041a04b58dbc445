"""Reference rows: anchors, orderings, and brute-force checks of the hindsight baselines."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from prefduel.core.regret import score
from prefduel.runner.cell import run_cell
from prefduel.runner.references import (
    REFERENCES,
    linear_oracle_theta,
    pair_totals,
    reference_rows,
)
from prefduel.worlds import get_world


@pytest.fixture(scope="module")
def world():
    return get_world("dev", 1)


@pytest.fixture(scope="module")
def rows(world):
    return {r["policy"]: r for r in reference_rows(world)}


def _total_regret(u, first, second):
    best = u.max(axis=-1)
    return float(
        (
            2 * best
            - np.take_along_axis(u, first[..., None], -1)[..., 0]
            - np.take_along_axis(u, second[..., None], -1)[..., 0]
        ).sum()
    )


def test_one_row_per_reference_with_the_policy_row_keys(world, rows):
    assert list(rows) == list(REFERENCES)
    policy_keys = set(run_cell(world, "random")) - {"kind"}
    for name, row in rows.items():
        assert row["kind"] == "reference"
        assert (row["world"], row["seed"]) == ("dev", 1)
        assert set(row) - {"kind"} == policy_keys, name
        assert len(row["excess_per_arrival"]) == world.N
        assert len(row["excess_per_round"]) == world.S


def test_all_rows_share_g_and_r_rand_and_score_consistently(rows):
    g, r_rand = rows["ref:floor"]["G"], rows["ref:floor"]["R_rand"]
    for name, row in rows.items():
        assert row["G"] == pytest.approx(g, rel=1e-12), name
        assert row["R_rand"] == pytest.approx(r_rand, rel=1e-12), name
        assert row["excess"] == pytest.approx(row["R"] - row["G"], abs=1e-9), name
        assert row["score"] == pytest.approx(score(row["R"], r_rand, g), abs=1e-9), name
        assert sum(row["excess_per_arrival"]) == pytest.approx(row["excess"], abs=1e-6), name


def test_floor_is_100_and_random_is_0(rows):
    floor, rand = rows["ref:floor"], rows["ref:random"]
    assert floor["score"] == 100.0
    assert floor["R"] == floor["G"] and floor["excess"] == 0.0
    assert set(floor["excess_per_arrival"]) == {0.0}
    assert rand["score"] == 0.0
    assert rand["R"] == rand["R_rand"]
    assert rand["R_rand"] > rand["G"] > 0


def test_orderings(rows):
    s = {k: v["score"] for k, v in rows.items()}
    assert s["ref:best-pair-per-user"] >= s["ref:best-single-pair"]
    assert s["ref:oracle-user"] >= s["ref:oracle-pooled"]
    assert s["ref:floor"] >= max(v for k, v in s.items() if k != "ref:floor")
    # a fixed pair in hindsight can never do worse than random pairs
    assert s["ref:best-single-pair"] >= s["ref:random"]


def test_best_single_pair_is_the_brute_force_best_of_15(world, rows):
    u = world.U
    totals = {}
    for i, j in itertools.combinations(range(world.K), 2):
        totals[(i, j)] = float((2 * u.max(-1) - u[..., i] - u[..., j]).sum())
    assert len(totals) == 15
    best = min(totals.values())
    assert rows["ref:best-single-pair"]["R"] == pytest.approx(best, rel=1e-12)
    # strictly better than the runner-up, so the test pins the right pair
    assert sorted(totals.values())[1] > best


def test_best_pair_per_user_is_the_brute_force_best_for_each_user(world, rows):
    u = world.U
    per_user_best = []
    for n in range(world.N):
        best = min(
            float((2 * u[n].max(-1) - u[n, :, i] - u[n, :, j]).sum())
            for i, j in itertools.combinations(range(world.K), 2)
        )
        per_user_best.append(best)
    row = rows["ref:best-pair-per-user"]
    assert row["R"] == pytest.approx(sum(per_user_best), rel=1e-12)
    floor = (np.sort(u, -1)[..., -1] - np.sort(u, -1)[..., -2]).sum(-1)
    np.testing.assert_allclose(
        row["excess_per_arrival"], np.array(per_user_best) - floor, atol=1e-8
    )


def test_pair_totals_shape_and_values(world):
    totals = pair_totals(world.U)
    assert totals.shape == (world.N, 15)
    u = world.U[3]
    assert totals[3, 0] == pytest.approx(float((2 * u.max(-1) - u[:, 0] - u[:, 1]).sum()))


def test_oracle_theta_is_least_squares(world):
    theta = linear_oracle_theta(world.Phi[:5], world.U[:5])
    for n in range(5):
        x = world.Phi[n].reshape(-1, world.d)
        y = world.U[n].reshape(-1)
        ref = np.linalg.lstsq(x, y, rcond=None)[0]
        np.testing.assert_allclose(theta[n], ref, atol=1e-5)


def test_oracle_rows_show_top_two_of_the_fitted_scores(world, rows):
    theta = linear_oracle_theta(world.Phi, world.U)
    pred = np.einsum("nskd,nd->nsk", world.Phi, theta)
    order = np.argsort(-pred, axis=-1)
    assert rows["ref:oracle-user"]["R"] == pytest.approx(
        _total_regret(world.U, order[..., 0], order[..., 1]), rel=1e-12
    )
    g = world.Phi[..., -1]
    order = np.argsort(-g, axis=-1)
    assert rows["ref:rater-top2"]["R"] == pytest.approx(
        _total_regret(world.U, order[..., 0], order[..., 1]), rel=1e-12
    )
