"""What the user can say (issue 17, parts 4 and 5): importance as a coarse level, terse and vague
users, and per reply which hidden preferences were disclosed."""

from __future__ import annotations

import asyncio
import json

import pytest
from pb_prefdisco_helpers import run_cli, tiny_study

from prefduel.llm import LLMClient, ScriptedBackend
from prefduel.prefdisco import (
    PassiveUser,
    RoleClients,
    builtin_tasks,
    default_handlers,
    load_taxonomy,
    run_study,
    sample_personas,
    sample_profile,
)
from prefduel.prefdisco.episode.user import (
    Route,
    importance_level,
    is_importance_question,
)
from prefduel.prefdisco.study.scripted import ScriptedWorld

TAX = load_taxonomy()
PERSONAS, _ = sample_personas(4, 3)
PROFILES = [sample_profile(p, t, TAX, seed=2) for p in PERSONAS for t in builtin_tasks()[::4]]


class FixedRouter:
    name = "fixed"

    def __init__(self, ids):
        self.ids = tuple(ids)

    async def route(self, question):
        return Route(self.ids, "fixed")


def _hidden_and_unset(profile, ordinal=None):
    hidden = [a for a in profile.attributes if ordinal is None or TAX[a].ordinal == ordinal]
    unset = next(a for a in TAX.ids if a not in profile.attributes)
    return hidden[0], unset


def test_importance_questions_are_answered_with_a_coarse_level():
    assert importance_level(0.1) == "minor" and importance_level(0.2) == "moderate"
    assert importance_level(0.39) == "moderate" and importance_level(0.4) == "major"
    assert not [a.question for a in TAX if is_importance_question(a.question)]
    words = {"minor": "only a little", "moderate": "somewhat", "major": "a lot"}
    for profile in PROFILES:
        hidden, unset = _hidden_and_unset(profile)
        user = PassiveUser(profile, TAX, FixedRouter([hidden, unset]))
        turn = asyncio.run(user.answer("How important is this to you?"))
        level = importance_level(profile.weights[hidden])
        name = TAX[hidden].name.lower()
        assert f"How much {name} matters to me: {words[level]}." in turn.reply
        assert f"About {TAX[unset].name.lower()}: I have no particular preference." in turn.reply
        assert TAX[hidden].value(profile.values[hidden]).description not in turn.reply
        logged = [(d.attribute, d.value, d.importance) for d in turn.disclosures]
        assert logged == [(hidden, None, level), (unset, None, None)]
        assert user.disclosed == {}  # the value was not asked


def test_a_terse_user_answers_the_first_attribute_with_its_label_only():
    profile = PROFILES[0]
    first, second = profile.attributes[:2]
    user = PassiveUser(profile, TAX, FixedRouter([first, second]), style="terse")
    turn = asyncio.run(user.answer("Two things?"))
    label = TAX[first].value(profile.values[first]).label
    assert turn.reply == f"{TAX[first].name}: {label}."
    assert [(d.attribute, d.value) for d in turn.disclosures] == [(first, profile.values[first])]
    info = f"You asked the user 1 question:\nQ1: Two things?\nA1: {turn.reply}"
    assert ScriptedWorld(TAX).known(info) == {first: profile.values[first]}


def test_a_vague_user_only_hints_at_the_value():
    seen_side = seen_pair = False
    for profile in PROFILES:
        for attr in profile.attributes:
            attribute = TAX[attr]
            value = attribute.value(profile.values[attr])
            user = PassiveUser(profile, TAX, FixedRouter([attr]), style="vague")
            turn = asyncio.run(user.answer("What about this?"))
            assert value.description not in turn.reply and " — " not in turn.reply
            assert turn.disclosures[0].vague and turn.disclosures[0].value == value.value
            hinted = ScriptedWorld(TAX).known(f"A1: {turn.reply}")[attr]
            if attribute.ordinal:
                seen_side |= "more towards" in turn.reply
                # the hint is on the right side of the scale, never the opposite end
                assert attribute.distance(hinted, value.value) < 1 or len(attribute.values) == 2
            else:
                seen_pair |= " or " in turn.reply
                assert value.label in turn.reply
    assert seen_side and seen_pair


def test_unknown_style_is_refused():
    with pytest.raises(ValueError, match="style"):
        PassiveUser(PROFILES[0], TAX, FixedRouter([]), style="rude")


def test_each_score_row_logs_which_hidden_preferences_each_reply_disclosed(tmp_path):
    config, dataset = tiny_study(tmp_path, instances=3, models=("scripted-ask5",))
    handlers = default_handlers(dataset.taxonomy, list(dataset.tasks.values()))
    client = LLMClient(ScriptedBackend(handlers))
    with client:
        run_study(dataset, config.run, RoleClients.single(client), tmp_path / "run")
    scores = [json.loads(x) for x in (tmp_path / "run" / "scores.jsonl").read_text().splitlines()]
    transcripts = {
        t["episode_id"]: t
        for t in map(json.loads, (tmp_path / "run" / "transcripts.jsonl").read_text().splitlines())
    }
    discovery = [s for s in scores if s["condition"] == "discovery"]
    assert discovery and any(any(r) for s in discovery for r in s["revealed"])
    for s in discovery:
        turns = transcripts[s["episode_id"]]["turns"]
        assert len(s["revealed"]) == s["questions"] == len(turns)
        for revealed, turn in zip(s["revealed"], turns, strict=True):
            assert set(revealed) <= set(s["weights"])
            assert revealed == [d["attribute"] for d in turn["disclosures"] if d["value"]]


def test_a_less_helpful_user_is_a_run_setting_named_in_the_report(tmp_path):
    study = tmp_path / "study"
    assert run_cli(["generate", str(study), "--personas", "3", "--per-task", "1"])[0] == 0
    means = {}
    for style in ("cooperative", "terse", "vague"):
        out_dir = tmp_path / style
        status, _, err = run_cli(
            ["run", str(study), "--no-progress", "--user-style", style, "--out", str(out_dir)]
        )
        assert status == 0, err
        run = json.loads((out_dir / "run.json").read_text())
        assert run["settings"]["user_style"] == style
        assert run_cli(["report", str(out_dir), "--bootstrap", "0"])[0] == 0
        md = (out_dir / "report" / "report.md").read_text()
        assert f"- simulated user: {style}." in md
        report = json.loads((out_dir / "report" / "report.json").read_text())
        means[style] = sum(
            c["pref_align"]
            for m in report["models"]
            for c in m["conditions"]
            if c["condition"] == "discovery"
        )
    # the scripted models understand terse labels; a vague user tells them less
    assert means["vague"] < means["cooperative"]
