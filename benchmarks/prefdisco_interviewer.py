"""The Bayesian interviewer against the scripted ask-k strategies, offline, through the run
pipeline, under each simulated-user style.

Generates a PrefDisco dataset (built-in tasks, ``--personas`` personas, ``--per-task``
instances per task, ``--seed``) in a temporary folder and, for each user style of ``--styles``,
runs it as ``prefduel prefdisco run`` would (`run_study`, scripted backend, one shared answer
cache):

* ``scripted-ask1/3/5`` with the ``ask`` strategy (the scripted model asks about k attributes
  chosen by domain relevance, planned before any reply);
* ``scripted-ask5`` with the ``interviewer`` strategy in the same folder: its final answers
  are written by the same scripted answerer as ask5's, so both share one set of baseline and
  oracle episodes and their discovery scores are paired (the prior is learned from
  ``--prior-personas`` personas of seed ``--prior-seed``, checked disjoint from the dataset's).

With ``--variants`` it also runs interviewer variants under the cooperative user (3 questions,
a one-type prior without co-occurrence, importance questions), each in its own folder.

Every number comes from the report (`build_report`): per strategy the mean PrefAlign per
condition, NormAlign with its 95% bootstrap interval and n, mean questions, the share of hidden
preferences disclosed, the stop reasons and the follow-up change rate (the second question's
topic after the first reply is altered), plus the paired discovery PrefAlign difference to
ask5 with a 95% bootstrap interval. The scripted answerer and judge read a style line the
scripted model writes: these numbers test the strategies' choice of questions and the
pipeline, not a language model.

Usage::

    python benchmarks/prefdisco_interviewer.py                # ~2-3 minutes on one core
    python benchmarks/prefdisco_interviewer.py --styles cooperative --personas 12 --json out.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from prefduel.core.rng import stream
from prefduel.llm import LLMClient, ScriptedBackend
from prefduel.prefdisco import (
    GenerateConfig,
    PrefDiscoConfig,
    ReportConfig,
    RoleClients,
    RunConfig,
    TaskSource,
    build_report,
    default_handlers,
    generate_dataset,
    load_dataset,
    load_run,
    run_study,
)
from prefduel.prefdisco.interview_config import InterviewerConfig, PriorConfig
from prefduel.prefdisco.store import read_jsonl, write_jsonl

INTERVIEWER_MODEL = "scripted-ask5"
ASK_MODELS = ("scripted-ask1", "scripted-ask3", "scripted-ask5")


def interviewer_config(args: argparse.Namespace, **changes: Any) -> InterviewerConfig:
    """The interviewer settings of the benchmark (``changes`` for a variant)."""
    prior = PriorConfig(seed=args.prior_seed, personas=args.prior_personas, classes=args.classes)
    base = InterviewerConfig(min_gain=args.min_gain, prior=prior)
    return dataclasses.replace(base, **changes)


def variants(args: argparse.Namespace) -> dict[str, InterviewerConfig]:
    """Interviewer variants run with ``--variants``: name -> settings."""
    prior = interviewer_config(args).prior
    return {
        "interviewer, 3 questions": interviewer_config(args, max_turns=3),
        "interviewer, K=1 (no co-occurrence)": interviewer_config(
            args, prior=dataclasses.replace(prior, classes=1)
        ),
        "interviewer +importance (λ=1)": interviewer_config(
            args, importance_questions=True, importance_weight=1.0
        ),
    }


def run_folder(
    dataset: Any, client: LLMClient, folder: Path, settings: RunConfig, ask: bool
) -> list[dict[str, Any]]:
    """Run ask-k (if ``ask``) then the interviewer on ``INTERVIEWER_MODEL`` into ``folder``;
    return the report's entries."""
    clients = RoleClients.single(client)
    if ask:
        run_study(dataset, dataclasses.replace(settings, models=ASK_MODELS), clients, folder)
    interviewer = dataclasses.replace(
        settings, models=(INTERVIEWER_MODEL,), strategies=("interviewer",)
    )
    summary = run_study(dataset, interviewer, clients, folder)
    if summary.failed:
        raise SystemExit(f"{folder}: {len(summary.failed)} episodes failed: {summary.failed[0]}")
    rows, run = load_run(folder)
    return build_report(rows, ReportConfig(bootstrap=1000), run=run)["models"]


def paired_difference(folder: Path, seed: int) -> dict[str, float | None]:
    """Interviewer - ask5 discovery PrefAlign on the same instances, 95% percentile bootstrap."""
    rows = read_jsonl(folder / "scores.jsonl", what="score file")
    disc = {
        (r["persona_id"], r["task_id"], r["strategy"]): r["pref_align"]
        for r in rows
        if r["model"] == INTERVIEWER_MODEL and r["condition"] == "discovery"
    }
    diffs = np.array(
        [
            disc[(p, t, "interviewer")] - value
            for (p, t, s), value in disc.items()
            if s == "ask" and value is not None and disc.get((p, t, "interviewer")) is not None
        ]
    )
    if len(diffs) < 2:
        return {"mean": None, "lo": None, "hi": None}
    rng = stream(seed, "paired", str(folder.name))
    means = diffs[rng.integers(0, len(diffs), size=(1000, len(diffs)))].mean(axis=1)
    lo, hi = np.quantile(means, [0.025, 0.975])
    return {"mean": float(diffs.mean()), "lo": float(lo), "hi": float(hi)}


def summary(entry: Mapping[str, Any], style: str, name: str) -> dict[str, Any]:
    """One table row from a report entry."""
    means = {c["condition"]: c["pref_align"] for c in entry["conditions"]}
    disc = next(c for c in entry["conditions"] if c["condition"] == "discovery")
    phase = entry["ask_phase"]
    na = entry["norm_align"]
    return {
        "style": style,
        "strategy": name,
        "n": na["n"],
        "pref_align": {c: means.get(c) for c in ("baseline", "discovery", "oracle")},
        "norm_align": na["norm_align"],
        "norm_align_ci": [na["lo"], na["hi"]],
        "mean_questions": disc["questions"],
        "disclosed_share": phase["disclosed_share"],
        "stops": phase["stops"],
        "follow_up_changed": phase["follow_up"]["rate"],
        "follow_up_n": phase["follow_up"]["n"],
    }


def run_style(
    args: argparse.Namespace, dataset: Any, client: LLMClient, root: Path, style: str
) -> list[dict[str, Any]]:
    """ask1/3/5 and the interviewer (and with ``--variants`` its variants) under one style."""
    settings = RunConfig(
        max_turns=args.max_turns, user_style=style, interviewer=interviewer_config(args)
    )
    folder = root / style
    out = []
    entries = run_folder(dataset, client, folder, settings, ask=True)
    for entry in sorted(entries, key=lambda e: (e["strategy"] == "interviewer", e["model"])):
        name = "interviewer" if entry["strategy"] == "interviewer" else entry["model"][9:]
        out.append(summary(entry, style, name))
        if entry["strategy"] == "interviewer":
            out[-1]["vs_ask5"] = paired_difference(folder, args.seed)
    if args.logs:
        transcripts = read_jsonl(folder / "transcripts.jsonl", what="transcripts")
        logs = [t["interview"] for t in transcripts if t.get("interview")]
        write_jsonl(Path(f"{args.logs}.{style}.jsonl"), logs)
    if args.variants and style == "cooperative":
        for i, (name, config) in enumerate(variants(args).items()):
            variant = dataclasses.replace(settings, interviewer=config)
            entries = run_folder(dataset, client, root / f"variant{i}", variant, ask=True)
            entry = next(e for e in entries if e["strategy"] == "interviewer")
            out.append(summary(entry, style, name))
            out[-1]["vs_ask5"] = paired_difference(root / f"variant{i}", args.seed)
    return out


def table(results: Sequence[Mapping[str, Any]]) -> str:
    """The results as a plain-text table."""
    head = (
        f"{'user':11} {'strategy':36} {'n':>4} {'base':>5} {'disc':>5} {'orac':>5} "
        f"{'NormAlign [95% CI]':>22} {'qs':>4} {'discl':>5} {'follow-up':>13} "
        f"{'disc - ask5 disc':>22}"
    )
    lines = [head, "-" * len(head)]
    for r in results:
        na = "undefined" if r["norm_align"] is None else f"{r['norm_align']:.1f}"
        lo, hi = r["norm_align_ci"]
        ci = "" if lo is None else f" [{lo:.1f}, {hi:.1f}]"
        fu = r["follow_up_changed"]
        follow = "-" if fu is None else f"{100 * fu:.0f}% of {r['follow_up_n']}"
        vs = r.get("vs_ask5") or {"mean": None}
        delta = (
            "" if vs["mean"] is None else f"{vs['mean']:+.2f} [{vs['lo']:+.2f}, {vs['hi']:+.2f}]"
        )
        p = r["pref_align"]
        lines.append(
            f"{r['style']:11} {r['strategy']:36} {r['n']:>4} {p['baseline']:>5.2f} "
            f"{p['discovery']:>5.2f} {p['oracle']:>5.2f} {na + ci:>22} "
            f"{r['mean_questions']:>4.2f} {100 * r['disclosed_share']:>4.0f}% {follow:>13} "
            f"{delta:>22}"
        )
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--personas", type=int, default=24, help="evaluation personas")
    parser.add_argument("--per-task", type=int, default=6, help="instances per task")
    parser.add_argument("--seed", type=int, default=0, help="evaluation dataset seed")
    parser.add_argument("--prior-seed", type=int, default=1, help="training persona seed")
    parser.add_argument("--prior-personas", type=int, default=300, help="training personas")
    parser.add_argument("--classes", type=int, default=4, help="persona types of the prior")
    parser.add_argument("--max-turns", type=int, default=5, help="question budget")
    parser.add_argument("--min-gain", type=float, default=InterviewerConfig().min_gain)
    parser.add_argument(
        "--styles", default="cooperative,terse,vague", help="comma list of user styles"
    )
    parser.add_argument("--variants", action="store_true", help="also interviewer variants")
    parser.add_argument("--json", help="also write the results to this JSON file")
    parser.add_argument(
        "--logs", help="write the interviewer's per-episode logs to LOGS.<style>.jsonl"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark and print the table."""
    args = parse_args(argv)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="prefdisco-interviewer-") as tmp:
        root = Path(tmp)
        generate = GenerateConfig(
            seed=args.seed,
            personas=args.personas,
            personas_per_task=args.per_task,
            tasks=(TaskSource(),),
        )
        generate_dataset(PrefDiscoConfig(generate=generate), root / "data")
        dataset = load_dataset(root / "data")
        handlers = default_handlers(dataset.taxonomy, list(dataset.tasks.values()))
        results = []
        with LLMClient(ScriptedBackend(handlers), cache=root / "cache.sqlite") as client:
            for style in [s.strip() for s in args.styles.split(",") if s.strip()]:
                results += run_style(args, dataset, client, root, style)
    print(table(results))
    seconds = time.perf_counter() - start
    print(
        f"\n{len(results)} rows, offline scripted backend, {seconds:.1f} s. The scripted "
        "answerer and judge test the strategies' choice of questions and the pipeline, not a "
        "language model."
    )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(results, fh, indent=2, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
