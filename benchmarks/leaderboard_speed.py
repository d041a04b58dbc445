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
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections import defaultdict

from prefduel.cli.main import parse_seeds
from prefduel.core.registry import split_specs
from prefduel.policies import POLICIES
from prefduel.policies.loading import canonical_spec
from prefduel.runner.sweep import sweep

EVALUATION = "test-profiles,test-composite,test-quirky"
TARGET_S = 600.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rosters", default=EVALUATION)
    parser.add_argument("--seeds", default="0-31")
    parser.add_argument("--policies", default=",".join(POLICIES.ids()))
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    rosters = [r for r in args.rosters.split(",") if r]
    seeds = parse_seeds(args.seeds)
    policies = [canonical_spec(s) for s in split_specs(args.policies)]
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "leaderboard.jsonl")
        start, cpu0 = time.perf_counter(), os.times()
        rows = sweep(rosters, seeds, policies, out, jobs=args.jobs, allow_test=True)
        wall = time.perf_counter() - start
        cpu1 = os.times()
    children_cpu = (cpu1.children_user + cpu1.children_system) - (
        cpu0.children_user + cpu0.children_system
    )
    own_cpu = (cpu1.user + cpu1.system) - (cpu0.user + cpu0.system)
    cells = defaultdict(float)
    counts = defaultdict(int)
    for row in rows:
        key = row["policy"]  # a policy spec, or a reference row's name (ref:...)
        cells[key] += row.get("wall_time", 0.0) or 0.0
        counts[key] += 1
    total = sum(cells.values())
    grid = f"{len(rosters)} rosters x {len(policies)} policies x {len(seeds)} seeds"
    print(f"\nleaderboard: {grid}, {args.jobs} workers")
    print(
        f"wall {wall:7.1f} s (target {TARGET_S:.0f} s: ratio {wall / TARGET_S:.2f}); CPU "
        f"{children_cpu + own_cpu:7.1f} s; summed cell time {total:7.1f} s, / {args.jobs} "
        f"workers = {total / args.jobs:6.1f} s (ratio {total / args.jobs / TARGET_S:.2f})"
    )
    ref = cells.get("notransfer")
    header = f"{'cells':28s} {'n':>5s} {'summed s':>9s} {'mean s':>7s} {'share':>6s}"
    print(f"{header} {'vs notransfer':>14s}")
    untimed = sorted(k for k in cells if cells[k] == 0.0)
    for key in sorted((k for k in cells if cells[k] > 0.0), key=lambda k: -cells[k]):
        ratio = f"{cells[key] / ref:13.1f}x" if ref else ""
        print(
            f"{key:28s} {counts[key]:5d} {cells[key]:9.1f} {cells[key] / counts[key]:7.2f} "
            f"{cells[key] / total:6.1%} {ratio:>14s}"
        )

    if untimed:
        print(f"not timed per row (in the wall and CPU totals): {', '.join(untimed)}")


if __name__ == "__main__":
    main()
