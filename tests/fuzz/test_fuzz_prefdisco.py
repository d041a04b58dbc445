"""PrefDisco's input files with generated damage: study configs through ``prefdisco generate``,
a finished study's score files (``scores.jsonl``, ``run.json``, the manifest) through
``prefdisco report``. Every case must end in a named error or in a result without a
non-finite number; where the damage only repeats a line, in the undamaged study's numbers."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from fuzz_harness import (
    Case,
    failures,
    jsonl_field_damage,
    long_line,
    run_cases,
    structural_damage,
    yaml_field_damage,
    yaml_text_damage,
)

from prefduel.cli.main import main

#: A small offline study: 2 built-in tasks, one persona each, one scripted model.
CONFIG = {
    "generate": {
        "seed": 0,
        "personas": 3,
        "personas_per_task": 1,
        "tasks": [{"format": "builtin", "limit": 2}],
        "k_min": 2,
        "k_max": 3,
        "dirichlet_alpha": 1.0,
        "max_per_family": 2,
        "value_noise": 0.6,
        "relevance_power": 3.0,
        "min_distance": 0.35,
    },
    "run": {
        "models": ["scripted-ask2"],
        "max_turns": 2,
        "judge_attempts": 2,
        "episodes_in_flight": 4,
    },
    "report": {"bootstrap": 20, "min_gap": 0.1, "level": 0.9, "seed": 0},
}
GENERATE = ["prefdisco", "generate", "out", "--config", "c.yaml"]
REPORT = ["prefdisco", "report", "study", "--out", "rep"]
#: The files of a finished study that ``prefdisco report`` reads.
REPORT_FILES = ("scores.jsonl", "run.json", "manifest.json")
#: Cases of the report test run (of about 1,700 generated; seeded sample, cases with a
#: numeric oracle always run), to keep the file under a minute on 2 shared cores.
SAMPLE = 1000


def _no_bad_numbers(result: dict[str, Any]) -> str | None:
    text = result["stdout"].lower()
    for word in ("nan", "inf"):
        if f" {word}" in text or f"[{word}" in text or f"-{word}" in text:
            return f"exit 0 printing {word!r}:\n{result['stdout'][-800:]}"
    return None


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> dict[str, bytes]:
    """The files ``report`` reads of a small finished study (generated and run once)."""
    root = tmp_path_factory.mktemp("fuzz-prefdisco")
    (root / "c.yaml").write_text(yaml.safe_dump(CONFIG, sort_keys=False), encoding="utf-8")
    cwd = Path.cwd()
    try:
        os.chdir(root)
        assert main(["prefdisco", "generate", "study", "--config", "c.yaml"]) == 0
        assert main(["prefdisco", "run", "study", "--no-progress"]) == 0
    finally:
        os.chdir(cwd)
    return {f"study/{name}": (root / "study" / name).read_bytes() for name in REPORT_FILES}


def _config_damage() -> list[tuple[str, bytes]]:
    text = yaml.safe_dump(CONFIG, sort_keys=False)
    out = [
        (label, yaml.safe_dump(doc, sort_keys=False).encode())
        for label, doc in yaml_field_damage(CONFIG)
    ]
    return out + list(yaml_text_damage(text))


def test_damaged_configs_through_generate():
    shared = {"c.yaml": yaml.safe_dump(CONFIG, sort_keys=False).encode()}
    reference = [Case("ref", GENERATE, {}, allowed=(0,))]
    done = run_cases(reference, shared)
    assert not failures(reference, done), failures(reference, done)
    cases = [
        Case(f"generate:{label}", GENERATE, {"c.yaml": data}, oracle=_no_bad_numbers)
        for label, data in _config_damage()
    ]
    _assert_no_failures(cases, run_cases(cases, shared))


def test_a_config_with_a_repeated_line_is_not_read_silently():
    """A repeated 'generate:' line used to empty the section, and generate ran the demo's
    defaults without a word: the loader keeps the last of two equal keys."""
    text = yaml.safe_dump(CONFIG, sort_keys=False).encode()
    lines = text.splitlines(keepends=True)
    cases = [
        Case("ref", GENERATE, {"c.yaml": text}, allowed=(0,)),
        Case("repeated", GENERATE, {"c.yaml": b"".join([*lines, lines[0]])}),
    ]
    done = run_cases(cases, {})
    assert not failures(cases, done), failures(cases, done)
    assert done["repeated"]["code"] == 2 or done["repeated"]["stdout"] == done["ref"]["stdout"]


def _assert_no_failures(cases: list[Case], results: dict[str, dict[str, Any]]) -> None:
    problems = failures(cases, results)
    summary = "\n".join(p.splitlines()[0][:160] for p in problems)
    assert not problems, (
        f"{len(problems)} of {len(cases)} cases failed:\n{summary}\n\n" + "\n\n".join(problems[:4])
    )


def _numbers(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if not line.startswith("wrote ")]


def _score_damage(scores: bytes) -> list[tuple[str, bytes]]:
    """Every field of a baseline and a discovery row x every bad value, and damage to the
    whole file."""
    rows = [json.loads(line) for line in scores.splitlines()]
    discovery = next(i for i, r in enumerate(rows) if r["condition"] == "discovery")
    damage = [*jsonl_field_damage(rows, 0), *jsonl_field_damage(rows, discovery)]
    return [*damage, *structural_damage(scores, seed=1), ("long-line", long_line(scores))]


def _json_damage(
    data: bytes, skip: tuple[str, ...] = (), only: str = ""
) -> list[tuple[str, bytes]]:
    """Every leaf of a JSON document (under ``only``, outside ``skip``) x every bad value, and
    structural damage."""
    doc = json.loads(data)
    out = []
    for label, damaged in yaml_field_damage(doc):
        if label.startswith(skip) or not label.startswith(only):
            continue
        out.append((label, json.dumps(damaged, default=str).encode()))
    return out + list(structural_damage(data, seed=2))


#: Damage after which the files hold the same rows and settings: the same numbers must print.
SAME = ("scores.jsonl:duplicated-line", "scores.jsonl:crlf", "run.json:crlf", "manifest.json:crlf")


def _cases(study: dict[str, bytes]) -> list[tuple[str, str, bytes]]:
    """``(file, damage, bytes)``: the score file's rows and the whole file, and the parts of
    run.json (settings, digest, router check) and the manifest (report settings) the report
    reads."""
    out = [
        ("scores.jsonl", label, data) for label, data in _score_damage(study["study/scores.jsonl"])
    ]
    run = _json_damage(study["study/run.json"], skip=("router_check.routers.keyword.examples",))
    out += [("run.json", label, data) for label, data in run]
    manifest = _json_damage(study["study/manifest.json"], only="config.report")
    return out + [("manifest.json", label, data) for label, data in manifest]


def test_damaged_score_files_through_report(study):
    complete = {}  # a cut score file: the report of its complete lines
    for label, data in _score_damage(study["study/scores.jsonl"]):
        if label.startswith("cut-at-"):
            complete[label] = data[: data.rfind(b"\n") + 1]
    reference = [Case("ref", REPORT, {}, allowed=(0,))] + [
        Case(f"ref:{label}", REPORT, {"study/scores.jsonl": data}, allowed=(0, 2))
        for label, data in complete.items()
    ]
    done = run_cases(reference, study)
    assert not failures(reference, done), failures(reference, done)

    def same_as(case_id: str):
        expected = _numbers(done[case_id]["stdout"])

        def check(result: dict[str, Any]) -> str | None:
            if _numbers(result["stdout"]) != expected:
                return f"exit 0 with other numbers than {case_id}:\n" + result["stdout"]
            return None

        return check

    cases = []
    for name, label, data in _cases(study):
        oracle, allowed = _no_bad_numbers, (0, 2)
        if f"{name}:{label}" in SAME:
            oracle, allowed = same_as("ref"), (0,)
        elif label in complete:
            oracle = same_as(f"ref:{label}")
        cases.append(Case(f"{name}:{label}", REPORT, {f"study/{name}": data}, allowed, oracle))
    rng = np.random.default_rng(0)
    keep = set(rng.choice(len(cases), size=min(len(cases), SAMPLE), replace=False).tolist())
    cases = [c for i, c in enumerate(cases) if i in keep or c.oracle is not _no_bad_numbers]
    _assert_no_failures(cases, run_cases(cases, study))
