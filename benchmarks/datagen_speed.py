"""Speed of ``prefduel datagen`` offline (scripted backend) on ``examples/small.yaml``.

Measures, in one process with a fresh cache:

* **cold**: the whole pipeline (11,712 calls: questions, answers, rater, judge) answered by the
  scripted backend, every answer parsed, stored in the SQLite cache and logged, then the world
  built and written;
* **warm**: the same run again, every call a cache hit (what a resumed run pays);
* **dry run**: the per-stage estimate with every prompt known.

Reference (same run, same number of requests): ``LLMClient`` + ``ScriptedBackend`` with trivial
placeholder handlers on plain requests, i.e. the LLM layer's own cost per uncached call. The
ratio says what datagen adds on top (building and parsing prompts, the scripted truth, tallies).

    python benchmarks/datagen_speed.py
    python benchmarks/datagen_speed.py --samples 1 --repeats 3
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
import time
from pathlib import Path

from prefduel.datagen import estimate, generate, load_config
from prefduel.llm import LLMClient, LLMRequest, ScriptedBackend

ROOT = Path(__file__).resolve().parents[1]


def reference(n: int, folder: Path) -> float:
    """Seconds for ``n`` uncached scripted calls through the bare client."""
    requests = [
        LLMRequest.chat(
            "gpt-4o-mini",
            f"Answer A: ... Answer B: ... question {i}",
            system="You are a student.",
            role="judge",
            sample=i % 4,
            temperature=1.0,
            max_tokens=4,
        )
        for i in range(n)
    ]
    start = time.perf_counter()
    with LLMClient(ScriptedBackend(), cache=folder / "ref.sqlite", log_hits=False) as client:
        client.run(requests)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", default=str(ROOT / "examples" / "small.yaml"))
    parser.add_argument("--samples", type=int, default=None, help="override judge samples")
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    config = load_config(args.config)
    if args.samples is not None:
        config = dataclasses.replace(config, samples=args.samples)
    for repeat in range(args.repeats):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            llm = dataclasses.replace(
                config.llm, cache=str(folder / "cache.sqlite"), call_log=str(folder / "log")
            )
            t0 = time.perf_counter()
            cold = generate(config, llm=llm, output=folder / "world", progress=False)
            t_cold = time.perf_counter() - t0
            calls = sum(s.calls for s in cold.stages)
            t0 = time.perf_counter()
            warm = generate(config, llm=llm, output=folder / "world2", progress=False)
            t_warm = time.perf_counter() - t0
            t0 = time.perf_counter()
            plan = estimate(config, llm=llm)
            t_dry = time.perf_counter() - t0
            t_ref = reference(calls, folder)
            assert cold.complete and warm.complete and plan.total.to_send == 0
            assert cold.world.digest() == warm.world.digest()
            print(
                f"[{repeat}] {config.name}: {calls:,d} calls, world "
                f"N={cold.world.N} S={cold.world.S} K={cold.world.K}"
            )
            print(f"  cold (all calls sent)   {t_cold:6.2f} s  {calls / t_cold:8,.0f} calls/s")
            print(f"  warm (all cache hits)   {t_warm:6.2f} s  {calls / t_warm:8,.0f} calls/s")
            print(f"  dry run (all cached)    {t_dry:6.2f} s  {calls / t_dry:8,.0f} calls/s")
            print(
                f"  reference: bare client  {t_ref:6.2f} s  {calls / t_ref:8,.0f} calls/s   "
                f"ratio cold/reference {t_cold / t_ref:4.2f}x"
            )


if __name__ == "__main__":
    main()
