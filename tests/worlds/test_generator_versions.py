"""TutorSim generator versions: ``ROSTER@1`` keeps version-1 worlds reproducible, version 2 gives
the evaluation rosters the shared structure of the paper's, and what did not change stays
bit-identical."""

from __future__ import annotations

import numpy as np
import pytest

from prefduel.core.errors import UnknownIdError
from prefduel.runner.references import reference_rows
from prefduel.worlds import get_roster, get_world, world_kind
from prefduel.worlds.tutorsim import generate_students
from prefduel.worlds.tutorsim_data import CURRENT_VERSION, load_tutorsim_data

#: Scores of version-1 worlds at seed 0, measured with the generator before version 2 existed.
V1_REFERENCE_SCORES = {
    "test-profiles": (72.325502, 81.942915),
    "test-composite": (70.726235, 82.129695),
    "test-quirky": (72.714151, 83.333978),
    "control-scrambled": (71.170308, 72.514198),
}


def _scores(world) -> tuple[float, float]:
    rows = {r["policy"]: r["score"] for r in reference_rows(world)}
    return rows["ref:best-pair-per-user"], rows["ref:oracle-user"]


@pytest.mark.parametrize("roster", sorted(V1_REFERENCE_SCORES))
def test_version_1_reproduces_the_first_generator(roster):
    world = get_world(f"{roster}@1", 0, allow_test=True)
    assert world.roster == f"{roster}@1"
    assert world.info["generator_version"] == 1
    np.testing.assert_allclose(_scores(world), V1_REFERENCE_SCORES[roster], atol=1e-5)


@pytest.mark.parametrize("roster", ["dev", "test-topics", "control-unstructured"])
def test_rosters_without_versioned_data_are_identical_across_versions(roster):
    new, old = get_world(roster, 1, allow_test=True), get_world(f"{roster}@1", 1, allow_test=True)
    for name in ("Phi", "U", "P", "u", "question_index"):
        np.testing.assert_array_equal(getattr(new, name), getattr(old, name), err_msg=name)
    assert new.roster == roster and old.roster == f"{roster}@1"


def test_version_2_changes_the_evaluation_rosters():
    new = load_tutorsim_data(2)
    old = load_tutorsim_data(1)
    assert CURRENT_VERSION == 2
    assert np.any(new.shared_taste != 0) and not np.any(old.shared_taste)
    assert {p.id for p in new.profiles["heldout"]}.isdisjoint(p.id for p in old.profiles["heldout"])
    for a, b in zip(new.profiles["dev"], old.profiles["dev"], strict=True):
        assert a.id == b.id and np.array_equal(a.taste, b.taste)
    # held-out tastes cover the style space evenly: about zero mean on every dimension
    tastes = np.stack([p.taste for p in new.profiles["heldout"]])
    assert np.all(np.abs(tastes.mean(axis=0)) < 0.05)


def test_template_students_get_the_shared_taste():
    roster = get_roster("test-composite")
    students, _ = generate_students(roster, 0)
    old_students, _ = generate_students(get_roster("test-composite@1"), 0)
    # same streams: the same trait combinations, different hidden tastes
    assert [s["profile"] for s in students] == [s["profile"] for s in old_students]


def test_version_suffix_is_validated():
    assert world_kind("dev@1") == world_kind("dev") == "roster"
    with pytest.raises(UnknownIdError, match=r"generator version '7'.*known versions: 1, 2"):
        get_roster("dev@7")
    with pytest.raises(UnknownIdError, match="unknown roster 'nope'"):
        get_roster("nope@1")


def test_locked_rosters_stay_locked_in_every_version():
    from prefduel.core.errors import LockedRosterError

    with pytest.raises(LockedRosterError):
        get_world("test-profiles@1", 0)
