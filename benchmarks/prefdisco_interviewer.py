"""The Bayesian interviewer against the scripted ask-k strategies, offline, on the same instances.

Builds a PrefDisco dataset in memory (built-in tasks, ``--personas`` personas, ``--per-task``
instances per task, ``--seed``), learns the interviewer's prior from a *disjoint* persona
library (``--prior-seed``; checked), and runs on every instance, with the scripted backend:

* ``scripted-ask1/3/5``: baseline, discovery (ask k attributes chosen by domain relevance),
  oracle (`run_episode`);
* the interviewer variants: discovery by `run_interview` (baseline and oracle by
  `run_episode` with the interviewer's answer model, ``scripted-interviewer``).

Every transcript is scored by the existing judging (`score_transcript`) and metrics
(`norm_align_ci`). Reported per strategy: mean PrefAlign per condition, NormAlign with its 95%
bootstrap interval, mean questions, the share of hidden preferences disclosed, and how often
the follow-up question changes when the first answer is altered (counterfactual: the first
reply replaced by another state of the attribute asked; for ask-k the scripted model is asked
again with the altered reply). The scripted answerer and judge read a style line the scripted
model writes: these numbers test the strategies' question choice, not a language model.

Usage::

    python benchmarks/prefdisco_interviewer.py                # ~10-20 s on one core
    python benchmarks/prefdisco_interviewer.py --personas 12 --json out.json --logs logs.jsonl
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from prefduel.core.rng import stream
from prefduel.llm import LLMClient, ScriptedBackend
from prefduel.llm.stages import ask
from prefduel.prefdisco import (
    KeywordRouter,
    RunConfig,
    build_rubrics,
    builtin_tasks,
    load_taxonomy,
    prompts,
    sample_personas,
    score_transcript,
    scripted_handlers,
)
from prefduel.prefdisco.dataset import pair_instances
from prefduel.prefdisco.episodes import (
    MODEL_TURN,
    EpisodeContext,
    EpisodeKey,
    Transcript,
    ask_request,
    run_episode,
)
from prefduel.prefdisco.interview_belief import Candidate
from prefduel.prefdisco.interview_prior import PriorConfig, check_disjoint, learn_prior
from prefduel.prefdisco.interview_replies import read_reply, scripted_phrase_handler
from prefduel.prefdisco.interviewer import (
    STOP_REASONS,
    InterviewerConfig,
    alternative_reply,
    counterfactual_follow_up,
    run_interview,
)
from prefduel.prefdisco.judging import JudgeContext
from prefduel.prefdisco.metrics import norm_align_ci
from prefduel.prefdisco.preferences import sample_profiles
from prefduel.prefdisco.store import write_jsonl

#: The interviewer's final answers are written by the same scripted answerer as ask5's, so both
#: share one set of baseline and oracle episodes and their discovery scores are paired.
INTERVIEWER_MODEL = "scripted-ask5"


@dataclass
class Bench:
    """The in-memory dataset, the clients and the contexts every strategy shares."""

    episode: EpisodeContext
    judge: JudgeContext
    instances: list[tuple[str, str]]
    seed: int
    rows: dict[str, Any] = field(default_factory=dict)


def build_bench(args: argparse.Namespace) -> tuple[Bench, Any]:
    """Dataset, prior (disjointness checked) and the scripted client."""
    taxonomy = load_taxonomy()
    tasks = builtin_tasks()
    personas, _ = sample_personas(args.personas, args.seed)
    pairs = pair_instances(personas, tasks, args.per_task, args.seed)
    profiles = {p.key: p for p in sample_profiles(pairs, taxonomy, seed=args.seed)}
    prior = learn_prior(
        taxonomy,
        PriorConfig(seed=args.prior_seed, personas=args.prior_personas, classes=args.classes),
    )
    check_disjoint(prior, personas)
    handlers = {**scripted_handlers(taxonomy, tasks), "phrase": scripted_phrase_handler(taxonomy)}
    client = LLMClient(ScriptedBackend(handlers, fail_unknown_roles=True))
    settings = RunConfig(max_turns=args.max_turns)
    task_map = {t.id: t for t in tasks}
    episode = EpisodeContext(
        taxonomy, task_map, profiles, settings, "bench", client, KeywordRouter(taxonomy)
    )
    judge = JudgeContext(taxonomy, task_map, profiles, build_rubrics(taxonomy), settings, client)
    return Bench(episode, judge, list(profiles), args.seed), prior


async def gather(jobs: Sequence[Callable[[], Awaitable[Any]]], width: int = 32) -> list[Any]:
    """Run coroutine factories, ``width`` at a time, results in order."""
    out: list[Any] = []
    for start in range(0, len(jobs), width):
        out += await asyncio.gather(*(job() for job in jobs[start : start + width]))
    return out


async def scored(bench: Bench, transcripts: Sequence[Transcript]) -> list[Any]:
    """Score transcripts with the existing judging."""
    return await gather([lambda t=t: score_transcript(t, bench.judge) for t in transcripts])


async def conditions(bench: Bench, model: str, conds: Sequence[str]) -> dict[str, list[Any]]:
    """`run_episode` for each instance and condition, scored: condition -> score rows."""
    out = {}
    for condition in conds:
        keys = [EpisodeKey(model, condition, p, t) for p, t in bench.instances]
        transcripts = await gather([lambda k=k: run_episode(k, bench.episode) for k in keys])
        out[condition] = await scored(bench, transcripts)
    return out


async def ask_k_follow_up(bench: Bench, model: str) -> list[bool]:
    """For ask-k: does the second question change when the first reply is altered?"""
    changed = []
    for persona_id, task_id in bench.instances:
        key = EpisodeKey(model, "discovery", persona_id, task_id)
        transcript = await run_episode(key, bench.episode)
        if len(transcript.turns) < 2 or not transcript.turns[0]["route"]["attributes"]:
            continue
        first = transcript.turns[0]
        candidate = Candidate(first["route"]["attributes"][0])
        reading = read_reply(first["reply"], candidate, bench.episode.taxonomy)
        reply = alternative_reply(candidate, reading, bench.episode.taxonomy, bench.seed, key.id)
        if reply is None:
            continue
        task = bench.episode.tasks[task_id]
        block = prompts.task_block(task.question, task.options)
        request = ask_request(key, block, [(first["question"], reply)], bench.episode.settings)
        outcome = await ask(MODEL_TURN, request, bench.episode.model_client)
        _, follow_up = prompts.parse_ask(str(outcome.value))
        changed.append(follow_up != transcript.turns[1]["question"])
    return changed


async def interviewer_rows(
    bench: Bench, prior: Any, config: InterviewerConfig
) -> tuple[list[Any], list[bool], list[Any]]:
    """Discovery by the interviewer: score rows, follow-up changes and the results (logs)."""
    keys = [EpisodeKey(INTERVIEWER_MODEL, "discovery", p, t) for p, t in bench.instances]
    results = await gather(
        [lambda k=k: run_interview(k, bench.episode, prior, config) for k in keys]
    )
    rows = await scored(bench, [r.transcript for r in results])
    follow = await gather(
        [
            lambda k=k: counterfactual_follow_up(k, bench.episode, prior, config, seed=bench.seed)
            for k in keys
        ]
    )
    return rows, [f.changed for f in follow if f is not None], results


def summarize(
    name: str, base: list[Any], disc: list[Any], oracle: list[Any], changed: list[bool], seed: int
) -> dict[str, Any]:
    """PrefAlign, NormAlign (paired bootstrap), questions, disclosure and follow-up change."""
    ok = [
        i
        for i in range(len(disc))
        if None not in (base[i].pref_align, disc[i].pref_align, oracle[i].pref_align)
    ]
    b, d, o = ([rows[i].pref_align for i in ok] for rows in (base, disc, oracle))
    summary = norm_align_ci(d, b, o, n_boot=1000, seed=seed, label=name)
    hidden = sum(len(r.weights) for r in disc)
    return {
        "strategy": name,
        "n": summary.n,
        "pref_align": {
            "baseline": float(np.mean(b)),
            "discovery": float(np.mean(d)),
            "oracle": float(np.mean(o)),
        },
        "norm_align": summary.value,
        "norm_align_ci": [summary.lo, summary.hi],
        "mean_questions": float(np.mean([r.questions for r in disc])),
        "disclosed_share": sum(len(r.disclosed) for r in disc) / hidden,
        "recall": float(np.mean([r.recall for r in disc])),
        "follow_up_changed": float(np.mean(changed)) if changed else None,
        "follow_up_n": len(changed),
    }


def paired_difference(
    disc: Sequence[Any], other: Sequence[Any], seed: int, label: str
) -> dict[str, float | None]:
    """Mean discovery PrefAlign difference on the same instances, 95% percentile bootstrap."""
    diffs = np.array(
        [
            a.pref_align - b.pref_align
            for a, b in zip(disc, other, strict=True)
            if a.pref_align is not None and b.pref_align is not None
        ]
    )
    if len(diffs) < 2:
        return {"mean": None, "lo": None, "hi": None}
    rng = stream(seed, "paired", label)
    means = diffs[rng.integers(0, len(diffs), size=(1000, len(diffs)))].mean(axis=1)
    lo, hi = np.quantile(means, [0.025, 0.975])
    return {"mean": float(diffs.mean()), "lo": float(lo), "hi": float(hi)}


def variants(args: argparse.Namespace) -> dict[str, tuple[InterviewerConfig, int]]:
    """Interviewer variants: name -> (config, mixture classes of its prior)."""
    base = InterviewerConfig(min_gain=args.min_gain)
    return {
        "interviewer": (base, args.classes),
        "interviewer, 3 turns": (
            InterviewerConfig(min_gain=args.min_gain, max_turns=3),
            args.classes,
        ),
        "interviewer, K=1 (no co-occurrence)": (base, 1),
        "interviewer +importance (λ=1)": (
            InterviewerConfig(
                min_gain=args.min_gain, importance_questions=True, importance_weight=1.0
            ),
            args.classes,
        ),
    }


async def main_async(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Every strategy on the same instances; one summary per strategy."""
    bench, prior = build_bench(args)
    results = []
    for k in (1, 3, 5):
        model = f"scripted-ask{k}"
        rows = await conditions(bench, model, ("baseline", "discovery", "oracle"))
        changed = await ask_k_follow_up(bench, model)
        results.append(
            summarize(
                f"ask{k}", rows["baseline"], rows["discovery"], rows["oracle"], changed, args.seed
            )
        )
    anchors = rows  # ask5's, written by INTERVIEWER_MODEL
    priors = {args.classes: prior}
    for name, (config, classes) in variants(args).items():
        if classes not in priors:
            priors[classes] = learn_prior(
                bench.episode.taxonomy,
                PriorConfig(seed=args.prior_seed, personas=args.prior_personas, classes=classes),
            )
        disc, changed, runs = await interviewer_rows(bench, priors[classes], config)
        summary = summarize(name, anchors["baseline"], disc, anchors["oracle"], changed, args.seed)
        summary["vs_ask5"] = paired_difference(disc, anchors["discovery"], args.seed, name)
        steps = [s for r in runs for s in r.steps]
        summary["importance_questions"] = sum(s.candidate.kind == "importance" for s in steps)
        summary["stop_reasons"] = {
            reason: sum(r.stop_reason == reason for r in runs) for reason in STOP_REASONS
        }
        results.append(summary)
        if args.logs and name == "interviewer":
            write_jsonl(args.logs, (r.to_json() for r in runs))
    return results


def table(results: Sequence[dict[str, Any]]) -> str:
    """The results as a plain-text table."""
    head = (
        f"{'strategy':36} {'n':>4} {'base':>5} {'disc':>5} {'orac':>5} {'NormAlign [95% CI]':>24}"
        f" {'turns':>5} {'discl':>5} {'follow-up changes':>17} {'disc - ask5 disc':>22}"
    )
    lines = [head, "-" * len(head)]
    for r in results:
        na = "undefined" if r["norm_align"] is None else f"{r['norm_align']:.1f}"
        lo, hi = r["norm_align_ci"]
        ci = "" if lo is None else f" [{lo:.1f}, {hi:.1f}]"
        fu = (
            "-"
            if r["follow_up_changed"] is None
            else (f"{100 * r['follow_up_changed']:.0f}% of {r['follow_up_n']}")
        )
        p = r["pref_align"]
        vs = r.get("vs_ask5") or {"mean": None}
        delta = (
            "" if vs["mean"] is None else f"{vs['mean']:+.2f} [{vs['lo']:+.2f}, {vs['hi']:+.2f}]"
        )
        lines.append(
            f"{r['strategy']:36} {r['n']:>4} {p['baseline']:>5.2f} {p['discovery']:>5.2f} "
            f"{p['oracle']:>5.2f} {na + ci:>24} {r['mean_questions']:>5.2f} "
            f"{100 * r['disclosed_share']:>4.0f}% {fu:>17} {delta:>22}"
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
    parser.add_argument("--json", help="also write the results to this JSON file")
    parser.add_argument(
        "--logs", help="write the interviewer's per-episode disclosure logs to this JSONL file"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark and print the table."""
    args = parse_args(argv)
    start = time.perf_counter()
    results = asyncio.run(main_async(args))
    print(table(results))
    seconds = time.perf_counter() - start
    print(
        f"\n{len(results)} strategies, offline scripted backend, {seconds:.1f} s. The scripted "
        "answerer and judge test the strategies' choice of questions, not a model."
    )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(results, fh, indent=2, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
