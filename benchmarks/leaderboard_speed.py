"""Time of the full leaderboard: the evaluation rosters x every registered policy x 32 seeds,
with their reference rows (target: <= 10 minutes on 2 cores).

Runs the grid with `prefduel.runner.sweep.sweep` into a fresh results file (nothing is
resumed, so the time is the whole grid's) and prints the wall time against the target, then
per policy the summed time of its cells and its ratio to ``notransfer``'s cells in the same
run, and the share of the reference rows. Only times are printed: the scores of locked
rosters are for the report, not for this script. A busy machine inflates the wall time; the
summed cell time divided by the workers is what two idle cores would take.

    python benchmarks/leaderboard_speed.py                     # 3 rosters x all x 32 seeds
    python benchmarks/leaderboard_speed.py --seeds 0-3 --policies coduel,notransfer
    python benchmarks/leaderboard_speed.py --rosters dev,control-scrambled,control-unstructured \
        --seeds 0-3 --ask-budget 2                              # one ask track, 4 seeds

``--ask-budget B`` times the ask track of B questions per arrival (the worlds ``ROSTER+askB``,
as ``prefduel leaderboard --ask-budget B`` names them). With fewer seeds than 32 the summed
cell time is also given scaled to 32 seeds. The reference rows are computed together per world
and carry no time of their own; ``--references`` times them once more in this process (one
core), each heavy reference apart.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections import defaultdict
from typing import Any

import numpy as np

from prefduel.cli.main import parse_seeds
from prefduel.core.registry import split_specs
from prefduel.policies import POLICIES
from prefduel.policies.loading import canonical_spec
from prefduel.runner.headroom import HORIZON, play_oracle_prior
from prefduel.runner.headroom_ask import play_oracle_prior_ask
from prefduel.runner.references import linear_oracle_theta, reference_rows
from prefduel.runner.sweep import sweep
from prefduel.worlds import parse_world
from prefduel.worlds.spec import ask_label

EVALUATION = "test-profiles,test-composite,test-quirky"
TARGET_S = 600.0
#: The seeds of the leaderboard, which fewer measured seeds are scaled to.
FULL_SEEDS = 32


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rosters", default=EVALUATION)
    parser.add_argument("--seeds", default="0-31")
    parser.add_argument("--policies", default=",".join(POLICIES.ids()))
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--ask-budget", type=int, default=0, help="the ask track ROSTER+askB")
    parser.add_argument("--references", action="store_true", help="time each reference apart")
    args = parser.parse_args()
    worlds = [ask_label(r, args.ask_budget) for r in args.rosters.split(",") if r]
    seeds = parse_seeds(args.seeds)
    policies = [canonical_spec(s) for s in split_specs(args.policies)]
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "leaderboard.jsonl")
        start, cpu0 = time.perf_counter(), os.times()
        rows = sweep(worlds, seeds, policies, out, jobs=args.jobs, allow_test=True)
        wall = time.perf_counter() - start
        cpu1 = os.times()
    children_cpu = (cpu1.children_user + cpu1.children_system) - (
        cpu0.children_user + cpu0.children_system
    )
    own_cpu = (cpu1.user + cpu1.system) - (cpu0.user + cpu0.system)
    grid = f"{len(worlds)} worlds x {len(policies)} policies x {len(seeds)} seeds"
    print(f"\nleaderboard: {grid} ({', '.join(worlds)}), {args.jobs} workers")
    print(
        f"wall {wall:7.1f} s (target {TARGET_S:.0f} s: ratio {wall / TARGET_S:.2f}); CPU "
        f"{children_cpu + own_cpu:7.1f} s"
    )
    cell_table(rows, args.jobs, FULL_SEEDS / len(seeds))
    if args.references:
        reference_table(worlds, seeds, FULL_SEEDS / len(seeds))


def cell_table(rows: list[dict], jobs: int, scale: float) -> None:
    """Per policy the summed time of its cells, its share and its ratio to ``notransfer``;
    with ``scale`` != 1 also the summed time scaled to the leaderboard's seeds."""
    cells: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    for row in rows:
        key = row["policy"]  # a policy spec, or a reference row's name (ref:...)
        cells[key] += row.get("wall_time", 0.0) or 0.0
        counts[key] += 1
    total = sum(cells.values())
    print(
        f"summed cell time {total:7.1f} s, / {jobs} workers = {total / jobs:6.1f} s (ratio "
        f"{total / jobs / TARGET_S:.2f})"
    )
    if scale != 1.0:
        print(
            f"scaled to {FULL_SEEDS} seeds: {total * scale:7.1f} s, / {jobs} workers = "
            f"{total * scale / jobs:6.1f} s (target {TARGET_S:.0f} s)"
        )
    ref = cells.get("notransfer")
    header = f"{'cells':28s} {'n':>5s} {'summed s':>9s} {'mean s':>7s} {'share':>6s}"
    print(f"{header} {'vs notransfer':>14s} {f'x{FULL_SEEDS} seeds':>12s}")
    untimed = sorted(k for k in cells if cells[k] == 0.0)
    for key in sorted((k for k in cells if cells[k] > 0.0), key=lambda k: -cells[k]):
        ratio = f"{cells[key] / ref:13.1f}x" if ref else ""
        print(
            f"{key:28s} {counts[key]:5d} {cells[key]:9.1f} {cells[key] / counts[key]:7.2f} "
            f"{cells[key] / total:6.1%} {ratio:>14s} {cells[key] * scale:11.1f}s"
        )
    if untimed:
        print(f"not timed per row (in the wall and CPU totals): {', '.join(untimed)}")


def reference_table(worlds: list[str], seeds: list[int], scale: float) -> None:
    """CPU time of the reference rows per world and seed, in this process on one core: all of
    them (`reference_rows`) and the population references apart."""
    from threadpoolctl import threadpool_limits

    parts: dict[str, float] = defaultdict(float)
    with threadpool_limits(limits=1):  # as in a sweep's workers
        for name in worlds:
            for seed in seeds:
                world = parse_world(name).make(seed, allow_test=True)
                timed = {
                    "all reference rows": lambda w=world: reference_rows(w),
                    "ref:oracle-prior": lambda w=world: play_oracle_prior(w, _theta(w)),
                    "ref:oracle-prior-lookahead": lambda w=world: play_oracle_prior(
                        w, _theta(w), horizon=HORIZON
                    ),
                }
                if world.ask_budget and world.asks is not None:
                    timed["ref:oracle-prior-ask"] = lambda w=world: play_oracle_prior_ask(
                        w, _theta(w), w.ask_budget
                    )
                for key, run in timed.items():
                    start = time.process_time()
                    run()
                    parts[key] += time.process_time() - start
    print(f"\nreference rows, CPU s summed over {len(worlds)} worlds x {len(seeds)} seeds:")
    for key, spent in parts.items():
        print(f"{key:28s} {spent:9.1f} {f'x{FULL_SEEDS} seeds':>12s} {spent * scale:9.1f}")


def _theta(world: Any) -> np.ndarray:
    return linear_oracle_theta(world.Phi, world.U)


if __name__ == "__main__":
    main()
