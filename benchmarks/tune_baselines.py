"""Tune the baselines on the ``dev`` roster only, and print the grid.

Every setting in ``GRID`` is run on ``dev`` seeds 0-15 (resuming from the results file); the
value with the highest mean score is chosen, and the table of all grid points (score mean ±
s.e.) is printed in Markdown for the README. The chosen values become the registered defaults.

    python benchmarks/tune_baselines.py --out results/tuning.jsonl
"""

from __future__ import annotations

import argparse
import os
from collections import defaultdict

import numpy as np

from prefduel.runner.sweep import sweep

META_VARS = (0.5, 1.0, 2.0)
GRID: dict[str, list[str]] = {
    "rucb": [f"rucb:alpha={a}" for a in (0.01, 0.03, 0.1, 0.3, 0.51, 1.0)],
    "colstim": [f"colstim:c={c},scale={s}" for c in (0.5, 1.0, 2.0) for s in (0.1, 0.25, 0.5, 1.0)],
    "maxinp": [f"maxinp:beta={b}" for b in (0.1, 0.25, 0.5, 1.0, 2.0)],
    "coldb": [
        f"coldb:beta={b},threshold={t}" for b in (0.5, 1.0) for t in (0.25, 0.5, 0.75, 1.0, 1.5)
    ],
    "dts-laplace": [f"dts-laplace:scale={s}" for s in (0.1, 0.25, 0.5, 1.0)],
    "maxpair-ucb": [f"maxpair-ucb:beta={b}" for b in (0.25, 0.5, 1.0, 2.0)],
    "meta-ts": [
        f"meta-ts:meta_var={v},rule={r}" for r in ("ts", "greedy") for v in (0.5, 1.0, 2.0)
    ],
    "hier-ts": [
        f"hier-ts:meta_var={v},rule={r}" for r in ("ts", "greedy") for v in (0.5, 1.0, 2.0)
    ],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=16)
    parser.add_argument("--out", default="results/tuning.jsonl")
    parser.add_argument("--jobs", type=int, default=os.cpu_count())
    args = parser.parse_args()
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    specs = [spec for grid in GRID.values() for spec in grid]
    rows = sweep(["dev"], list(range(args.seeds)), specs, args.out, jobs=args.jobs, progress=True)
    scores = defaultdict(list)
    for row in rows:
        if row["kind"] == "policy":
            scores[row["policy"]].append(row["score"])
    print(f"| policy | grid (dev, seeds 0-{args.seeds - 1}: score mean ± s.e.) | chosen |")
    print("|---|---|---|")
    for name in GRID:
        canon = [s for s in scores if s.split(":")[0] == name]
        stats = {
            s: (np.mean(scores[s]), np.std(scores[s], ddof=1) / np.sqrt(len(scores[s])))
            for s in canon
        }
        best = max(stats, key=lambda s: stats[s][0])
        cells = "; ".join(
            f"`{s.split(':', 1)[1]}` {m:.1f} ± {e:.1f}" for s, (m, e) in stats.items()
        )
        print(f"| `{name}` | {cells} | `{best.split(':', 1)[1]}` |")


if __name__ == "__main__":
    main()
