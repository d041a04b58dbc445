"""Personas and sparse preference profiles: seeded, plausible, sparse, Σw = 1, trait-consistent."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from prefduel.core.rng import stream
from prefduel.prefdisco import (
    DatasetError,
    SparsityConfig,
    TaxonomyError,
    builtin_tasks,
    load_personas,
    load_taxonomy,
    sample_personas,
    sample_profile,
    save_personas,
)
from prefduel.prefdisco.dataset.personas import (
    BIG_FIVE,
    big_five_distance,
    load_persona_space,
    trait_vector,
)
from prefduel.prefdisco.dataset.preferences import (
    Preference,
    PreferenceProfile,
    _value,
    check_weights,
    load_profiles,
    save_profiles,
)

TAX = load_taxonomy()
TASKS = {t.id: t for t in builtin_tasks()}
PERSONAS, STATS = sample_personas(40, 7)


def test_personas_are_seeded_plausible_and_diverse():
    again, _ = sample_personas(40, 7)
    assert [p.to_json() for p in again] == [p.to_json() for p in PERSONAS]
    assert [p.id for p in PERSONAS] == [f"p{i:04d}" for i in range(40)]
    assert sample_personas(3, 8)[0][0].to_json() != PERSONAS[0].to_json()
    space = load_persona_space()
    ranks = {r["value"]: r for r in space.education}
    occupations = {o["value"]: o for o in space.occupations}
    for p in PERSONAS:
        for trait in BIG_FIVE:
            items = p.big_five_items[trait]
            assert len(items) == 10 and all(1 <= x <= 5 for x in items)
            assert p.big_five[trait] == pytest.approx(sum(items) / 10)
        job = occupations[p.occupation]
        assert ranks[p.education]["rank"] >= ranks[job["min_education"]]["rank"]
        assert p.age >= max(job["min_age"], ranks[p.education]["min_age"])
        assert all(1 <= e <= 5 for e in p.expertise.values())
    assert STATS.implausible > 0  # rejection sampling did reject
    distances = [big_five_distance(a, b) for i, a in enumerate(PERSONAS) for b in PERSONAS[i + 1 :]]
    assert min(distances) >= 0.35 or STATS.relaxed > 0


def test_persona_library_round_trip(tmp_path):
    path = tmp_path / "personas.jsonl"
    assert save_personas(path, PERSONAS[:5]) == 5
    assert [p.to_json() for p in load_personas(path)] == [p.to_json() for p in PERSONAS[:5]]
    path.write_text(path.read_text().replace('"age": ', '"age": "old", "x": ', 1))
    with pytest.raises(DatasetError, match="line 1"):
        load_personas(path)


def _profiles(config=None, seed=0):
    return [
        sample_profile(p, t, TAX, seed=seed, config=config)
        for p in PERSONAS[:12]
        for t in TASKS.values()
    ]


def test_profiles_are_sparse_with_weights_summing_to_one():
    profiles = _profiles()
    sizes = [len(p) for p in profiles]
    assert set(sizes) == {3, 4, 5}
    for profile in profiles:
        weights = [x.weight for x in profile]
        assert abs(math.fsum(weights) - 1.0) <= 1e-9
        assert all(w > 0 for w in weights) and weights == sorted(weights, reverse=True)
        assert len(set(profile.attributes)) == len(profile)
        families = [TAX[a].family for a in profile.attributes]
        assert max(families.count(f) for f in families) <= 2
        domain = TASKS[profile.task_id].domain
        assert all(TAX[a].relevance_for(domain) > 0 for a in profile.attributes)
        profile.check(TAX)
    # concentrated on what is relevant: attributes of relevance 1 dominate math profiles
    math_attrs = [a for p in profiles if TASKS[p.task_id].domain == "math" for a in p.attributes]
    top = sum(TAX[a].relevance_for("math") >= 0.9 for a in math_attrs) / len(math_attrs)
    assert top > 0.5


def test_profiles_are_seeded_and_stored(tmp_path):
    first, second = _profiles(seed=4), _profiles(seed=4)
    assert [p.to_json() for p in first] == [p.to_json() for p in second]
    assert [p.to_json() for p in first] != [p.to_json() for p in _profiles(seed=5)]
    path = tmp_path / "preferences.jsonl"
    save_profiles(path, first)
    assert [p.to_json() for p in load_profiles(path, TAX)] == [p.to_json() for p in first]
    lines = path.read_text().splitlines()
    row = json.loads(lines[1])
    row["preferences"][0]["weight"] += 0.01
    lines[1] = json.dumps(row)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DatasetError, match=r"line 2: .*sum to 1"):
        load_profiles(path, TAX)


def test_sparsity_settings():
    k2 = _profiles(SparsityConfig(k_min=2, k_max=2))
    assert {len(p) for p in k2} == {2}
    flat = _profiles(SparsityConfig(dirichlet_alpha=1000.0))
    assert all(max(p.weights.values()) - min(p.weights.values()) < 0.15 for p in flat)
    spiky = _profiles(SparsityConfig(dirichlet_alpha=0.05))
    assert np.mean([max(p.weights.values()) for p in spiky]) > 0.8
    with pytest.raises(ValueError, match="k_max"):
        SparsityConfig(k_min=4, k_max=3)
    with pytest.raises(TaxonomyError, match="too large"):
        sample_profile(
            PERSONAS[0],
            TASKS["builtin-math-1"],
            TAX,
            seed=0,
            config=SparsityConfig(k_min=1, k_max=30, max_per_family=1),
        )


def test_values_follow_the_traits():
    """A persona's expertise in the domain drives the assumed-background level."""
    personas, _ = sample_personas(150, 11, min_distance=0)
    attribute = TAX["expertise.background"]
    pairs = []
    for p in personas:
        level = _value(attribute, trait_vector(p, "medicine"), stream(1, p.id), 0.6)
        pairs.append((p.expertise["medicine"], attribute.index(level)))
    x, y = np.array(pairs).T
    assert np.corrcoef(x, y)[0, 1] > 0.5


def test_weight_checks():
    check_weights([0.25, 0.75])
    for bad in ([0.5, 0.6], [1.0, 0.0], [float("nan"), 1.0], []):
        with pytest.raises(ValueError):
            check_weights(bad)
    with pytest.raises(ValueError, match="duplicate"):
        PreferenceProfile("p", "t", (Preference("a.b", "x", 0.5), Preference("a.b", "y", 0.5)))
