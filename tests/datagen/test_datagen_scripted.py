"""The scripted backend plays every role deterministically; its judge follows TutorSim's
latent preferences."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import numpy as np
from pb_datagen_helpers import tiny_config

from prefduel.datagen import (
    ScriptedWorld,
    generate,
    parse_pick,
    parse_question,
    parse_scores,
    scripted_model_name,
    split_config,
)
from prefduel.llm.testserver import completion_payload


def test_judge_follows_the_students_latent_preferences(tmp_path):
    config = tiny_config(tmp_path, samples=2)
    result = generate(config, progress=False)
    latent = ScriptedWorld(config).latent_utilities([q["text"] for q in result.world.questions])
    utility = np.load(result.output / "datagen" / "tables.npz")["U"]
    assert latent.shape == utility.shape == (2, 6, 6)
    v = latent - latent.mean(axis=-1, keepdims=True)
    u = utility - utility.mean(axis=-1, keepdims=True)
    per_cell = [np.corrcoef(v[i, q], u[i, q])[0, 1] for i in range(2) for q in range(6)]
    assert np.mean(per_cell) > 0.85 and min(per_cell) > 0.5
    assert (latent.argmax(-1) == utility.argmax(-1)).mean() >= 0.75
    # the two students disagree: their utilities are not the same ranking
    assert not np.array_equal(utility[0].argmax(-1), utility[1].argmax(-1))
    # position bias of the judge shows (judge_position > 0)
    assert result.diagnostics["first_shown_won"] > 0.5


def test_every_role_answers_purely_and_parseably(tmp_path):
    config = tiny_config(tmp_path)
    a, b = ScriptedWorld(config), ScriptedWorld(config)
    stages = split_config(config, scripted=True)
    spec = stages.questions.bank()[4]
    q_request = stages.questions.request(spec)
    question = parse_question(a.question(q_request), spec.cue_text)
    assert question == f"{spec.example} {spec.cue_text}"  # TutorSim's question text
    assert a.spec_of(question) == spec
    answers = [a.answer(stages.answers.request(question, p)) for p in config.personas]
    assert [x.split("]")[0] for x in answers] == [f"[{p.id}" for p in config.personas]
    scores = parse_scores(
        a.rater(stages.rater.request(question)), [p.id for p in config.personas], config.rater_scale
    )
    assert scores is not None and len(set(scores.values())) > 1
    v = a.utilities(0, question)
    first, second = sorted(np.argsort(v)[2:4])  # two mid-ranked personas: not a sure pick
    judge = stages.judge.request(
        config.students[0], question, answers[first], answers[second], "B", sample=2
    )
    assert parse_pick(a.judge(judge)) in ("A", "B")
    for request, role in ((q_request, "question"), (judge, "judge")):
        assert a.handlers()[role](request) == b.handlers()[role](request)
    picks = {a.judge(dataclasses.replace(judge, sample=s)) for s in range(40)}
    assert picks == {"A", "B"}  # samples differ


def test_answers_are_identical_in_another_process(tmp_path):
    config = tiny_config(tmp_path)
    world = ScriptedWorld(config)
    stages = split_config(config, scripted=True)
    spec = stages.questions.bank()[0]
    question = parse_question(world.question(stages.questions.request(spec)), spec.cue_text)
    request = stages.rater.request(question, sample=1)
    code = (
        "import sys, json; sys.path.insert(0, sys.argv[1])\n"
        "from pathlib import Path\n"
        "from pb_datagen_helpers import tiny_config\n"
        "from prefduel.datagen import ScriptedWorld\n"
        "from prefduel.llm import LLMRequest\n"
        "config = tiny_config(Path(sys.argv[2]))\n"
        "request = LLMRequest.from_json(json.loads(sys.stdin.read()))\n"
        "print(ScriptedWorld(config).rater(request))\n"
    )
    here = str(__import__("pathlib").Path(__file__).parent)
    out = subprocess.run(
        [sys.executable, "-c", code, here, str(tmp_path)],
        input=request.canonical,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == world.rater(request)


def test_model_name_fingerprints_the_hidden_truth(tmp_path):
    config = tiny_config(tmp_path)
    name = scripted_model_name(config)
    assert name.startswith("scripted/") and name == scripted_model_name(tiny_config(tmp_path))
    student = dataclasses.replace(config.students[0], taste=(0.0,) * len(config.style))
    edited = dataclasses.replace(config, students=(student, *config.students[1:]))
    assert scripted_model_name(edited) != name
    slower = dataclasses.replace(config, scripted=dataclasses.replace(config.scripted, latency=0.5))
    assert scripted_model_name(slower) == name
    assert split_config(config, scripted=True).models() == dict.fromkeys(
        ("question", "answer", "rater", "judge", "student"), name
    )
    assert split_config(config).models()["judge"] == "gpt-4o-mini"


def test_http_answers_detect_the_role(tmp_path):
    config = tiny_config(tmp_path)
    world = ScriptedWorld(config)
    stages = split_config(config)
    spec = stages.questions.bank()[1]

    def body(request):
        return {
            "model": request.model,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
        }

    question = parse_question(
        world.http_answer(body(stages.questions.request(spec))), spec.cue_text
    )
    assert question == world.question(stages.questions.request(spec))
    answer = world.http_answer(body(stages.answers.request(question, config.personas[2])))
    assert answer.startswith(f"[{config.personas[2].id}]")
    rating = json.loads(world.http_answer(body(stages.rater.request(question))))
    assert set(rating) == {p.id for p in config.personas}
    pick = world.http_answer(
        body(stages.judge.request(config.students[1], question, answer, answer, "A", 0))
    )
    assert pick in ("A", "B")
    assert completion_payload(body(stages.rater.request(question)), pick)["choices"][0]["message"]


def test_the_largest_allowed_knobs_make_a_world(tmp_path):
    """A student who follows cues a thousand times more than most, and a judge a thousand times
    sharper: the pick probabilities saturate at 0 and 1 instead of overflowing mid-run."""
    from prefduel.datagen import generate
    from prefduel.worlds import load_world

    students = [
        {"id": "keen", "description": "You follow every cue.", "cue_following": 1000.0},
        {"id": "calm", "description": "You take your time."},
    ]
    config = tiny_config(tmp_path, students=students,
                         scripted={"judge_beta": 1000.0, "utility_noise": 1000.0})
    result = generate(config, progress=False)
    assert result.complete, result.summary()
    world = load_world(tmp_path / "world")
    assert np.isfinite(world.P).all() and np.isfinite(world.U).all()


def test_the_scripted_fingerprint_holds_exactly_the_knobs_the_scripted_roles_read():
    """A TutorSim knob the scripted roles do not read must not make every cache stale."""
    import re
    from pathlib import Path

    from prefduel.datagen import scripted
    from prefduel.datagen.settings import SCRIPTED_KNOBS

    source = Path(scripted.__file__).read_text(encoding="utf-8")
    read = set(re.findall(r"\bprm\.([a-z_]+)", source))
    assert read == set(SCRIPTED_KNOBS)
