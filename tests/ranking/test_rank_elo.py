"""Online Elo: identical to a straightforward loop, globally and per user, in time order."""

from __future__ import annotations

import numpy as np
import pytest
from pb_rank_data import arena

from prefduel.core.rng import stream
from prefduel.ranking import (
    ARENA_K,
    PAPER_K,
    RankingError,
    battles_from_arrays,
    battles_from_frame,
    elo_bootstrap,
    elo_per_user,
    elo_ratings,
)


def reference_elo(a, b, s, n_models, k, initial=1000.0):
    """The textbook loop, battle by battle."""
    ratings = [initial] * n_models
    for i, j, score in zip(a, b, s, strict=True):
        expected = 1 / (1 + 10 ** ((ratings[j] - ratings[i]) / 400))
        ratings[i] += k * (score - expected)
        ratings[j] += k * ((1 - score) - (1 - expected))
    return np.array(ratings)


@pytest.mark.parametrize("k", [PAPER_K, ARENA_K, 16.0])
def test_global_elo_equals_the_reference_loop(k):
    battles = battles_from_frame(arena()[0])
    want = reference_elo(
        battles.a.tolist(), battles.b.tolist(), battles.outcome.tolist(), battles.n_models, k
    )
    np.testing.assert_array_equal(elo_ratings(battles, k), want)


@pytest.mark.parametrize("k", [PAPER_K, ARENA_K])
def test_per_user_elo_equals_the_reference_loop(k):
    battles = battles_from_frame(arena()[0])
    users = np.arange(0, battles.n_users, 3)
    got = elo_per_user(battles, users, k)
    assert got.shape == (users.size, battles.n_models)
    for row, u in enumerate(users.tolist()):
        sel = battles.user == u  # battles are stored in time order
        want = reference_elo(
            battles.a[sel].tolist(),
            battles.b[sel].tolist(),
            battles.outcome[sel].tolist(),
            battles.n_models,
            k,
        )
        seen = np.zeros(battles.n_models, dtype=bool)
        seen[battles.a[sel]] = seen[battles.b[sel]] = True
        np.testing.assert_array_equal(got[row, seen], want[seen])
        assert np.isnan(got[row, ~seen]).all()


def test_elo_follows_timestamps_not_file_order():
    rng = stream(0, "tests", "elo-time")
    n = 300
    names = np.array(["a", "b", "c", "d"], dtype=object)
    a = rng.integers(0, 4, n)
    b = (a + rng.integers(1, 4, n)) % 4
    labels = np.array(["model_a", "model_b", "tie"], dtype=object)[rng.integers(0, 3, n)]
    t = rng.permutation(n).astype(float)
    shuffled = battles_from_arrays(names[a], names[b], labels, time=t)
    order = np.argsort(t)
    sorted_ = battles_from_arrays(names[a][order], names[b][order], labels[order])
    np.testing.assert_array_equal(elo_ratings(shuffled), elo_ratings(sorted_))
    unsorted = battles_from_arrays(names[a], names[b], labels)
    assert not np.array_equal(elo_ratings(unsorted), elo_ratings(sorted_))


def test_elo_bootstrap_is_seeded():
    battles = battles_from_frame(arena()[0])
    one = elo_bootstrap(battles, stream(0, "b"), 8)
    two = elo_bootstrap(battles, stream(0, "b"), 8)
    assert one.shape == (8, battles.n_models)
    np.testing.assert_array_equal(one, two)
    assert not np.array_equal(one, elo_bootstrap(battles, stream(1, "b"), 8))


def test_bad_k_raises():
    battles = battles_from_arrays(["a"], ["b"], ["model_a"])
    with pytest.raises(RankingError, match="K-factor"):
        elo_ratings(battles, k=0)
