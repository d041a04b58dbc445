"""TutorSim calibration: reference rows and the foundation learners on every roster.

Prints, per roster, the mean score over seeds (± s.e.) of the reference rows (best single fixed
pair, best fixed pair per user, per-user linear oracle, pooled linear oracle, rater top-2) and of
``notransfer`` and ``pooled``, next to the calibration targets measured on ``dev``.

    python benchmarks/calibration.py                      # dev, 32 seeds
    python benchmarks/calibration.py --all --allow-test   # every roster (locked ones: report only)

TutorSim's knobs are tuned on ``dev`` only; the other rosters are reported, never tuned on.
"""

from __future__ import annotations

import argparse
import os
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from prefduel.runner.cell import run_cell
from prefduel.stats.references import reference_rows
from prefduel.worlds import ROSTERS, get_world

COLUMNS = (
    ("ref:best-single-pair", "single pair", "5-25"),
    ("ref:best-pair-per-user", "pair/user", "65-76"),
    ("ref:oracle-user", "oracle/user", "80-85"),
    ("ref:oracle-pooled", "pooled oracle", "<=35"),
    ("ref:rater-top2", "rater top-2", "<=35"),
    ("notransfer", "notransfer", ">0"),
    ("pooled", "pooled", ""),
)


def _cell(args: tuple[str, int, bool]) -> dict[str, float]:
    roster, seed, allow_test = args
    world = get_world(roster, seed, allow_test=allow_test)
    scores = {r["policy"]: r["score"] for r in reference_rows(world)}
    for spec in ("notransfer", "pooled"):
        scores[spec] = run_cell(world, spec)["score"]
    return scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rosters", default="dev")
    parser.add_argument("--all", action="store_true", help="every roster of the table")
    parser.add_argument("--seeds", type=int, default=32)
    parser.add_argument("--allow-test", action="store_true")
    parser.add_argument("--jobs", type=int, default=os.cpu_count())
    args = parser.parse_args()
    rosters = list(ROSTERS) if args.all else args.rosters.split(",")
    start = time.perf_counter()
    header = f"{'roster':22s}" + "".join(f"{name:>16s}" for _, name, _ in COLUMNS)
    print(f"TutorSim calibration, {args.seeds} seeds per roster (mean ± s.e. of the score)")
    print(header)
    print(f"{'target (dev)':22s}" + "".join(f"{t:>16s}" for _, _, t in COLUMNS))
    with ProcessPoolExecutor(args.jobs) as pool:
        for roster in rosters:
            cells = [(roster, s, args.allow_test) for s in range(args.seeds)]
            results = list(pool.map(_cell, cells))
            line = f"{roster:22s}"
            for key, _, _ in COLUMNS:
                vals = np.array([r[key] for r in results])
                se = vals.std(ddof=1) / np.sqrt(vals.size) if vals.size > 1 else float("nan")
                line += f"{vals.mean():>10.1f} ± {se:3.1f}"
            print(line, flush=True)
    print(f"wall time {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
