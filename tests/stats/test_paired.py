"""Paired gains vs a competitor, intervals and learning curves."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from prefduel.stats.paired import (
    bootstrap_interval,
    centered_moving_mean,
    learning_curve,
    paired_gains,
    t_interval,
)


def _rows(excess: dict[str, list[float]], world: str = "w") -> list[dict]:
    rows = []
    for policy, values in excess.items():
        for seed, value in enumerate(values):
            rows.append(
                {
                    "kind": "policy",
                    "world": world,
                    "seed": seed,
                    "policy": policy,
                    "excess": value,
                    "score": 0.0,
                    "excess_per_arrival": list(np.linspace(value, 0, 40) + seed),
                }
            )
    return rows


def test_paired_gains_match_a_hand_computation():
    rows = _rows({"random": [100, 200, 400, 50], "mine": [90, 150, 440, 40]})
    (entry,) = paired_gains(rows, competitor="random")
    change = np.array([90 / 100, 150 / 200, 440 / 400, 40 / 50]) * 100 - 100
    assert entry["n"] == 4 and entry["policy"] == "mine"
    assert entry["change_mean"] == pytest.approx(change.mean())
    lo, hi = stats.t.interval(0.95, 3, loc=change.mean(), scale=stats.sem(change))
    assert (entry["t_lo"], entry["t_hi"]) == pytest.approx((lo, hi))
    assert entry["boot_lo"] <= change.mean() <= entry["boot_hi"]


def test_pairs_only_seeds_both_policies_have():
    rows = _rows({"random": [100, 200, 400], "mine": [50, 100]})
    (entry,) = paired_gains(rows, competitor="random")
    assert entry["n"] == 2 and entry["change_mean"] == pytest.approx(-50.0)


def test_missing_competitor_names_what_is_there():
    with pytest.raises(ValueError, match=r"competitor 'nope' has no rows.*'mine'"):
        paired_gains(_rows({"mine": [1.0, 2.0]}), competitor="nope")


def test_bootstrap_is_seeded_and_brackets_the_mean():
    values = np.array([1.0, 3.0, 2.0, 8.0, 5.0])
    first = bootstrap_interval(values)
    assert first == bootstrap_interval(values)
    assert first[0] < values.mean() < first[1]
    assert np.isnan(t_interval(values[:1])[0])


def test_centered_moving_mean_matches_a_loop():
    values = np.random.default_rng(0).normal(size=(3, 30))
    got = centered_moving_mean(values, 5)
    want = np.array([[row[max(0, a - 2) : a + 3].mean() for a in range(30)] for row in values])
    assert np.allclose(got, want)


def test_learning_curve_averages_smoothed_seeds_with_a_band():
    rows = _rows({"mine": [10.0, 20.0, 30.0]})
    curve = learning_curve(rows, "w", "mine", window=5)
    per_seed = np.array([r["excess_per_arrival"] for r in rows])
    assert curve["n"] == 3 and curve["mean"].shape == (40,)
    assert np.allclose(curve["mean"], centered_moving_mean(per_seed, 5).mean(axis=0))
    assert np.all(curve["lo"] <= curve["mean"]) and np.all(curve["mean"] <= curve["hi"])
    with pytest.raises(ValueError, match="no rows"):
        learning_curve(rows, "w", "other")


def test_profile_breakdown_groups_arrivals_by_hidden_profile():
    from prefduel.runner.cell import run_cell
    from prefduel.stats.paired import profile_breakdown
    from prefduel.worlds import get_world

    worlds = {s: get_world("dev", s) for s in (0, 1)}
    rows = [run_cell(worlds[s], "notransfer") for s in (0, 1)]
    table = profile_breakdown(rows, worlds.__getitem__, "notransfer")
    assert len(table) == 8  # the 8 development profiles
    assert sum(e["arrivals"] for e in table) == 2 * 300
    means = [e["excess_mean"] for e in table]
    assert means == sorted(means, reverse=True)
    # the pooled mean over profiles equals the mean excess per arrival over both runs
    total = sum(e["excess_mean"] * e["arrivals"] for e in table) / 600
    assert total == pytest.approx(np.mean([r["excess"] / 300 for r in rows]))
    with pytest.raises(ValueError, match="no rows"):
        profile_breakdown(rows, worlds.__getitem__, "other")
