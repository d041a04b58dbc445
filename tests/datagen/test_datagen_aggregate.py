"""Aggregation reuses TutorSim's judge and Bradley-Terry functions; layout and features."""

from __future__ import annotations

import numpy as np
import pytest

from prefduel.core.btl import fit_bt_ridge, pairs_of, sigmoid
from prefduel.core.rng import stream
from prefduel.datagen.aggregate import (
    NO_PICK,
    assemble_world,
    layout,
    pick_diagnostics,
    probabilities_and_utilities,
    rater_features,
    tally,
)
from prefduel.worlds import tutorsim


def test_shared_judge_math_matches_tutorsims_formulas():
    rng = stream(0, "tests", "datagen-agg")
    picks = rng.binomial(4, 0.6, size=(3, 5, 15, 4))
    prob = tutorsim.judge_probabilities(picks, 4, 6)
    log_odds = np.log((picks + 0.5) / (4.5 - picks)).mean(axis=-1)
    expected = np.full((3, 5, 6, 6), 0.5)
    pairs = pairs_of(6)
    expected[..., pairs[:, 0], pairs[:, 1]] = sigmoid(log_odds)
    expected[..., pairs[:, 1], pairs[:, 0]] = 1 - sigmoid(log_odds)
    np.testing.assert_array_equal(prob, expected)
    utility = tutorsim.bt_utilities(prob, ridge=0.01, scale=8.0)
    np.testing.assert_array_equal(utility, np.clip(0.5 + fit_bt_ridge(prob, 0.01) / 8.0, 0, 1))


def test_picks_become_probabilities_with_missing_picks_left_out():
    # one pair (K = 2), 4 configurations x 3 samples; 1 = the lower index won
    picks = np.array([[[[[1, 1, 1], [1, 0, NO_PICK], [NO_PICK] * 3, [0, 0, 1]]]]])  # (1,1,1,4,3)
    wins, total = tally(picks)
    np.testing.assert_array_equal(wins, [[[[3, 1, 0, 1]]]])
    np.testing.assert_array_equal(total, [[[[3, 2, 0, 3]]]])
    prob, utility = probabilities_and_utilities(picks, 2, ridge=0.01, scale=8.0)
    lo = [np.log(3.5 / 0.5), np.log(1.5 / 1.5), np.log(1.5 / 2.5)]  # the empty config is skipped
    assert prob[0, 0, 0, 1] == pytest.approx(float(sigmoid(np.mean(lo))))
    assert prob[0, 0, 1, 0] == pytest.approx(1 - prob[0, 0, 0, 1])
    assert utility.shape == (1, 1, 2) and utility[0, 0, 0] > utility[0, 0, 1]
    nothing = np.full((1, 1, 1, 4, 2), NO_PICK)
    prob, utility = probabilities_and_utilities(nothing, 2, ridge=0.01, scale=8.0)
    assert prob[0, 0, 0, 1] == 0.5 and np.all(utility == 0.5)


def test_rater_features_are_centered_with_unit_sd():
    scores = np.array([[8, 4, 6], [1, 10, 4], [np.nan] * 3, [5, 5, 5]], dtype=float)
    g = rater_features(scores)
    np.testing.assert_allclose(g.sum(axis=1), 0, atol=1e-12)
    assert g[[0, 1, 3]].std() == pytest.approx(1.0)
    assert np.all(g[2] == 0) and np.all(g[3] == 0)
    assert np.all(rater_features(np.full((2, 3), 7.0)) == 0)


def test_layout_is_balanced_seeded_and_without_repeats():
    s_idx, q_idx, u = layout(3, 10, 31, 6, seed=5)
    assert s_idx.shape == (31,) and q_idx.shape == (31, 6) and u.shape == (31, 6)
    assert sorted(np.bincount(s_idx)) == [10, 10, 11]
    assert all(len(set(row)) == 6 for row in q_idx)
    assert q_idx.min() >= 0 and q_idx.max() < 10 and 0 <= u.min() and u.max() < 1
    again = layout(3, 10, 31, 6, seed=5)
    for a, b in zip((s_idx, q_idx, u), again, strict=True):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(layout(3, 10, 31, 6, seed=6)[1], q_idx)
    with pytest.raises(ValueError, match="at most 10"):
        layout(3, 10, 31, 11, seed=5)


def test_assemble_world_lays_cells_out_by_arrival():
    rng = stream(1, "tests", "datagen-world")
    picks = rng.integers(0, 2, size=(2, 5, 15, 4, 2))
    prob, utility = probabilities_and_utilities(picks, 6, ridge=0.01, scale=8.0)
    g = rater_features(rng.integers(1, 11, size=(5, 6)).astype(float))
    s_idx, q_idx, u = layout(2, 5, 7, 4, seed=0)
    world = assemble_world(
        name="w",
        seed=0,
        prob=prob,
        utility=utility,
        g=g,
        student_index=s_idx,
        question_index=q_idx,
        uniforms=u,
        students=[{"id": "a"}, {"id": "b"}],
        questions=[{"id": f"q{i}"} for i in range(5)],
        personas=[{"id": f"p{i}"} for i in range(6)],
        info={},
    )
    assert world.Phi.shape == (7, 4, 6, 7) and world.d == 7
    n, s = 3, 2
    i, q = s_idx[n], q_idx[n, s]
    np.testing.assert_array_equal(world.U[n, s], utility[i, q])
    np.testing.assert_array_equal(world.P[n, s], prob[i, q])
    np.testing.assert_array_equal(world.Phi[n, s, :, :6], np.eye(6))
    np.testing.assert_array_equal(world.Phi[n, s, :, 6], g[q])


def test_pick_diagnostics_measure_position_and_label_bias():
    picks = np.zeros((1, 1, 1, 4, 1), dtype=int)
    picks[..., 0, 0] = 1  # a shown first, labelled A: a won (first, A)
    picks[..., 1, 0] = 1  # a first, labelled B: a won (first, B)
    picks[..., 2, 0] = 0  # b first, a labelled A: b won (first, B)
    picks[..., 3, 0] = NO_PICK
    d = pick_diagnostics(picks)
    assert d["valid"] == 3 and d["missing"] == 1
    assert d["first_shown_won"] == 1.0
    assert d["label_a_chosen"] == pytest.approx(1 / 3)
