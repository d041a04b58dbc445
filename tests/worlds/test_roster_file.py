"""Roster files: a user's own TutorSim population in YAML, wherever a roster id works."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from prefduel.core.errors import LockedRosterError, PrefduelError
from prefduel.worlds import get_roster, get_world, world_kind
from prefduel.worlds.roster_file import RosterFileError
from prefduel.worlds.tutorsim import generate_students

REPO = Path(__file__).resolve().parents[2]
ARRAYS = ("Phi", "U", "P", "u", "question_index", "student_index")


def _write(folder: Path, name: str, text: str) -> str:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def _same_arrays(a, b) -> bool:
    return all(np.array_equal(getattr(a, n), getattr(b, n)) for n in ARRAYS)


def test_naming_the_packaged_heldout_profiles_reproduces_test_profiles(tmp_path):
    path = _write(tmp_path, "same.yaml", "base: test-profiles\nprofiles: {builtin: heldout}\n")
    world = get_world(path, 3, allow_test=True)
    base = get_world("test-profiles", 3, allow_test=True)
    assert _same_arrays(world, base)
    assert world.students == base.students
    assert world.roster == path and base.roster == "test-profiles"


def test_a_file_on_a_locked_base_is_locked(tmp_path):
    path = _write(tmp_path, "same.yaml", "base: test-profiles\n")
    with pytest.raises(LockedRosterError):
        get_world(path, 0)


def test_a_file_can_name_an_older_generator(tmp_path):
    path = _write(tmp_path, "old.yaml", "base: test-quirky@1\n")
    assert _same_arrays(
        get_world(path, 1, allow_test=True), get_world("test-quirky@1", 1, allow_test=True)
    )


@pytest.fixture
def example(tmp_path) -> str:
    for name in ("my_roster.yaml", "my_students.yaml"):
        shutil.copy(REPO / "examples" / name, tmp_path / name)
    return str(tmp_path / "my_roster.yaml")


def test_the_example_roster_generates_new_students(example):
    roster = get_roster(example)
    assert (roster.arrivals, roster.topics, roster.locked) == (120, "heldout", False)
    world = get_world(example, 0)
    profiles = {s["profile"] for s in world.students}
    assert profiles == {"shift_worker", "retired_engineer", "new_parent", "language_learner"}
    assert world.U.shape == (120, 24, 6)
    assert world.info["params"]["judge_samples"] == 6
    assert world.info["params"]["profile_jitter"] == 0.25
    heldout_topics = {q["topic"] for q in get_world("test-topics", 0, allow_test=True).questions}
    assert {q["topic"] for q in world.questions} == heldout_topics
    # the cheap student lookup agrees with the world
    students, index = generate_students(roster, 0)
    assert students == world.students and np.array_equal(index, world.student_index)
    assert world_kind(example) == "roster-file"


def test_new_quirks_and_template_settings(tmp_path):
    path = _write(
        tmp_path,
        "quirky.yaml",
        "base: test-composite\n"
        "students: quirky\n"
        "quirks: [{id: loves_layout, description: You love headings., dim: structure, sign: 1}]\n"
        "template: {shared_taste: {brevity: 0.8}}\n"
        "params: {quirks_per_student: 3}\n"
        "arrivals: 40\n",
    )
    world = get_world(path, 0, allow_test=True)
    assert all(len(s["quirks"]) == 3 for s in world.students)
    assert any("loves_layout" in s["quirks"] for s in get_world(path, 1, allow_test=True).students)
    roster = get_roster(path)
    assert roster.tutorsim_data().shared_taste[0] == 0.8


BAD_FILES = [
    ("studnets: composite\n", r"unknown fields \['studnets'\]; .*did you mean 'students'"),
    ("students: everyone\n", r"students: expected one of 'profiles', 'composite'"),
    ("params: {rater_nose: 1}\n", r"unknown knobs \['rater_nose'\]; allowed: taste_scale"),
    ("params: {judge_samples: 2.5}\n", r"params.judge_samples: must be an integer"),
    ("params: {utility_noise: -1}\n", r"params.utility_noise: must be >= 0"),
    ("arrivals: 0\n", r"arrivals: expected an integer >= 1, got 0"),
    ("topics: moon\n", r"topics: expected one of 'dev' or 'heldout', got 'moon'"),
    ("profiles: {builtin: heldout, take: [nobody]}\n", r"take names unknown ids \['nobody'\]"),
    ("profiles: {builtin: heldout, file: x.yaml}\n", r"exactly one of builtin, file"),
    ("profiles: {bultin: heldout}\n", r"profiles: unknown fields \['bultin'\]; expected"),
    ("profiles: {file: missing.yaml}\n", r"profiles: file .*missing.yaml does not exist"),
    ("profiles: [{id: a, taste: {brevity: 3}}]\n", r"profile a: taste: value of 'brevity'"),
    ("profiles: [{id: a, taste: {flair: 1}}]\n", r"unknown style dimension 'flair'"),
    ("profiles: [{id: a, quirks: [grumpy]}]\n", r"profile a: unknown quirks \['grumpy'\]"),
    ("profiles: [{id: a}, {id: a}]\n", r"id 'a' appears twice"),
    ("quirks: [{id: q, dim: rigor, sign: 2}]\n", r"quirk q: sign must be 1 or -1"),
    ("template: {colour: red}\n", r"template: unknown fields \['colour'\]; expected"),
    ("students: quirky\nparams: {quirks_per_student: 11}\n", r"only 10 quirks exist"),
    ("params: {profile_jitter: .nan}\n", r"profile_jitter: expected a finite number, got nan"),
    ("params: {judge_beta: .inf}\n", r"params.judge_beta: expected a finite number, got inf"),
    ("params: {judge_beta: 1.0e+300}\n", r"params.judge_beta: 1e\+300 is not a finite number"),
    ("params: {judge_samples: 0}\n", r"params.judge_samples: must be an integer from 1 to"),
    ("params: {judge_samples: 100000000}\n", r"params.judge_samples: must be an integer from 1"),
    ("arrivals: 1000000000000\n", r"arrivals: expected an integer <= 100000, got 1000000000000"),
    ("seeds: 1000000000\n", r"seeds: expected an integer <= 10000, got 1000000000"),
    ("params: {bt_ridge: 1.0e-300}\n", r"params.bt_ridge: must be at least 1e-06"),
]


@pytest.mark.parametrize(("body", "message"), BAD_FILES)
def test_bad_roster_files_name_the_file_and_the_field(tmp_path, body, message):
    path = _write(tmp_path, "bad.yaml", "base: dev\n" + body)
    with pytest.raises(RosterFileError, match=message) as info:
        get_roster(path)
    assert "bad.yaml" in str(info.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("base: devv\n", r"base: 'devv' is not a built-in roster id; allowed: dev, test-topics"),
        ("name: x\n", r"\(top level\): missing required keys \['base'\]"),
        ("- base: dev\n", r"expected a mapping"),
        ("base: [dev\n", r"not valid YAML"),
    ],
)
def test_bad_base_or_shape(tmp_path, text, message):
    with pytest.raises(PrefduelError, match=message):
        get_roster(_write(tmp_path, "bad.yaml", text))


def test_a_missing_roster_file_is_named(tmp_path):
    with pytest.raises(RosterFileError, match=r"roster file .*nope.yaml does not exist"):
        get_world(str(tmp_path / "nope.yaml"), 0)
