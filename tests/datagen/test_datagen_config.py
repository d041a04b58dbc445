"""Datagen configs: the example loads; every error names the file and the field."""

from __future__ import annotations

import re

import pytest
import yaml
from pb_datagen_helpers import SMALL, tiny_mapping

from prefduel.cli.main import main
from prefduel.datagen import DatagenConfigError, load_config, split_config


def test_example_config_loads():
    config = load_config(SMALL)
    assert config.name == "small"
    assert config.K == 6 and len(config.students) == 2
    assert config.n_questions == 24 and config.rounds == 24
    assert [s.id for s in config.students] == ["nursing_student", "math_major"]
    assert config.llm.backend == "scripted" and config.llm.budget == 2.0
    assert config.models["judge"].request_params() == {"temperature": 1.0, "max_tokens": 4}
    bank = split_config(config).questions.bank()
    assert len({q.id for q in bank}) == 24
    assert {q.kind for q in bank} == {"definition", "computation", "why"}
    assert all(q.example for q in bank)  # TutorSim's topics carry example questions



def test_each_stage_gets_its_own_part_of_the_config(tmp_path):
    data = tiny_mapping(
        judge={"mode": "logprobs", "top_logprobs": 3, "min_valid": 0.7},
        retries={"rater": 5},
        rater={"scale": [0, 4]},
        bt={"ridge": 0.5},
        prompts={"answer_user": "Please answer: {question}"},
        models={"default": "m-default", "judge": "m-judge"},
    )
    config = load_config(_write(tmp_path, data))
    stages = split_config(config)
    assert len(stages.questions.bank()) == config.n_questions == 6
    assert stages.answers.user == "Please answer: {question}"
    assert [p.id for p in stages.answers.personas] == list(stages.judge.persona_ids)
    assert stages.rater.scale == (0.0, 4.0) and stages.rater.calls.tries == 6
    judge = stages.judge
    assert (judge.mode, judge.top_logprobs, judge.samples) == ("logprobs", 3, 1)
    assert [s.id for s in judge.students] == ["math_major", "anxious_high_schooler"]
    world = stages.world
    assert (world.min_valid, world.bt_ridge, world.arrivals, world.rounds) == (0.7, 0.5, 8, 6)
    assert stages.models() == {
        "question": "m-default",
        "answer": "m-default",
        "rater": "m-default",
        "judge": "m-judge",
        "student": "m-judge",  # the students answer preference questions as the judge
    }
    assert (stages.run.students, stages.run.questions, stages.run.personas) == (2, 6, 6)
    assert stages.run.record == config.to_json()
    scripted = split_config(config, scripted=True)
    assert len(set(scripted.models().values())) == 1  # the scripted truth's fingerprint
    assert scripted.judge.students == judge.students

def _write(tmp_path, data, name="cfg.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return path


def _error(tmp_path, data) -> str:
    path = _write(tmp_path, data)
    with pytest.raises(DatagenConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert str(path) in message or "prefduel/worlds/data" in message, message
    return message


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        ({"colour": 1}, "(top level)", "unknown keys ['colour']"),
        ({"samples": "four"}, "samples", "expected an integer"),
        ({"samples": 0}, "samples", ">= 1"),
        ({"seed": -1}, "seed", ">= 0"),
        ({"topics": None}, "topics", "expected 'builtin', a list"),
        ({"topics": {"builtin": "moon"}}, "topics.builtin", "expected one of"),
        ({"topics": {"builtin": "dev", "take": ["nope"]}}, "topics.take[0]", "unknown id 'nope'"),
        ({"topics": {"builtin": "dev", "take": 99}}, "topics.take", "expected 1..12"),
        ({"students": {"builtin": "dev", "take": 0}}, "students.take", "expected 1..8"),
        ({"world": {"rounds": 7}}, "world.rounds", "at most 6"),
        ({"world": {"arrivals": 0}}, "world.arrivals", ">= 1"),
        ({"models": {"judge": {"temperature": "hot"}}}, "models.judge.temperature", "number"),
        ({"models": {"judge": {"params": {"n": 4}}}}, "models.judge.params", "'n' cannot"),
        ({"models": {"critic": "gpt"}}, "models", "unknown keys ['critic']"),
        ({"retries": {"judge": -1}}, "retries.judge", ">= 0"),
        ({"rater": {"scale": [10, 1]}}, "rater.scale", "lowest < highest"),
        ({"bt": {"ridge": 0}}, "bt.ridge", ">= 1e-06"),
        ({"scripted": {"judge_malformed": 2}}, "scripted.judge_malformed", "<= 1"),
        ({"scripted": {"judge_temperature": 1}}, "scripted", "unknown keys"),
        ({"llm": {"backend": "carrier-pigeon"}}, "llm", "backend"),
        ({"budget": 1, "llm": {"budget": 2}}, "budget", "keep one"),
        ({"budget": -1}, "budget", ">= 0"),  # a top-level shortcut is named as written
        ({"cache": [1]}, "cache", "expected a string"),
        ({"llm": {"cache": [1]}}, "llm.cache", "expected a string"),
        (
            {"prompts": {"judge_user": "Pick one: {answer_1} {answer_2}"}},
            "prompts.judge_user",
            "missing placeholders",
        ),
        (
            {"prompts": {"answer_user": "{question} {mood}"}},
            "prompts.answer_user",
            "unknown placeholders ['mood']",
        ),
        ({"prompts": {"judge_hint": "x"}}, "prompts", "unknown keys ['judge_hint']"),
        ({"questions": {"cues_per_question": 14}}, "questions.cues_per_question", "at most 13"),
    ],
)
def test_errors_name_the_file_and_the_field(tmp_path, change, field, words):
    message = _error(tmp_path, {**tiny_mapping(), **change})
    assert f": {field}" in message and words in message, message


def test_entry_errors_point_into_the_list(tmp_path):
    personas = [
        {"id": "a", "prompt": "You are A.", "style": {"brevity": 2}},
        {"id": "b", "prompt": "You are B."},
    ]
    message = _error(tmp_path, tiny_mapping(personas=personas))
    assert "personas[0].style.brevity" in message and "<= 1.0" in message
    personas[0]["style"] = {"swagger": 0.5}
    assert "unknown style dimension 'swagger'" in _error(tmp_path, tiny_mapping(personas=personas))
    personas[0] = {"id": "b", "prompt": "You are B2."}
    assert "duplicate id 'b'" in _error(tmp_path, tiny_mapping(personas=personas))
    personas[0] = {"id": "a", "prompt": "You are B."}
    assert "same prompt" in _error(tmp_path, tiny_mapping(personas=personas))
    students = [{"id": "s", "description": "x", "quirks": ["likes_cats"]}]
    message = _error(tmp_path, tiny_mapping(students=students))
    assert "students[0].quirks[0]" in message and "unknown quirk 'likes_cats'" in message
    topics = [{"id": "t", "chains": [{"concept": "c", "essay": "Write about c."}]}]
    message = _error(tmp_path, tiny_mapping(topics=topics))
    assert "topics[0].chains[0]" in message and "unknown keys ['essay']" in message


def test_missing_and_broken_files(tmp_path):
    with pytest.raises(DatagenConfigError, match="does not exist"):
        load_config(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("topics: [unclosed\n")
    with pytest.raises(DatagenConfigError, match=re.escape(str(bad)) + " is not valid YAML"):
        load_config(bad)
    message = _error(tmp_path, tiny_mapping(students={"file": "profiles.yaml"}))
    assert "students.file" in message and "profiles.yaml does not exist" in message


def test_files_inline_entries_and_template_students(tmp_path):
    (tmp_path / "people.yaml").write_text(
        yaml.safe_dump(
            {
                "profiles": [
                    {"id": "ana", "description": "You love proofs.", "taste": {"rigor": 0.9}},
                    {"id": "ben", "description": "You love stories.", "taste": {"examples": 1}},
                    {"id": "cy", "description": "You are in a hurry.", "cue_following": 2},
                ]
            }
        )
    )
    data = tiny_mapping(
        students={"file": "people.yaml", "take": ["cy", "ana"]},
        topics=[{"id": "fractions", "chains": ["adding fractions", {"concept": "ratios"}]}],
        personas={"builtin": True, "take": 3},
        cues={"builtin": True, "take": ["exam_quote", "two_minutes"]},
        questions={"cues_per_question": 2},
        world={"rounds": 12},
    )
    config = load_config(_write(tmp_path, data))
    assert [s.id for s in config.students] == ["cy", "ana"]
    assert config.students[0].cue_following == 2.0
    assert config.K == 3 and config.n_questions == 2 * 3 * 2
    bank = split_config(config).questions.bank()
    assert {q.cue for q in bank} == {"exam_quote", "two_minutes"}
    assert all(q.example is None and q.subject == "" for q in bank)

    templated = load_config(_write(tmp_path, tiny_mapping(students={"template": 5, "quirks": 2})))
    assert len(templated.students) == 5
    assert all(len(s.quirks) == 2 for s in templated.students)
    assert len({s.description for s in templated.students}) == 5


def test_cli_reports_config_errors(tmp_path, capsys):
    path = _write(tmp_path, {**tiny_mapping(), "samples": "many"})
    assert main(["datagen", str(path), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "prefduel: error:" in err and "samples: expected an integer" in err


@pytest.mark.parametrize(
    "name", ["../../x", "a/b", "/tmp/x", "a\\b", "..", ".", "a\0b", "C:x", "", "  "]
)
def test_names_that_would_escape_the_worlds_folder_are_refused(tmp_path, name):
    message = _error(tmp_path, tiny_mapping(name=name))
    assert ": name: " in message, message
    if name.strip():
        assert "folder name" in message and "'/'" in message and "'..'" in message, message


def test_a_defaulted_name_is_checked_too(tmp_path):
    message = _error(tmp_path, tiny_mapping(name=None))  # null: a string is expected
    assert ": name: " in message
    data = tiny_mapping()
    del data["name"]
    path = _write(tmp_path, data, name="..yaml")  # the stem is "."
    with pytest.raises(DatagenConfigError) as info:
        load_config(path)
    assert str(path) in str(info.value) and "name (default: the file's stem)" in str(info.value)
    assert load_config(_write(tmp_path, data, name="my world.yaml")).output == "worlds/my world"


def test_cli_refuses_a_name_with_path_separators_and_writes_nothing(tmp_path, capsys, monkeypatch):
    work = tmp_path / "work" / "deep"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    data = tiny_mapping(name="../../escaped", cache=str(tmp_path / "cache.sqlite"))
    path = _write(work, data)
    assert main(["datagen", str(path), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "prefduel: error:" in err and f"{path}: name: " in err and "folder name" in err
    assert not (tmp_path / "escaped").exists() and not (work / "worlds").exists()


def test_unknown_keys_suggest_the_closest_known_one(tmp_path):
    message = _error(tmp_path, {**tiny_mapping(), "sampels": 2})
    assert "(top level): unknown keys ['sampels']" in message
    assert "did you mean 'samples'?" in message
    message = _error(tmp_path, tiny_mapping(models={"judge": {"temprature": 1.0}}))
    assert "models.judge: unknown keys ['temprature']" in message and "'temperature'?" in message


def test_quirk_kinds_are_checked_after_take(tmp_path):
    two_kinds = {
        "kinds": {"builtin": True, "take": ["why", "definition"]},
        "topics": [{"id": "limits", "chains": ["limits", "continuity"]}],
        "students": [{"id": "a", "description": "You like proofs."}],
        "world": {"rounds": 4},
    }
    quirks = {"builtin": True, "take": 4}  # none of them is about computation questions
    config = load_config(_write(tmp_path, tiny_mapping(**two_kinds, quirks=quirks)))
    assert len(config.quirks) == 4 and [k.id for k in config.kinds] == ["why", "definition"]
    message = _error(tmp_path, tiny_mapping(**two_kinds))  # every packaged quirk
    assert re.search(r": quirks\[\d+\]\.when_kind: unknown kind 'computation'", message), message


def test_students_need_a_description(tmp_path):
    message = _error(tmp_path, tiny_mapping(students=[{"id": "s", "name": "S"}]))
    assert ": students: 's' has no description" in message


def test_template_students_are_drawn_by_tutorsims_template_code(tmp_path):
    from prefduel.core.rng import stream
    from prefduel.worlds.tutorsim_data import load_tutorsim_data
    from prefduel.worlds.tutorsim_template import draw_template_students

    config = load_config(_write(tmp_path, tiny_mapping(students={"template": 6, "quirks": 1})))
    drawn = draw_template_students(
        load_tutorsim_data().traits,
        6,
        stream(config.seed, "datagen", "template"),
        quirks=config.quirks,
        quirks_each=1,
    )
    scale = config.scripted.params.template_scale
    for student, template in zip(config.students, drawn, strict=True):
        assert (student.name, student.description) == (template.profile, template.description)
        assert student.taste == tuple(float(x) for x in scale * template.taste_sum)
        assert student.quirks == tuple(q.id for q in template.quirks)
        assert student.cue_following == template.cue_following
