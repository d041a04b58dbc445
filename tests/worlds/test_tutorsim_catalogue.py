"""TutorSim's catalogue formats (one entry type per YAML format) and its template students."""

from __future__ import annotations

import numpy as np
import pytest

from prefduel.core.errors import WorldFormatError
from prefduel.core.rng import stream
from prefduel.worlds import get_roster
from prefduel.worlds.tutorsim import generate_students
from prefduel.worlds.tutorsim_catalogue import (
    Chain,
    Cue,
    Kind,
    Persona,
    ProfileEntry,
    QuirkEntry,
    References,
    StyleDim,
    Topic,
    TraitEntry,
    parse_entries,
)
from prefduel.worlds.tutorsim_data import (
    PACKAGED_FILES,
    load_tutorsim_data,
    parse_quirks,
    read_data_file,
)
from prefduel.worlds.tutorsim_template import draw_template_students

DIMS = ("brevity", "rigor")


REFS = References(dims=DIMS)
ENTRY_OF = {
    "style": StyleDim,
    "personas": Persona,
    "kinds": Kind,
    "cues": Cue,
    "topics": Topic,
    "quirks": QuirkEntry,
    "students": ProfileEntry,
}


def _parse(entry, entries, refs=REFS):
    return parse_entries(entry, entries, refs, error=WorldFormatError, source="f.yaml", path="xs")


def _error(entry, entries, refs=REFS) -> str:
    with pytest.raises(WorldFormatError) as info:
        _parse(entry, entries, refs)
    return str(info.value)


def test_every_packaged_file_parses_with_its_entry_type():
    data = load_tutorsim_data()
    refs = References(dims=data.dims, quirks=tuple(q.id for q in data.quirks))
    counts = {}
    for name, pools in PACKAGED_FILES.items():
        for file, key in pools.values():
            counts[file, key] = len(_parse(ENTRY_OF[name], read_data_file(file)[key], refs))
    assert counts["style.yaml", "dims"] == 8 and counts["personas.yaml", "personas"] == 6
    assert counts["questions.yaml", "kinds"] == 3 and counts["questions.yaml", "cues"] == 13
    assert counts["quirks.yaml", "quirks"] == 10 and counts["profiles_dev.yaml", "profiles"] == 8


def test_entries_take_defaults_and_become_vectors_in_dim_order():
    (persona,) = _parse(Persona, [{"id": "a", "prompt": " Be brief.\n", "style": {"rigor": 1}}])
    assert persona == Persona(id="a", name="a", prompt="Be brief.", style=(0.0, 1.0))
    kinds = _parse(Kind, {"why": {"need": {"brevity": -0.5}}, "definition": None})
    assert [(k.id, k.description, k.need) for k in kinds] == [
        ("why", "why", (-0.5, 0.0)),
        ("definition", "definition", (0.0, 0.0)),
    ]
    (topic,) = _parse(Topic, [{"id": "big_o", "chains": ["loops", {"concept": "c", "why": "W?"}]}])
    assert topic.name == "big o" and topic.subject == ""
    assert topic.chains == (Chain(concept="loops"), Chain(concept="c", examples=(("why", "W?"),)))
    assert topic.chains[1].example("why") == "W?" and topic.chains[1].example("definition") is None


@pytest.mark.parametrize(
    ("entry", "entries", "expected"),
    [
        (Persona, [{"id": "a", "prompt": "p", "style": {"rigor": 2}}], "xs[0].style.rigor: value"),
        (Persona, [{"id": "a", "prompt": "p", "style": {"flair": 1}}], "unknown style dimension"),
        (Persona, [{"id": "a"}], "xs[0]: missing required keys ['prompt']"),
        (Persona, [{"id": "a b", "prompt": "p"}], "xs[0].id: expected an id"),
        (Persona, [{"id": "a", "prompt": "p"}, {"id": "a", "prompt": "q"}], "duplicate id 'a'"),
        (Persona, {"id": "a"}, "xs: expected a non-empty list, got dict"),
        (Topic, [{"id": "t", "chains": [{"concept": "c", "essay": "?"}]}], "keys ['essay']"),
        (QuirkEntry, [{"id": "q", "dim": "rigor", "sign": 0.5}], "xs[0].sign: sign must be 1"),
        (QuirkEntry, [{"id": "q", "dim": "rigor", "when_kind": "essay"}], "unknown kind 'essay'"),
        (TraitEntry, [{"id": "t", "values": [{"id": "v"}, {"id": "v"}]}], "duplicate id 'v'"),
    ],
)
def test_errors_name_the_file_and_the_entry_path(entry, entries, expected):
    message = _error(entry, entries)
    assert message.startswith("f.yaml: xs") and expected in message, message


def test_profiles_check_their_quirks_when_the_references_name_them():
    refs = References(dims=DIMS, quirks=("grumpy",))
    message = _error(ProfileEntry, [{"id": "s", "quirks": ["grumpy", "sleepy"]}], refs)
    assert "xs[0].quirks[1]: unknown quirk 'sleepy'; known: ['grumpy']" in message
    (student,) = _parse(ProfileEntry, [{"id": "s", "quirks": None, "cue_following": 2}], refs)
    assert (student.quirks, student.cue_following, student.taste) == ((), 2.0, (0.0, 0.0))


def test_roster_file_parsers_name_the_entry_by_its_id():
    with pytest.raises(WorldFormatError, match=r"^roster: quirk q: sign must be 1 or -1"):
        parse_quirks([{"id": "q", "dim": "rigor", "sign": 2}], DIMS, "roster")
    with pytest.raises(WorldFormatError, match=r"^roster: quirk q: dim: unknown style dimension"):
        parse_quirks([{"id": "q", "dim": "flair"}], DIMS, "roster")
    (quirk,) = parse_quirks([{"id": "q", "dim": "rigor", "sign": -1}], DIMS, "roster")
    assert (quirk.dim, quirk.sign, quirk.when_kind) == (1, -1.0, None)


@pytest.mark.parametrize("roster_id", ["test-composite", "test-quirky"])
def test_template_students_are_tutorsims_composite_and_quirky_students(roster_id):
    """`draw_template_students` draws TutorSim's own students from the same stream."""
    roster = get_roster(roster_id)
    data, params, n = roster.tutorsim_data(), roster.tutorsim_params(), roster.arrivals
    quirky = roster.students == "quirky"
    rng = stream(3, "tutorsim", roster.id, "students")
    rng.normal(scale=params.profile_jitter, size=(n, data.m))  # TutorSim's draws before them
    rng.normal(scale=params.cue_spread, size=n)
    drawn = draw_template_students(
        data.traits,
        n,
        rng,
        distinct=not quirky,
        quirks=data.quirks,
        quirks_each=params.quirks_per_student if quirky else 0,
    )
    students, _ = generate_students(roster, 3)
    assert [s.profile for s in drawn] == [s["profile"] for s in students]
    assert [s.description for s in drawn] == [s["description"] for s in students]
    assert [[q.id for q in s.quirks] for s in drawn] == [s["quirks"] for s in students]
    assert [list(s.combo) for s in drawn] == [s["traits"] for s in students]
    assert any(s.quirks for s in drawn) == quirky
    first = drawn[0]
    np.testing.assert_array_equal(first.taste_sum, sum(v.taste for v in first.values))
    assert first.cue_following == first.values[-1].cue_following
