"""Judge probabilities from logprobs vs sampled picks: calls, time and agreement.

Runs datagen twice against the local OpenAI-compatible test server (the real client path: the
``openai`` SDK over HTTP), whose judge draws each pick from the scripted student's probability
and returns it as ``top_logprobs``:

* ``samples``: ``samples`` sampled picks per (student, question, pair, display order, label
  assignment) configuration;
* ``logprobs``: one call per configuration, the probability read from the logprobs.

It prints the judge calls and wall time of each, and how well they agree: the z-score of the
sampled wins against their logprob expectation ``p * samples`` (|z| < 3 expected), and the mean
absolute difference of the click probabilities P (the sampling noise of ``samples`` picks).

    python benchmarks/judge_logprobs.py
    python benchmarks/judge_logprobs.py --samples 16 --students 2
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from prefduel.datagen import ScriptedWorld, config_from_mapping, generate
from prefduel.llm import LLMClient
from prefduel.llm.openai_backend import OpenAIBackend
from prefduel.llm.testserver import OpenAITestServer

KEY_ENV = "PREFDUEL_BENCH_KEY"
STUDENTS = ["math_major", "anxious_high_schooler", "nursing_student", "esl_engineer"]


def run(config, folder: Path, mode: str) -> tuple[object, float]:
    """One datagen run of ``mode`` against a fresh test server and cache."""
    config = dataclasses.replace(
        config,
        judge_mode=mode,
        output=str(folder / mode),
        llm=dataclasses.replace(
            config.llm, backend="openai", api_key_env=KEY_ENV, cache=str(folder / f"{mode}.db")
        ),
    )
    truth = ScriptedWorld(config)
    with OpenAITestServer(
        answer=truth.http_answer, distribution=truth.http_distribution
    ) as server:
        backend = OpenAIBackend(server.base_url, api_key_env=KEY_ENV, timeout=30)
        start = time.perf_counter()
        with LLMClient(backend, cache=config.llm.cache, max_connections=16) as client:
            result = generate(config, client=client, progress=False)
        seconds = time.perf_counter() - start
    assert result.complete, result.summary()
    return result, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=8, help="judge samples per configuration")
    parser.add_argument("--students", type=int, default=2, choices=range(1, len(STUDENTS) + 1))
    args = parser.parse_args()
    os.environ.setdefault(KEY_ENV, "bench-key")
    config = config_from_mapping(
        {
            "name": "logprobs-bench",
            "seed": 3,
            "topics": {"builtin": "dev", "take": ["derivatives"]},
            "students": {"builtin": "dev", "take": STUDENTS[: args.students]},
            "samples": args.samples,
            "world": {"arrivals": 8, "rounds": 6},
        },
        source="bench.yaml",
    )
    with tempfile.TemporaryDirectory() as tmp:
        results = {mode: run(config, Path(tmp), mode) for mode in ("samples", "logprobs")}
        tables = {
            mode: np.load(Path(tmp) / mode / "datagen" / "tables.npz") for mode in results
        }
        p = tables["logprobs"]["judge_p"]
        wins = (tables["samples"]["picks"] == 1).sum(axis=-1)
        z = (wins - p * args.samples).sum() / math.sqrt((args.samples * p * (1 - p)).sum())
        diff = np.abs(results["samples"][0].world.P - results["logprobs"][0].world.P).mean()
    print(
        f"{config.name}: {len(config.students)} students x {config.n_questions} questions x "
        f"{config.K} personas; {p.size:,d} judge configurations, {args.samples} samples each"
    )
    for mode, (result, seconds) in results.items():
        judge = result.stage("judge")
        print(
            f"  {mode:9s} judge calls {judge.calls:>7,d}   judge {judge.seconds:6.2f} s   "
            f"run {seconds:6.2f} s"
        )
    ratio = results["samples"][0].stage("judge").calls / results["logprobs"][0].stage("judge").calls
    print(f"  logprobs: {ratio:.0f}x fewer judge calls")
    print(
        f"  agreement: sampled wins vs logprob expectation z = {z:+.2f} (|z| < 3 expected); "
        f"mean |P_samples - P_logprobs| = {diff:.4f} (the sampling noise of {args.samples} "
        "picks)"
    )


if __name__ == "__main__":
    main()
