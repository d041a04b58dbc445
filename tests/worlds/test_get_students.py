"""``WorldSpec.students``: the students table of a world without generating the world."""

from __future__ import annotations

import numpy as np
import pytest

from pb_toys import save_world
from prefduel.core.errors import LockedRosterError, UnknownIdError
from prefduel.worlds import ROSTERS, get_world, parse_world


def get_students(name, seed, allow_test=False):
    return parse_world(name).students(seed, allow_test=allow_test)

#: Every roster (each kind of students) at its own seed, and a second seed for the kinds whose
#: tables depend most on the draws (template combinations with quirks, permutations).
CASES = [(rid, 11 + i) for i, rid in enumerate(ROSTERS)] + [
    ("test-quirky", 41),
    ("control-scrambled", 42),
]


@pytest.mark.parametrize(("roster_id", "seed"), CASES)
def test_equals_the_world(roster_id, seed):
    students, index = get_students(roster_id, seed, allow_test=True)
    world = get_world(roster_id, seed, allow_test=True)
    assert students == world.students
    assert index.dtype == world.student_index.dtype
    np.testing.assert_array_equal(index, world.student_index)


def test_seeds_differ():
    a, _ = get_students("dev", 0)
    b, _ = get_students("dev", 1)
    assert [s["profile"] for s in a] != [s["profile"] for s in b]


def test_same_checks_as_get_world(tmp_path):
    with pytest.raises(LockedRosterError, match="allow_test=True"):
        get_students("test-profiles", 0)
    with pytest.raises(UnknownIdError, match="unknown roster 'nope'"):
        get_students("nope", 0)
    path = save_world(tmp_path / "toy")
    students, index = get_students(path, 5)
    world = get_world(path, 5)
    assert students == world.students
    np.testing.assert_array_equal(index, world.student_index)
