"""TutorSim calibration: reference rows and the foundation learners on every roster.

Prints, per roster, the mean score over seeds (± s.e.) of the reference rows (best single fixed
pair, best fixed pair per user, per-user linear oracle, pooled linear oracle, rater top-2) and of
``notransfer`` and ``pooled``, then checks the reference rows against each roster's targets.

    python benchmarks/calibration.py                      # dev, 32 seeds
    python benchmarks/calibration.py --all --allow-test   # every roster (locked ones: report only)
    python benchmarks/calibration.py --all --allow-test --references-only   # no policy is run

Reference rows are properties of a world computed without any policy, so they may be computed
on the evaluation rosters while calibrating; ``--references-only`` guarantees that no policy
runs. TutorSim's knobs are tuned on ``dev`` only; the evaluation rosters' data (held-out
profiles, template) were designed against their reference-row targets below, and policies are
run on them once the data are frozen.
"""

from __future__ import annotations

import argparse
import os
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from prefduel.runner.cell import run_cell
from prefduel.runner.references import reference_rows
from prefduel.worlds import ROSTERS, get_world

COLUMNS = (
    ("ref:best-single-pair", "single pair"),
    ("ref:best-pair-per-user", "pair/user"),
    ("ref:oracle-user", "oracle/user"),
    ("ref:oracle-pooled", "pooled oracle"),
    ("ref:rater-top2", "rater top-2"),
)
POLICIES = ("notransfer", "pooled")

#: Reference-row targets (lo, hi) per roster: dev's calibration targets, and the evaluation
#: rosters' targets from the paper's leaderboard (best single pair ±4, pair/user and oracle ±5).
TARGETS: dict[str, dict[str, tuple[float, float]]] = {
    "dev": {
        "ref:best-single-pair": (5, 25),
        "ref:best-pair-per-user": (65, 76),
        "ref:oracle-user": (80, 85),
        "ref:oracle-pooled": (-100, 35),
        "ref:rater-top2": (-100, 35),
    },
    "test-profiles": {
        "ref:best-single-pair": (-100, 9),
        "ref:best-pair-per-user": (71, 81),
        "ref:oracle-user": (80, 90),
    },
    "test-composite": {
        "ref:best-single-pair": (13, 21),
        "ref:best-pair-per-user": (61, 71),
        "ref:oracle-user": (76, 86),
    },
    "test-quirky": {
        "ref:best-single-pair": (18, 26),
        "ref:best-pair-per-user": (63, 73),
        "ref:oracle-user": (77, 87),
    },
}
#: The pooled oracle must sit at least this far lower on held-out profiles than on each
#: template roster (shared structure that transfer methods can use).
POOLED_GAP = 8.0


def _cell(args: tuple[str, int, bool, bool]) -> dict[str, float]:
    roster, seed, allow_test, references_only = args
    world = get_world(roster, seed, allow_test=allow_test)
    scores = {r["policy"]: r["score"] for r in reference_rows(world)}
    if not references_only:
        for spec in POLICIES:
            scores[spec] = run_cell(world, spec)["score"]
    return scores


def _fmt_target(key: str, roster: str) -> str:
    lo, hi = TARGETS.get(roster.split("@")[0], {}).get(key, (None, None))
    if lo is None:
        return ""
    return f"<= {hi:g}" if lo <= -100 else f"{lo:g}-{hi:g}"


def _check(means: dict[str, dict[str, float]]) -> list[str]:
    """One line per target: the roster, the row, the mean, the range and ok / MISSED."""
    lines = []
    for roster, row in means.items():
        for key, (lo, hi) in TARGETS.get(roster.split("@")[0], {}).items():
            ok = lo <= row[key] <= hi
            lines.append(
                f"  {roster:22s} {key:24s} {row[key]:6.1f}  target {_fmt_target(key, roster):9s}"
                f" {'ok' if ok else 'MISSED'}"
            )
    held = next((r for r in means if r.split("@")[0] == "test-profiles"), None)
    for roster in means:
        if held and roster.split("@")[0] in ("test-composite", "test-quirky"):
            gap = means[roster]["ref:oracle-pooled"] - means[held]["ref:oracle-pooled"]
            ok = gap >= POOLED_GAP
            lines.append(
                f"  pooled oracle {roster} - {held}: {gap:+.1f} points "
                f"(target >= +{POOLED_GAP:g}) {'ok' if ok else 'MISSED'}"
            )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rosters", default="dev", help="comma list; ROSTER@1 = version 1")
    parser.add_argument("--all", action="store_true", help="every roster of the table")
    parser.add_argument("--seeds", type=int, default=32)
    parser.add_argument("--allow-test", action="store_true")
    parser.add_argument(
        "--references-only", action="store_true", help="reference rows only: run no policy"
    )
    parser.add_argument("--jobs", type=int, default=os.cpu_count())
    args = parser.parse_args()
    rosters = list(ROSTERS) if args.all else args.rosters.split(",")
    columns = [*COLUMNS] + ([] if args.references_only else [(p, p) for p in POLICIES])
    start = time.perf_counter()
    what = "reference rows only, no policy run" if args.references_only else "references + policies"
    print(f"TutorSim calibration, {args.seeds} seeds per roster ({what}; score mean ± s.e.)")
    print(f"{'roster':22s}" + "".join(f"{name:>16s}" for _, name in columns))
    means: dict[str, dict[str, float]] = {}
    with ProcessPoolExecutor(args.jobs) as pool:
        for roster in rosters:
            cells = [(roster, s, args.allow_test, args.references_only) for s in range(args.seeds)]
            results = list(pool.map(_cell, cells))
            line, means[roster] = f"{roster:22s}", {}
            for key, _ in columns:
                vals = np.array([r[key] for r in results])
                se = vals.std(ddof=1) / np.sqrt(vals.size) if vals.size > 1 else float("nan")
                means[roster][key] = float(vals.mean())
                line += f"{vals.mean():>10.1f} ± {se:3.1f}"
            print(line, flush=True)
    checks = _check(means)
    if checks:
        print("targets (means over the seeds above):")
        print("\n".join(checks))
    print(f"wall time {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
