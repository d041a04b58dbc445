"""PrefDisco as an inspect-ai task: run offline on inspect's mock model playing our scripted
roles, converted back into a run folder, it reports what our own runner reports.

Skipped only when inspect-ai (the ``inspect`` extra) is not installed. Nothing here may use the
network: every socket connection outside this machine fails the test.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from prefduel.prefdisco import build_report, load_config, load_dataset, load_run, run_study
from prefduel.prefdisco.config import ReportConfig
from prefduel.prefdisco.errors import DatasetError
from prefduel.prefdisco.study.clients import clients_from_config, default_handlers
from prefduel.prefdisco.study.pipeline import generate_dataset

inspect_ai = pytest.importorskip("inspect_ai", reason="the inspect extra is not installed")

STUDY = """\
generate: {seed: 3, personas: 2, personas_per_task: 1, tasks: [{format: builtin, limit: 3}]}
run:
  models: [scripted-ask3]
  strategies: [ask, interviewer]
  interviewer: {prior: {personas: 40, tasks_per_domain: 1, iterations: 20}}
"""
#: What differs between the two runs by construction: the settings digest (its backends are
#: inspect's) and the scoring calls (their cache keys hold the judge's name, mockllm/model).
NAMED = ("settings", "calls")


def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    real = socket.socket.connect

    def connect(self: socket.socket, address: object) -> object:
        if self.family in (socket.AF_INET, socket.AF_INET6):
            host = address[0] if isinstance(address, tuple) else address
            if host not in ("127.0.0.1", "::1", "localhost"):
                raise AssertionError(f"the inspect test tried to reach {address}")
        return real(self, address)

    def lookup(host: object, *args: object, **kwargs: object) -> object:
        raise AssertionError(f"the inspect test tried to resolve {host}")

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket, "getaddrinfo", lookup)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One dataset, run by our runner on the scripted backend and by inspect on the mock
    model playing the same scripted roles, its log converted into a run folder."""
    from inspect_ai import eval as inspect_eval

    from prefduel.prefdisco.study.inspect_log import from_inspect
    from prefduel.prefdisco.study.inspect_models import scripted_model

    root = tmp_path_factory.mktemp("inspect")
    (root / "study.yaml").write_text(STUDY)
    config = load_config(root / "study.yaml")
    generate_dataset(config, root / "data")
    dataset = load_dataset(root / "data")
    handlers = default_handlers(dataset.taxonomy, list(dataset.tasks.values()))
    clients = clients_from_config(
        config, root / "ours", handlers=handlers, groups=("model", "judge")
    )
    try:
        run_study(dataset, config.run, clients, root / "ours")
    finally:
        clients.close()

    with pytest.MonkeyPatch.context() as patch:
        _no_network(patch)
        patch.setenv("INSPECT_LOG_DIR", str(root / "logs"))
        (log,) = inspect_eval(
            "prefduel/prefdisco",  # found through the package's inspect_ai entry point
            task_args={"dataset": str(root / "data"), "label": "scripted-ask3"},
            model=scripted_model(dataset, "scripted-ask3"),
            model_roles={"grader": scripted_model(dataset, "scripted-judge")},
            log_dir=str(root / "logs"),
            display="none",
        )
    assert log.status == "success", log.error
    done = from_inspect([log.location], root / "theirs")
    assert (done.samples, done.skipped) == (3, ())
    return {"root": root, "ours": root / "ours", "theirs": root / "theirs", "log": log.location}


def _by_episode(folder: Path) -> dict[tuple[str, str, str, str | None], dict]:
    rows, _ = load_run(folder)
    return {(r["persona_id"], r["task_id"], r["condition"], r["strategy"]): r for r in rows}


def test_every_score_row_equals_our_runners(runs):
    ours, theirs = _by_episode(runs["ours"]), _by_episode(runs["theirs"])
    assert sorted(ours) == sorted(theirs)
    assert len(ours) == 3 * 4  # 3 instances x baseline, discovery by 2 strategies, oracle
    for key, row in ours.items():
        other = theirs[key]
        assert {k: v for k, v in other.items() if k not in NAMED} == {
            k: v for k, v in row.items() if k not in NAMED
        }, key


def test_every_transcript_equals_our_runners_calls_included(runs):
    def transcripts(folder: Path) -> dict[str, dict]:
        lines = (folder / "transcripts.jsonl").read_text().splitlines()
        return {row["episode_id"]: row for row in map(json.loads, lines)}

    ours, theirs = transcripts(runs["ours"]), transcripts(runs["theirs"])
    assert sorted(ours) == sorted(theirs)
    for episode, row in ours.items():
        assert row["calls"], episode
        assert {**theirs[episode], "settings": None} == {**row, "settings": None}, episode


def test_the_report_of_the_converted_log_has_our_runners_numbers(runs):
    config = ReportConfig(bootstrap=200)
    reports = {}
    for name in ("ours", "theirs"):
        rows, run = load_run(runs[name])
        reports[name] = build_report(rows, config, run=run)
    mine, other = reports["ours"]["models"], reports["theirs"]["models"]
    assert [m.get("strategy") for m in mine] == [m.get("strategy") for m in other]
    for a, b in zip(mine, other, strict=True):
        for part in ("conditions", "norm_align", "by_task", "by_attribute"):
            assert json.dumps(a[part], sort_keys=True) == json.dumps(b[part], sort_keys=True)
    for part in ("router", "offline"):
        assert reports["theirs"][part] == reports["ours"][part]
    assert reports["theirs"]["user_style"] == "cooperative"


def test_the_logs_metrics_are_the_reports_prefalign_and_normalign(runs):
    from inspect_ai.log import read_eval_log

    (score,) = read_eval_log(runs["log"], header_only=True).results.scores
    metrics = {name: m.value for name, m in score.metrics.items()}
    rows, run = load_run(runs["ours"])
    report = build_report(rows, ReportConfig(bootstrap=0), run=run)
    ask, interviewer = report["models"]
    means = {c["condition"]: c["pref_align"] for c in ask["conditions"]}
    assert metrics["baseline"] == pytest.approx(means["baseline"], abs=5e-4)
    assert metrics["oracle"] == pytest.approx(means["oracle"], abs=5e-4)
    assert metrics["discovery"] == pytest.approx(means["discovery"], abs=5e-4)
    assert metrics["norm_align_discovery"] == pytest.approx(
        ask["norm_align"]["norm_align"], abs=5e-3
    )
    assert metrics["norm_align_discovery_interviewer"] == pytest.approx(
        interviewer["norm_align"]["norm_align"], abs=5e-3
    )


def test_converting_again_is_idempotent_and_other_settings_are_refused(runs):
    from prefduel.prefdisco.study.inspect_log import from_inspect

    before = (runs["theirs"] / "scores.jsonl").read_bytes()
    again = from_inspect([runs["log"]], runs["theirs"])
    assert again.episodes == 12
    assert (runs["theirs"] / "scores.jsonl").read_bytes() == before
    with pytest.raises(DatasetError, match="other settings"):
        from_inspect([runs["log"]], runs["ours"])


def test_from_inspect_on_the_command_line_then_report(runs, tmp_path):
    from prefduel.cli.main import main

    out = tmp_path / "run"
    assert main(["prefdisco", "from-inspect", str(runs["log"]), "--out", str(out)]) == 0
    assert main(["prefdisco", "report", str(out), "--bootstrap", "0"]) == 0
    assert "scripted-ask3 + interviewer" in (out / "report" / "report.md").read_text()


def test_rows_carry_inspects_model_name_unless_a_label_is_given(runs):
    from inspect_ai.model import get_model

    from prefduel.prefdisco.study.inspect_task import load_study

    model, judge = get_model("mockllm/model"), get_model("mockllm/model")
    data = runs["root"] / "data"
    unnamed, _ = load_study(data).resolve(model, judge)
    named, _ = load_study(data, label="mine").resolve(model, judge)
    assert (unnamed.models, named.models) == (("mockllm/model",), ("mine",))
    assert unnamed.judge_model == named.judge_model == "mockllm/model"
    _, record = load_study(data).resolve(model, judge)
    assert record["settings"]["backends"] == {
        "judge": "inspect",
        "model": "inspect",
        "user": "none",
    }


def test_a_missing_log_is_a_named_error(tmp_path, capsys):
    from prefduel.cli.main import main

    assert main(["prefdisco", "from-inspect", str(tmp_path / "x.eval"), "--out", "r"]) == 2
    assert "inspect log" in capsys.readouterr().err


def test_the_library_imports_without_inspect_and_names_the_extra_when_asked(tmp_path):
    code = (
        "import sys\n"
        "sys.modules['inspect_ai'] = None  # as if the extra were not installed\n"
        "import prefduel.prefdisco, prefduel.cli.prefdisco_cmd\n"
        "from prefduel.prefdisco.errors import ConfigError\n"
        "from prefduel.prefdisco.study.inspect_log import from_inspect\n"
        "for attempt in (lambda: __import__('prefduel.prefdisco.study.inspect_task'),\n"
        f"                lambda: from_inspect([{str(tmp_path / 'x.eval')!r}], 'r')):\n"
        "    try:\n"
        "        attempt()\n"
        "    except ConfigError as exc:\n"
        "        print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    lines = out.stdout.splitlines()
    assert len(lines) == 2
    assert all('pip install "prefduel[inspect]"' in line for line in lines)
