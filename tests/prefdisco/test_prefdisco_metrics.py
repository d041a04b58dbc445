"""PrefAlign, NormAlign (golden cases, the oracle = baseline guard), bootstrap, recall, trend."""

from __future__ import annotations

import numpy as np
import pytest

from prefduel.prefdisco import (
    ScoringError,
    discovery_recall,
    norm_align,
    norm_align_ci,
    pref_align,
    trend,
)


@pytest.mark.parametrize(
    ("scores", "weights", "expected"),
    [
        ({"a": 4, "b": 2}, {"a": 0.75, "b": 0.25}, 3.5),
        ({"a": 5}, {"a": 1.0}, 5.0),
        ({"a": 1, "b": 5, "c": 3}, {"a": 0.2, "b": 0.3, "c": 0.5}, 3.2),
        ({"a": 3, "b": 3, "extra": 1}, {"a": 0.5, "b": 0.5}, 3.0),  # unweighted scores ignored
    ],
)
def test_pref_align_golden(scores, weights, expected):
    assert pref_align(scores, weights) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("scores", "weights", "fragment"),
    [
        ({"a": 4, "b": None}, {"a": 0.5, "b": 0.5}, "no score for ['b']"),
        ({"a": 4}, {"a": 0.5, "b": 0.5}, "no score for ['b']"),
        ({"a": 6}, {"a": 1.0}, "integers 1-5"),
        ({"a": 0}, {"a": 1.0}, "integers 1-5"),
        ({"a": 2.5}, {"a": 1.0}, "integers 1-5"),
        ({"a": 3, "b": 3}, {"a": 0.5, "b": 0.6}, "sum to 1"),
        ({}, {}, "no weights"),
    ],
)
def test_pref_align_refuses_missing_or_bad_scores(scores, weights, fragment):
    """A missing score is an error, never silently a 1."""
    with pytest.raises(ScoringError) as info:
        pref_align(scores, weights)
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    ("disc", "base", "oracle", "expected"),
    [
        (3.5, 3.0, 4.0, 50.0),
        (3.0, 3.0, 4.0, 0.0),
        (4.0, 3.0, 4.0, 100.0),
        (2.5, 3.0, 4.0, -50.0),
        (4.5, 3.0, 4.0, 150.0),
        (3.05, 3.0, 3.1, 50.0),  # gap exactly min_gap: defined
        (3.5, 3.0, 3.0, None),  # oracle = baseline: undefined, not a division by zero
        (3.5, 3.0, 3.05, None),  # oracle ~ baseline (gap < min_gap)
        (3.5, 4.0, 3.0, None),  # oracle below baseline: a ratio would flip its sign
    ],
)
def test_norm_align_golden(disc, base, oracle, expected):
    value = norm_align(disc, base, oracle, min_gap=0.1 - 1e-12)
    assert value == (None if expected is None else pytest.approx(expected))


def test_norm_align_settings():
    assert norm_align(3.5, 3.0, 3.05, min_gap=0.01) == pytest.approx(1000.0)
    with pytest.raises(ValueError):
        norm_align(3, 3, 4, min_gap=0)
    with pytest.raises(ValueError):
        norm_align(float("nan"), 3, 4)


def test_norm_align_ci():
    rng = np.random.default_rng(0)
    base = rng.uniform(2, 3, 60)
    oracle = base + rng.uniform(1, 2, 60)
    disc = base + 0.4 * (oracle - base) + rng.normal(0, 0.1, 60)
    s = norm_align_ci(disc, base, oracle, n_boot=500, seed=3)
    assert s.n == 60 and s.lo < s.value < s.hi and 30 < s.value < 50
    assert s.value == pytest.approx(100 * (disc.mean() - base.mean()) / (oracle - base).mean())
    again = norm_align_ci(disc, base, oracle, n_boot=500, seed=3)
    assert (again.lo, again.hi) == (s.lo, s.hi)
    assert norm_align_ci(disc, base, oracle, n_boot=500, seed=4).lo != s.lo
    # oracle = baseline everywhere: undefined, with the reason, no interval
    flat = norm_align_ci(disc, base, base, n_boot=200)
    assert flat.value is None and flat.lo is None and "min_gap" in flat.reason
    assert flat.valid_share == 0.0
    # a single instance: a value but no interval
    one = norm_align_ci([3.5], [3.0], [4.0])
    assert one.value == 50.0 and one.lo is None
    assert norm_align_ci([], [], []).n == 0
    with pytest.raises(ValueError, match="equal length"):
        norm_align_ci([1, 2], [1], [1, 2])


def test_unstable_gaps_give_no_interval():
    base = np.array([3.0, 3.0, 3.0, 3.0])
    oracle = np.array([3.0, 3.0, 3.0, 3.8])  # mean gap 0.2, most resamples have gap 0
    disc = np.array([3.0, 3.0, 3.0, 3.4])
    s = norm_align_ci(disc, base, oracle, n_boot=300)
    assert s.value == pytest.approx(50.0) and s.lo is None and "bootstrap" in s.reason


def test_recall_and_trend():
    assert discovery_recall(["a", "b", "c", "d"], ["a", "x", "c"]) == 0.5
    assert discovery_recall(["a"], []) == 0.0
    with pytest.raises(ValueError):
        discovery_recall([], ["a"])
    t = trend([0, 1, 2, 3, 4, 5], [0.0, 0.1, 0.3, 0.2, 0.5, 0.4])
    assert t.n == 6 and 0.8 < t.r < 1 and t.slope == pytest.approx(1.55 / 17.5)
    assert t.p < 0.05
    flat = trend([3, 3, 3], [0.1, 0.2, 0.3])
    assert flat.r is None and flat.slope is None
