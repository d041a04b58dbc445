"""run_cell / play: common random numbers, regret bookkeeping, and policy errors."""

from __future__ import annotations

import itertools
import json
import re
import textwrap

import numpy as np
import pytest

from prefduel.core.btl import btl_matrix
from prefduel.core.errors import PolicyError
from prefduel.policies import Policy
from prefduel.runner import play, run_cell
from prefduel.runner.cell import policy_rng
from prefduel.runner.references import reference_rows
from prefduel.worlds import World, get_world


@pytest.fixture(scope="module")
def dev():
    return get_world("dev", 0)


def small_world(n=4, s=5, k=6, d=7, seed=0, name="tinyworld", world_seed=17) -> World:
    rng = np.random.default_rng(seed)
    scores = rng.normal(size=(n, s, k))
    phi = np.concatenate(
        [np.broadcast_to(np.eye(k), (n, s, k, k)), rng.normal(size=(n, s, k, 1))], axis=-1
    )
    return World(
        roster=name,
        seed=world_seed,
        Phi=phi[..., :d],
        U=np.clip(0.5 + scores / 8, 0, 1),
        P=btl_matrix(scores),
        u=rng.random((n, s)),
        student_index=np.arange(n),
        question_index=np.zeros((n, s), dtype=np.int64),
    )


class Scripted(Policy):
    """Shows a given sequence of pairs (N x S x 2) and records the clicks it receives."""

    name = "scripted"

    def __init__(self, pairs):
        self.pairs = pairs

    def reset(self, rng, context):
        super().reset(rng, context)
        self.n, self.s = -1, 0
        self.clicks = []

    def start_student(self):
        self.n += 1
        self.s = 0

    def select(self, Phi):
        i, j = self.pairs[self.n, self.s]
        self.s += 1
        return int(i), int(j)

    def update(self, outcome):
        self.clicks.append(outcome)


def _random_pairs(world, seed=0):
    rng = np.random.default_rng(seed)
    out = np.empty((world.N, world.S, 2), dtype=np.int64)
    for n, s in np.ndindex(world.N, world.S):
        out[n, s] = rng.choice(world.K, size=2, replace=False)
    return out


# ---------------------------------------------------------------- common random numbers


def test_reversed_pairs_get_the_same_winner(dev):
    pairs = _random_pairs(dev)
    a = play(dev, Scripted(pairs), np.random.default_rng(0))
    b = play(dev, Scripted(pairs[..., ::-1]), np.random.default_rng(1))
    winner_a = np.where(a.outcome == 1, a.first, a.second)
    winner_b = np.where(b.outcome == 1, b.first, b.second)
    np.testing.assert_array_equal(winner_a, winner_b)
    np.testing.assert_array_equal(b.outcome, 1 - a.outcome)
    assert 0.2 < a.outcome.mean() < 0.8  # both outcomes occur


def test_clicks_follow_the_canonical_rule(dev):
    pairs = _random_pairs(dev, seed=3)
    traj = play(dev, Scripted(pairs), np.random.default_rng(0))
    for n, s in itertools.product(range(0, dev.N, 13), range(dev.S)):
        i, j = pairs[n, s]
        lo, hi = min(i, j), max(i, j)
        y_lo_wins = dev.u[n, s] < dev.P[n, s, lo, hi]
        assert traj.outcome[n, s] == int(y_lo_wins if i == lo else not y_lo_wins)


def test_policies_showing_the_same_pairs_get_the_same_clicks(dev):
    row = run_cell(dev, "notransfer:rule=ts", keep_trajectory=True)
    traj = row["trajectory"]
    pairs = np.stack([traj.first, traj.second], axis=-1)
    replay = Scripted(pairs)
    again = play(dev, replay, np.random.default_rng(123))
    np.testing.assert_array_equal(again.outcome, traj.outcome)
    assert replay.clicks == traj.outcome.ravel().tolist()  # what the policy saw in update()


def test_click_frequencies_match_the_probabilities(dev):
    """Across the world, a fixed pair (0, 1) wins about as often as P says."""
    pairs = np.zeros((dev.N, dev.S, 2), dtype=np.int64)
    pairs[..., 1] = 1
    traj = play(dev, Scripted(pairs), np.random.default_rng(0))
    p = dev.P[..., 0, 1]
    sd = np.sqrt((p * (1 - p)).sum())
    assert abs(traj.outcome.sum() - p.sum()) < 4 * sd


def test_run_cell_is_reproducible_and_seeds_policies_by_spec(dev):
    a = run_cell(dev, "notransfer:rule=ts")
    b = run_cell(dev, "notransfer:rule=ts")
    a.pop("wall_time"), b.pop("wall_time")
    assert a == b
    x = policy_rng(0, "random").random(5)
    assert not np.array_equal(x, policy_rng(0, "notransfer").random(5))
    assert not np.array_equal(x, policy_rng(1, "random").random(5))


# ---------------------------------------------------------------- regret bookkeeping


def test_regret_totals_match_a_brute_force_loop(dev):
    row = run_cell(dev, "notransfer", keep_trajectory=True)
    traj = row["trajectory"]
    r_tot = g_tot = rand_tot = 0.0
    per_arrival = []
    per_round = np.zeros(dev.S)
    for n in range(dev.N):
        arrival_excess = 0.0
        for s in range(dev.S):
            u = [float(x) for x in dev.U[n, s]]
            best, second = sorted(u, reverse=True)[:2]
            r = 2 * best - u[traj.first[n, s]] - u[traj.second[n, s]]
            g = best - second
            rand = sum(2 * best - u[i] - u[j] for i, j in itertools.permutations(range(6), 2)) / 30
            r_tot, g_tot, rand_tot = r_tot + r, g_tot + g, rand_tot + rand
            arrival_excess += r - g
            per_round[s] += (r - g) / dev.N
        per_arrival.append(arrival_excess)
    assert row["R"] == pytest.approx(r_tot, rel=1e-12)
    assert row["G"] == pytest.approx(g_tot, rel=1e-12)
    assert row["R_rand"] == pytest.approx(rand_tot, rel=1e-12)
    assert row["excess"] == pytest.approx(r_tot - g_tot, rel=1e-12)
    assert row["score"] == pytest.approx(100 * (rand_tot - r_tot) / (rand_tot - g_tot), rel=1e-12)
    np.testing.assert_allclose(row["excess_per_arrival"], per_arrival, atol=1e-9)
    np.testing.assert_allclose(row["excess_per_round"], per_round, atol=1e-9)
    assert len(row["excess_per_arrival"]) == dev.N and len(row["excess_per_round"]) == dev.S


def test_row_is_json_and_names_what_reproduces_it(dev):
    row = run_cell(dev, " notransfer:rule=greedy,prior_var=1 ")
    assert json.loads(json.dumps(row)) == row
    assert row["kind"] == "policy"
    assert (row["world"], row["seed"]) == ("dev", 0)
    assert row["policy"] == "notransfer:prior_var=1,rule=greedy"
    assert isinstance(row["version"], str) and row["wall_time"] >= 0


def test_random_scores_zero_in_expectation(dev):
    """Each world's random score has an exactly computable s.d. (about 0.7 points on dev):
    R - R_rand is a sum of independent zero-mean per-round terms (random's expected regret is
    R_rand exactly). So the mean score over 4 seeds has a standard error computed from U, and it
    must lie within 4 standard errors of 0."""
    scores, variances = [], []
    for seed in range(4):
        world = dev if seed == 0 else get_world("dev", seed)
        row = run_cell(world, "random")
        u = world.U
        regrets = np.stack(
            [2 * u.max(-1) - u[..., i] - u[..., j] for i, j in itertools.combinations(range(6), 2)],
            axis=-1,
        )
        sd = 100 * np.sqrt(regrets.var(axis=-1).sum()) / (row["R_rand"] - row["G"])
        scores.append(row["score"])
        variances.append(sd**2)
    se = np.sqrt(sum(variances)) / len(scores)
    assert 0.2 < se < 0.6
    assert abs(np.mean(scores)) < 4 * se


def test_notransfer_learns_but_stays_below_the_oracle(dev):
    refs = {r["policy"]: r for r in reference_rows(dev)}
    row = run_cell(dev, "notransfer")
    assert 10 < row["score"] < refs["ref:oracle-user"]["score"]
    assert row["G"] == refs["ref:floor"]["G"]
    assert row["R_rand"] == refs["ref:random"]["R_rand"]


# ---------------------------------------------------------------- policy errors

BAD_POLICIES = textwrap.dedent(
    """
    from prefduel.policies import Policy

    class Misbehaves(Policy):
        '''Shows (0, 1) except at arrival 1, round 2, where it does WHAT.'''
        name = "misbehaves"
        WHAT = None

        def reset(self, rng, context):
            super().reset(rng, context)
            self.n = -1

        def start_student(self):
            self.n += 1
            self.s = -1

        def select(self, Phi):
            self.s += 1
            if (self.n, self.s) == (1, 2):
                if self.WHAT == "raise":
                    raise KeyError("no such thing")
                if self.WHAT != "raise_update":
                    return self.WHAT
            return 0, 1

        def update(self, outcome):
            if (self.n, self.s) == (1, 2) and self.WHAT == "raise_update":
                raise ArithmeticError("update failed")

    class SameTwice(Misbehaves):
        WHAT = (3, 3)

    class OutOfRange(Misbehaves):
        WHAT = (0, 6)

    class Negative(Misbehaves):
        WHAT = (-1, 2)

    class Fractional(Misbehaves):
        WHAT = (1.5, 2)

    class Letter(Misbehaves):
        WHAT = ("a", 2)

    class Boolean(Misbehaves):
        WHAT = (True, 2)

    class Single(Misbehaves):
        WHAT = (4,)

    class Nothing(Misbehaves):
        WHAT = None

    class RaisesInSelect(Misbehaves):
        WHAT = "raise"

    class RaisesInUpdate(Misbehaves):
        WHAT = "raise_update"

    class WellBehaved(Misbehaves):
        WHAT = (4, 2)
    """
)


@pytest.mark.parametrize(
    ("cls", "why"),
    [
        ("SameTwice", "distinct"),
        ("OutOfRange", "outside 0..5"),
        ("Negative", "outside 0..5"),
        ("Fractional", "integers"),
        ("Letter", "integers"),
        ("Boolean", "integers"),
        ("Single", "exactly two"),
        ("Nothing", "two persona indices"),
        ("RaisesInSelect", "select() raised KeyError"),
        ("RaisesInUpdate", "update() raised ArithmeticError: update failed"),
    ],
)
def test_policy_errors_name_policy_world_seed_arrival_and_round(tmp_path, cls, why):
    path = tmp_path / "bad_policies.py"
    path.write_text(BAD_POLICIES)
    spec = f"{path}:{cls}"
    world = small_world()
    with pytest.raises(PolicyError) as info:
        run_cell(world, spec)
    msg = str(info.value)
    assert spec in msg
    assert "'tinyworld'" in msg
    assert re.search(r"\bseed 17\b", msg)
    assert re.search(r"\barrival 1\b", msg)
    assert re.search(r"\bround 2\b", msg)
    assert why in msg


def test_a_well_behaved_twin_runs(tmp_path):
    path = tmp_path / "bad_policies.py"
    path.write_text(BAD_POLICIES)
    row = run_cell(small_world(), f"{path}:WellBehaved", keep_trajectory=True)
    assert row["world"] == "tinyworld" and row["seed"] == 17
    traj = row["trajectory"]
    assert (traj.first[1, 2], traj.second[1, 2]) == (4, 2)
    assert (traj.first[0, 0], traj.second[0, 0]) == (0, 1)


class Returns(Policy):
    """Shows pairs cycling through (0, 1), (4, 2), (5, 3), returned through ``wrap``."""

    def __init__(self, wrap):
        self.wrap = wrap

    def reset(self, rng, context):
        super().reset(rng, context)
        self.t = 0

    def select(self, Phi):
        self.t += 1
        return self.wrap(((0, 1), (4, 2), (5, 3))[self.t % 3])

    def update(self, outcome):
        assert type(outcome) is int  # clicks reach update() as Python ints


@pytest.mark.parametrize(
    "wrap",
    [
        lambda p: (np.int64(p[0]), np.int64(p[1])),
        lambda p: list(p),
        lambda p: np.array(p, dtype=np.int32),
        lambda p: (p[0], np.intp(p[1])),
    ],
)
def test_any_pair_of_integers_plays_as_python_ints(wrap):
    world = small_world()
    plain = play(world, Returns(lambda p: p), np.random.default_rng(0))
    other = play(world, Returns(wrap), np.random.default_rng(0))
    for name in ("first", "second", "outcome"):
        np.testing.assert_array_equal(getattr(other, name), getattr(plain, name))
    assert plain.first.dtype == np.int64 and plain.outcome.dtype == np.int8
    assert (plain.first[1, 1], plain.second[1, 1]) == (4, 2)  # the 7th round of 5 a student


def test_a_policy_without_update_is_named_at_its_first_round():
    class NoUpdate:
        def reset(self, rng, context):
            pass

        def start_student(self):
            pass

        def select(self, Phi):
            return 0, 1

    with pytest.raises(PolicyError, match=r"arrival 0, round 0: update\(\) raised AttributeError"):
        play(small_world(), NoUpdate(), np.random.default_rng(0), label="noupdate")


def test_policies_cannot_modify_the_world():
    world = small_world()
    before = world.digest()

    class Vandal(Policy):
        def select(self, Phi):
            Phi[:, -1] = 0.0
            return 0, 1

    try:
        play(world, Vandal(), np.random.default_rng(0), label="vandal")
    except PolicyError:
        pass
    assert world.digest() == before


def test_a_world_without_preferences_is_a_named_error():
    from pb_toys import make_world
    from prefduel.core.errors import WorldFormatError

    world = make_world(0)
    world.U[:] = 0.5  # every persona equally good: random pairs meet the floor
    with pytest.raises(WorldFormatError, match="seed 0: random pairs do no worse than the floor"):
        run_cell(world, "random")
