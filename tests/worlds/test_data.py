"""TutorSim's data files load and have the sizes given in docs/design.md, section 9."""

from __future__ import annotations

import math

import numpy as np

from prefduel.worlds.tutorsim_data import KINDS, load_tutorsim_data


def test_counts():
    data = load_tutorsim_data()
    assert data.m == len(data.dims) == 8
    assert len(set(data.dims)) == 8
    assert len(data.personas) == 6
    assert data.persona_style.shape == (6, 8)
    assert data.kind_need.shape == (len(KINDS), 8) == (3, 8)
    assert len(data.cues) == 13
    assert data.cue_need.shape == (13, 8)
    assert len(data.profiles["dev"]) == 8
    assert len(data.profiles["heldout"]) == 8
    assert len(data.quirks) == 10
    assert len(data.traits) == 7
    assert math.prod(len(t.values) for t in data.traits) == 3072


def test_ids_are_unique_and_pools_disjoint():
    data = load_tutorsim_data()
    for items in (data.personas, data.cues, data.topics["dev"], data.topics["heldout"]):
        ids = [x["id"] for x in items]
        assert len(ids) == len(set(ids))
    assert len({q.id for q in data.quirks}) == 10
    dev = {p.id for p in data.profiles["dev"]}
    held = {p.id for p in data.profiles["heldout"]}
    assert len(dev) == len(held) == 8
    assert not dev & held
    assert not {t["id"] for t in data.topics["dev"]} & {t["id"] for t in data.topics["heldout"]}
    for trait in data.traits:
        assert len(trait.values) >= 2
        assert len({v.id for v in trait.values}) == len(trait.values)


def test_profiles_have_text_and_valid_values():
    data = load_tutorsim_data()
    quirk_ids = {q.id for q in data.quirks}
    for pool in ("dev", "heldout"):
        for p in data.profiles[pool]:
            assert p.description.strip(), p.id  # LLM judges need the text
            assert p.taste.shape == (8,)
            assert np.all(np.abs(p.taste) <= 1)
            assert set(p.quirks) <= quirk_ids
    for persona in data.personas:
        assert persona.get("prompt", "").strip(), persona["id"]
    for cue in data.cues:
        assert cue["text"].strip(), cue["id"]
    for q in data.quirks:
        assert 0 <= q.dim < 8
        assert q.sign in (-1.0, 1.0)
        assert q.when_kind in (None, *KINDS)


def test_loading_is_cached():
    assert load_tutorsim_data() is load_tutorsim_data()
