"""The interviewer in ``prefdisco report`` like any strategy (NormAlign with n, questions,
disclosure, stop reasons, follow-up change rate) under every user style, the per-reply
disclosure log of its episodes, and the follow-up check of the ask strategy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pb_prefdisco_helpers import interviewer_study, jsonl_rows, run_cli

from prefduel.llm import LLMClient, ScriptedBackend
from prefduel.prefdisco import RoleClients, default_handlers, load_config, load_dataset, run_study


def _study(root: Path, style: str = "cooperative") -> Path:
    config = interviewer_study(root, run=f"  user_style: {style}\n")
    args = ["run", str(root / "data"), "--config", str(config), "--no-progress"]
    status, out, err = run_cli(args)
    assert status == 0, err + out
    return root / "data"


@pytest.mark.parametrize("style", ["cooperative", "terse", "vague"])
def test_the_report_shows_the_interviewer_like_the_ask_strategy(tmp_path, style):
    data = _study(tmp_path, style)
    status, out, err = run_cli(["report", str(data)])
    assert status == 0, err
    report = json.loads((data / "report" / "report.json").read_text())
    assert report["user_style"] == style and f"simulated user: {style}" in out
    ask, interviewer = report["models"]
    assert (ask["label"], ask["strategy"]) == ("scripted-ask3", "ask")
    assert (interviewer["label"], interviewer["strategy"]) == (
        "scripted-ask3 + interviewer",
        "interviewer",
    )
    scores = jsonl_rows(data / "scores.jsonl")
    for entry in (ask, interviewer):
        mine = [r for r in scores if r["condition"] == "discovery"]
        mine = [r for r in mine if r["strategy"] == entry["strategy"]]
        phase = entry["ask_phase"]
        assert entry["norm_align"]["n"] == 6
        hidden = sum(len(r["weights"]) for r in mine)
        assert phase["disclosed_share"] == round(sum(len(r["disclosed"]) for r in mine) / hidden, 3)
        assert sum(phase["stops"].values()) == 6
        changed = [r["follow_up"]["changed"] for r in mine if r["follow_up"]]
        assert phase["follow_up"] == {
            "n": len(changed),
            "changed": sum(changed),
            "rate": round(sum(changed) / len(changed), 3),
        }
        line = next(x for x in out.splitlines() if x.startswith(f"{entry['label']}: PrefAlign"))
        assert "(n = 6 of 6 instances)" in line
    # the scripted ask-k model plans its questions before hearing a reply: it never adapts
    assert ask["ask_phase"]["follow_up"]["changed"] == 0
    assert set(interviewer["ask_phase"]["stops"]) <= {"min_gain", "exhausted", "max_turns"}
    md = (data / "report" / "report.md").read_text()
    assert f"## Strategies compared (simulated user: {style})" in md
    assert "| scripted-ask3 + interviewer | 6 |" in md
    assert "follow-up changes when the first reply is altered" in out


def test_each_interviewer_reply_logs_the_hidden_preferences_it_disclosed(tmp_path):
    data = _study(tmp_path)
    transcripts = {t["episode_id"]: t for t in jsonl_rows(data / "transcripts.jsonl")}
    scores = [r for r in jsonl_rows(data / "scores.jsonl") if r["strategy"] == "interviewer"]
    assert scores
    for row in scores:
        transcript = transcripts[row["episode_id"]]
        steps = transcript["interview"]["steps"]
        assert len(row["revealed"]) == len(steps) == row["questions"]
        for revealed, step, turn in zip(row["revealed"], steps, transcript["turns"], strict=True):
            hidden = {d["attribute"] for d in step["disclosed"]} | {
                lv["attribute"] for lv in step["levels"]
            }
            assert set(revealed) == hidden
            assert all(a in row["weights"] for a in revealed)  # only hidden preferences
            assert all(d["turn"] == turn["turn"] for d in turn["disclosures"])


def _adaptive_ask():
    """A model whose second question depends on the first reply: about the layout if the user
    has no preference on depth, else about the length."""

    def handler(request):
        users = [m.content for m in request.messages if m.role == "user"]
        if len(users) == 1:
            return "QUESTION: How detailed should the explanation be?"
        if len(users) == 2:
            if "no particular preference" in users[1]:
                return "QUESTION: Do you prefer bullet points, a table or prose?"
            return "QUESTION: How long should the response be?"
        return "READY"

    return handler


def test_the_ask_follow_up_check_sees_a_model_that_adapts(tmp_path):
    data = _study(tmp_path)
    dataset = load_dataset(data)
    config = load_config(tmp_path / "study.yaml")
    handlers = default_handlers(dataset.taxonomy, list(dataset.tasks.values()))
    handlers["ask"] = _adaptive_ask()
    with LLMClient(ScriptedBackend(handlers)) as client:
        run_study(dataset, config.run, RoleClients.single(client), tmp_path / "adaptive")
    rows = [r for r in jsonl_rows(tmp_path / "adaptive" / "scores.jsonl") if r["strategy"] == "ask"]
    checks = [r["follow_up"] for r in rows]
    assert all(c is not None for c in checks)
    for check in checks:
        was_absent = "no particular preference" in check["altered_reply"]
        assert check["attribute"] == "explanation.depth"
        assert check["altered"]["attributes"] == (
            ["structure.format"] if was_absent else ["style.length"]
        )
    transcripts = jsonl_rows(tmp_path / "adaptive" / "transcripts.jsonl")
    first = {t["episode_id"]: t["turns"][0]["reply"] for t in transcripts if t["strategy"] == "ask"}
    for row in rows:
        before = "no particular preference" in first[row["episode_id"]]
        after = "no particular preference" in row["follow_up"]["altered_reply"]
        assert row["follow_up"]["changed"] == (before != after)
    assert any(r["follow_up"]["changed"] for r in rows)
