"""TutorSim worlds for every roster: shapes, invariants, determinism, roster semantics."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from collections import Counter

import numpy as np
import pytest

from prefduel.core.btl import fit_bt_ridge
from prefduel.core.errors import LockedRosterError, PrefduelError, UnknownIdError
from prefduel.worlds import ROSTERS, get_roster, get_world
from prefduel.worlds.tutorsim import generate_world
from prefduel.worlds.tutorsim_data import KINDS, load_tutorsim_data

SEED = 5


@pytest.fixture(scope="module")
def worlds():
    """One world per roster at SEED (about 0.25 s each)."""
    return {rid: get_world(rid, SEED, allow_test=True) for rid in ROSTERS}


@pytest.fixture(scope="module")
def data():
    return load_tutorsim_data()


def test_roster_table_matches_the_design():
    expected = {
        "dev": (300, 32, False),
        "test-topics": (350, 64, True),
        "test-profiles": (350, 64, True),
        "test-composite": (350, 32, True),
        "test-quirky": (350, 32, True),
        "control-scrambled": (350, 32, False),
        "control-unstructured": (350, 32, False),
    }
    assert {r.id: (r.arrivals, r.seeds, r.locked) for r in ROSTERS.values()} == expected
    assert get_roster("dev") is ROSTERS["dev"]


@pytest.mark.parametrize("roster_id", list(ROSTERS))
def test_shapes_and_invariants(worlds, roster_id):
    w = worlds[roster_id]
    n = ROSTERS[roster_id].arrivals
    assert (w.N, w.S, w.K, w.d) == (n, 24, 6, 7)
    assert w.Phi.shape == (n, 24, 6, 7)
    assert w.U.shape == (n, 24, 6)
    assert w.P.shape == (n, 24, 6, 6)
    assert w.u.shape == (n, 24)
    assert w.student_index.shape == (n,)
    assert w.question_index.shape == (n, 24)
    assert w.roster == w.name == roster_id
    assert w.seed == SEED
    w.validate()
    np.testing.assert_allclose(w.P + np.swapaxes(w.P, -1, -2), 1.0, atol=1e-12)
    np.testing.assert_array_equal(np.diagonal(w.P, axis1=-2, axis2=-1), 0.5)
    assert w.U.min() >= 0.0 and w.U.max() <= 1.0
    assert w.u.min() >= 0.0 and w.u.max() < 1.0
    # phi = [e_p, g]: persona indicators first
    np.testing.assert_array_equal(w.Phi[..., :6], np.broadcast_to(np.eye(6), (n, 24, 6, 6)))
    # the rater score is centered over personas for every question
    np.testing.assert_allclose(w.Phi[..., 6].sum(axis=-1), 0.0, atol=1e-12)
    assert len(w.personas) == 6
    assert 0 <= w.question_index.min() and w.question_index.max() < len(w.questions)
    assert 0 <= w.student_index.min() and w.student_index.max() < len(w.students)
    # metadata is JSON-serializable (it is stored in world.json)
    json.dumps([w.students, w.questions, w.personas, w.info])


@pytest.mark.parametrize("roster_id", list(ROSTERS))
def test_utilities_are_the_bt_fit_of_click_probabilities(worlds, roster_id):
    """U is the ridge BT fit of P on the common 8-logit scale (docs/design.md, section 9)."""
    w = worlds[roster_id]
    prm = w.info["params"]
    some = slice(0, None, 7)  # every 7th arrival keeps the test fast
    beta = fit_bt_ridge(w.P[some], ridge=prm["bt_ridge"])
    np.testing.assert_allclose(w.U[some], np.clip(0.5 + beta / prm["bt_scale"], 0, 1), atol=1e-9)


@pytest.mark.parametrize("roster_id", list(ROSTERS))
def test_features_depend_only_on_the_question(worlds, roster_id):
    """The rater score g is a property of (persona, question), the same for every student."""
    w = worlds[roster_id]
    g = w.Phi[..., 6]
    first = {}
    for q, row in zip(w.question_index.ravel(), g.reshape(-1, 6), strict=True):
        if q in first:
            np.testing.assert_array_equal(row, first[q])
        else:
            first[q] = row
    assert len(first) > 100


@pytest.mark.parametrize("roster_id", list(ROSTERS))
def test_sessions_are_four_topics_by_two_chains_by_three_kinds(worlds, roster_id, data):
    w = worlds[roster_id]
    cue_text = {c["id"]: c["text"].strip() for c in data.cues}
    for n in range(0, w.N, 7):
        qs = [w.questions[i] for i in w.question_index[n]]
        by_topic = Counter(q["topic"] for q in qs)
        assert len(by_topic) == 4 and set(by_topic.values()) == {6}
        for topic in by_topic:
            cells = {(q["chain"], q["kind"]) for q in qs if q["topic"] == topic}
            assert cells == {(c, k) for c in range(2) for k in KINDS}
    for q in w.questions:
        assert q["text"].endswith(cue_text[q["cue"]])
        assert len(q["text"]) > len(cue_text[q["cue"]])


def test_topic_pools(worlds, data):
    dev_topics = {t["id"] for t in data.topics["dev"]}
    held_topics = {t["id"] for t in data.topics["heldout"]}
    assert dev_topics and held_topics and not dev_topics & held_topics
    for rid, w in worlds.items():
        used = {w.questions[i]["topic"] for i in np.unique(w.question_index)}
        assert used <= (dev_topics if ROSTERS[rid].topics == "dev" else held_topics), rid
        assert ROSTERS[rid].topics == ("dev" if rid == "dev" else "heldout")


@pytest.mark.parametrize(
    ("roster_id", "pool"),
    [("dev", "dev"), ("test-topics", "dev"), ("test-profiles", "heldout")],
)
def test_hand_written_rosters_use_their_profiles(worlds, data, roster_id, pool):
    w = worlds[roster_id]
    counts = Counter(s["profile"] for s in w.students)
    assert set(counts) == {p.id for p in data.profiles[pool]}
    assert max(counts.values()) - min(counts.values()) <= 1  # balanced over arrivals


def test_composite_students_are_distinct_trait_combinations(worlds, data):
    w = worlds["test-composite"]
    combos = [tuple(s["traits"]) for s in w.students]
    assert len(combos) == 350
    assert len(set(combos)) == 350
    sizes = [len(t.values) for t in data.traits]
    for combo in combos:
        assert len(combo) == 7
        assert all(0 <= v < size for v, size in zip(combo, sizes, strict=True))
    assert all(s["quirks"] == [] for s in w.students)
    assert all(s["description"].strip() for s in w.students)


def test_quirky_students_have_two_distinct_quirks(worlds, data):
    w = worlds["test-quirky"]
    quirk_ids = {q.id for q in data.quirks}
    assert len(w.students) == 350
    for s in w.students:
        assert len(s["quirks"]) == 2
        assert len(set(s["quirks"])) == 2
        assert set(s["quirks"]) <= quirk_ids
        assert len(s["traits"]) == 7
    # all ten quirks are in use across 350 students
    assert {q for s in w.students for q in s["quirks"]} == quirk_ids


def test_scrambled_permutes_utilities_and_clicks_but_not_features(worlds):
    """control-scrambled == the same held-out world with each student's persona labels permuted.

    The unscrambled twin is the same roster row with plain held-out students: every random stream
    is keyed by roster id and part, so it draws exactly the same students and questions.
    """
    w = worlds["control-scrambled"]
    twin = generate_world(
        dataclasses.replace(ROSTERS["control-scrambled"], students="heldout-profiles"), SEED
    )
    perms = np.array([s["permutation"] for s in w.students])
    assert perms.shape == (350, 6)
    assert all(sorted(p) == list(range(6)) for p in perms.tolist())
    assert len({tuple(p) for p in perms.tolist()}) > 200  # differ across students
    assert (perms != np.arange(6)).any(axis=1).mean() > 0.9
    assert [s["profile"] for s in w.students] == [s["profile"] for s in twin.students]
    np.testing.assert_array_equal(w.Phi, twin.Phi)
    np.testing.assert_array_equal(w.question_index, twin.question_index)
    np.testing.assert_array_equal(w.u, twin.u)
    np.testing.assert_array_equal(w.U, np.take_along_axis(twin.U, perms[:, None, :], axis=2))
    n = np.arange(w.N)[:, None, None, None]
    s = np.arange(w.S)[None, :, None, None]
    np.testing.assert_array_equal(
        w.P, twin.P[n, s, perms[:, None, :, None], perms[:, None, None, :]]
    )
    assert not np.array_equal(w.U, twin.U)


def test_unstructured_students_have_isotropic_thetas(worlds):
    w = worlds["control-unstructured"]
    theta = np.array([s["theta"] for s in w.students])
    assert theta.shape == (350, 7)
    assert abs(theta.mean()) < 0.1
    assert 0.9 < theta.std() < 1.1


# ---------------------------------------------------------------- determinism


def test_same_roster_and_seed_give_identical_worlds(worlds):
    again = get_world("dev", SEED)
    assert again.digest() == worlds["dev"].digest()
    assert again.students == worlds["dev"].students
    assert again.questions == worlds["dev"].questions


def test_different_seeds_and_rosters_give_different_worlds(worlds):
    other = get_world("dev", SEED + 1)
    assert other.digest() != worlds["dev"].digest()
    assert (other.U != worlds["dev"].U).mean() > 0.9
    assert (other.u != worlds["dev"].u).all()
    assert len({w.digest() for w in worlds.values()}) == len(worlds)


def test_worlds_are_identical_in_a_process_with_another_hash_seed(worlds):
    ids = ["dev", "test-quirky", "control-scrambled"]
    code = (
        "import json, sys\n"
        "from prefduel.worlds import get_world\n"
        "ids, seed = json.loads(sys.argv[1]), int(sys.argv[2])\n"
        "print(json.dumps({r: get_world(r, seed, allow_test=True).digest() for r in ids}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, json.dumps(ids), str(SEED)],
        env={**os.environ, "PYTHONHASHSEED": "987654"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(out.stdout) == {r: worlds[r].digest() for r in ids}


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize("roster_id", [r.id for r in ROSTERS.values() if r.locked])
def test_locked_rosters_need_allow_test(roster_id):
    with pytest.raises(LockedRosterError) as info:
        get_world(roster_id, 0)
    assert "--allow-test" in str(info.value)
    assert repr(roster_id) in str(info.value)


def test_locked_rosters_are_exactly_the_test_rosters():
    assert {r.id for r in ROSTERS.values() if r.locked} == {
        r for r in ROSTERS if r.startswith("test-")
    }


@pytest.mark.parametrize("name", ["nosuch", "Dev", "test_topics"])
def test_unknown_roster_lists_known_rosters(name):
    with pytest.raises(UnknownIdError) as info:
        get_world(name, 0)
    msg = str(info.value)
    assert repr(name) in msg
    for rid in ROSTERS:
        assert rid in msg
    assert isinstance(info.value, PrefduelError)
