"""check_policy: every registered policy passes; broken policies are caught and explained."""

from __future__ import annotations

import numpy as np
import pytest

from prefduel.core.errors import PolicyError
from prefduel.policies import POLICIES, Policy, PolicyProtocol, check_policy, load_policy


@pytest.mark.parametrize("policy_id", POLICIES.ids())
def test_every_registered_policy_passes(policy_id):
    check_policy(lambda: load_policy(policy_id))


@pytest.mark.parametrize("spec", ["notransfer:rule=ts", "pooled:rule=ts", "notransfer:prior_var=3"])
def test_policies_with_settings_pass(spec):
    check_policy(lambda: load_policy(spec))


@pytest.mark.parametrize("policy_id", POLICIES.ids())
def test_registered_policies_follow_the_protocol(policy_id):
    policy = load_policy(policy_id)
    assert isinstance(policy, PolicyProtocol)
    assert isinstance(policy.name, str) and policy.name


def test_check_policy_accepts_a_class_an_instance_and_a_factory():
    cls = POLICIES.get("notransfer")
    check_policy(cls)
    check_policy(cls(rule="ts"))
    check_policy(lambda: cls(rule="ts"))


# ---------------------------------------------------------------- broken policies


class GoodCounter(Policy):
    """Counts rounds; all state is built in reset(). The twin of KeepsState."""

    name = "good-counter"

    def reset(self, rng, context):
        super().reset(rng, context)
        self.t = 0

    def select(self, Phi):
        self.t += 1
        return (0, 1) if self.t <= 10 else (2, 3)  # a warm-up phase, then exploitation


class KeepsState(Policy):
    """Builds its counter in __init__, so a second reset() does not start over."""

    name = "keeps-state"

    def __init__(self):
        self.t = 0

    def select(self, Phi):
        self.t += 1
        return (0, 1) if self.t <= 10 else (2, 3)  # a warm-up phase, then exploitation


class SameTwice(Policy):
    name = "same-twice"

    def start_student(self):
        self.r = 0

    def select(self, Phi):
        self.r += 1
        return (3, 3) if self.r == 5 else (0, 1)


class GlobalRandom(Policy):
    name = "global-random"

    def select(self, Phi):
        i, j = np.random.choice(self.K, size=2, replace=False)  # noqa: NPY002  (the bug)
        return int(i), int(j)


class UnseededGenerator(Policy):
    name = "unseeded"

    def reset(self, rng, context):
        super().reset(rng, context)
        self.own = np.random.default_rng()  # the bug: not derived from rng

    def select(self, Phi):
        i, j = self.own.choice(self.K, size=2, replace=False)
        return int(i), int(j)


class SeededFromGiven(UnseededGenerator):
    """The twin of UnseededGenerator that derives its generator correctly."""

    name = "seeded"

    def reset(self, rng, context):
        Policy.reset(self, rng, context)
        self.own = np.random.default_rng(rng.integers(2**63))


class ReturnsFloat(Policy):
    name = "returns-float"

    def select(self, Phi):
        return 0, 1.5


class OutOfRange(Policy):
    name = "out-of-range"

    def select(self, Phi):
        return 0, self.K


class RaisesInSelect(Policy):
    name = "raises"

    def select(self, Phi):
        raise ZeroDivisionError("boom")


class WritesFeatures(Policy):
    name = "writes-features"

    def select(self, Phi):
        Phi[0, 0] = 1.0
        return 0, 1


class NoUpdate:
    name = "no-update"

    def reset(self, rng, context): ...
    def start_student(self): ...
    def select(self, Phi):
        return 0, 1

    def end_student(self): ...


@pytest.mark.parametrize("good", [GoodCounter, SeededFromGiven])
def test_correct_twins_pass(good):
    check_policy(good)


@pytest.mark.parametrize(
    ("broken", "fragments"),
    [
        (SameTwice, ["'same-twice'", "distinct", "student 0, round 4"]),
        (KeepsState, ["'keeps-state'", "reset() must rebuild all state"]),
        (GlobalRandom, ["'global-random'", "not deterministic under a seed"]),
        (UnseededGenerator, ["'unseeded'", "not deterministic under a seed"]),
        (ReturnsFloat, ["'returns-float'", "integers", "1.5"]),
        (OutOfRange, ["'out-of-range'", "outside 0..5"]),
        (RaisesInSelect, ["'raises'", "ZeroDivisionError", "boom", "student 0, round 0"]),
        (WritesFeatures, ["'writes-features'", "read-only"]),
        (NoUpdate, ["'no-update'", "update()"]),
    ],
)
def test_broken_policies_fail_with_policy_error(broken, fragments):
    with pytest.raises(PolicyError) as info:
        check_policy(broken)
    for fragment in fragments:
        assert fragment in str(info.value)


def test_reusing_a_stateful_instance_is_caught_too():
    with pytest.raises(PolicyError, match="not deterministic"):
        check_policy(KeepsState())
