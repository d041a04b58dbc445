"""CODuel's ablation table and main findings on TutorSim.

Runs (or resumes, from the results file) CODuel, its ablations and ``notransfer`` on the given
rosters and prints, per roster: score and excess regret (mean ± s.e. over seeds), and the
paired relative change in excess regret and the paired score difference of each policy vs full
CODuel, with 95% t intervals over seeds, and the mean wall time of a run; then CODuel vs
``notransfer`` (paired difference in excess regret and relative change, 95% intervals), which
checks the gate's promise (CODuel never more than 2% above
``notransfer``) and the paper's main finding.

    python benchmarks/coduel_ablation.py --rosters dev --seeds 0-31          # design roster
    python benchmarks/coduel_ablation.py --rosters control-scrambled,control-unstructured \\
        --policies coduel,coduel:gate=off,notransfer
    python benchmarks/coduel_ablation.py --rosters test-profiles,test-composite,test-quirky \\
        --allow-test                                                          # once, to report

Settings of CODuel were fixed on ``dev``; locked rosters are run once for reporting.
"""

from __future__ import annotations

import argparse
import os
from collections import defaultdict

import numpy as np
from scipy import stats

from prefduel.cli.main import parse_seeds
from prefduel.core.registry import split_specs
from prefduel.policies.loading import canonical_spec
from prefduel.runner.sweep import sweep

ABLATIONS = (
    "coduel",
    "coduel:population=off",
    "coduel:recal=off",
    "coduel:pair=greedy",
    "coduel:gate=off",
    "notransfer",
)


def mean_ci(values: np.ndarray, level: float = 0.95) -> tuple[float, float, float]:
    """Mean and the two ends of a t interval."""
    n = values.size
    mean = float(values.mean())
    if n < 2:
        return mean, float("nan"), float("nan")
    half = stats.t.ppf(0.5 + level / 2, n - 1) * values.std(ddof=1) / np.sqrt(n)
    return mean, mean - half, mean + half


def se(values: np.ndarray) -> float:
    """Standard error of the mean (nan for one value)."""
    return values.std(ddof=1) / np.sqrt(values.size) if values.size > 1 else float("nan")


def _by_policy(rows: list[dict], roster: str) -> dict[str, dict[int, dict]]:
    """Policy rows of one roster: ``{spec: {seed: row}}``."""
    by: dict[str, dict[int, dict]] = defaultdict(dict)
    for r in rows:
        if r["world"] == roster and r["kind"] == "policy":
            by[r["policy"]][r["seed"]] = r
    return by


def _versus(cells: dict[int, dict], full: dict[int, dict]) -> tuple[str, str]:
    """Paired relative change in excess regret and score difference vs full CODuel."""
    paired = [s for s in sorted(cells) if s in full]
    if not paired:
        return "", ""
    change = np.array([cells[s]["excess"] / full[s]["excess"] - 1 for s in paired]) * 100
    m, lo, hi = mean_ci(change)
    diff = np.array([cells[s]["score"] - full[s]["score"] for s in paired])
    dm, dlo, dhi = mean_ci(diff)
    return f"{m:+6.1f}% [{lo:+5.1f}, {hi:+5.1f}]", f"{dm:+6.2f} [{dlo:+5.2f}, {dhi:+5.2f}]"


def report(rows: list[dict], roster: str, policies: list[str]) -> None:
    """Print the ablation table of one roster: per policy, score and excess regret (mean ±
    s.e.), the paired relative change in excess and the paired score difference vs full CODuel
    (95% t intervals over the seeds both ran), and the mean wall time of a run."""
    by = _by_policy(rows, roster)
    refs = defaultdict(list)
    for r in rows:
        if r["world"] == roster and r["kind"] == "reference":
            refs[r["policy"]].append(r["score"])
    full = by.get("coduel", {})
    print(f"\n== {roster} ==")
    header = f"{'policy':46s} {'seeds':>5s} {'score':>14s} {'excess':>16s}"
    print(f"{header} {'excess vs coduel (95% CI)':>28s} {'score vs coduel':>24s} {'wall s':>7s}")
    for spec in policies:
        cells = by.get(spec, {})
        seeds = sorted(cells)
        if not seeds:
            continue
        score = np.array([cells[s]["score"] for s in seeds])
        excess = np.array([cells[s]["excess"] for s in seeds])
        wall = np.mean([cells[s]["wall_time"] for s in seeds])
        rel, diff = _versus(cells, full) if spec != "coduel" else ("", "")
        print(
            f"{spec:46s} {len(seeds):5d} {score.mean():7.2f} ± {se(score):4.2f} "
            f"{excess.mean():9.1f} ± {se(excess):4.1f} {rel:>28s} {diff:>24s} {wall:7.2f}"
        )
    for name in ("ref:oracle-user", "ref:best-pair-per-user", "ref:rater-top2"):
        if refs.get(name):
            print(f"{name + ' [ref]':46s} {len(refs[name]):5d} {np.mean(refs[name]):7.2f}")
    nt = by.get("notransfer", {})
    paired = sorted(set(full) & set(nt))
    if paired:
        diff = np.array([full[s]["excess"] - nt[s]["excess"] for s in paired])
        rel = np.array([full[s]["excess"] / nt[s]["excess"] - 1 for s in paired]) * 100
        d, dlo, dhi = mean_ci(diff)
        r, rlo, rhi = mean_ci(rel)
        verdict = "holds" if r <= 2.0 else "VIOLATED"
        print(
            f"coduel - notransfer excess: {d:+.1f} [{dlo:+.1f}, {dhi:+.1f}] "
            f"({r:+.1f}% [{rlo:+.1f}, {rhi:+.1f}]), n={len(paired)}; "
            f"gate promise (<= +2%): {verdict}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rosters", default="dev")
    parser.add_argument("--seeds", default="0-31")
    parser.add_argument("--policies", default=",".join(ABLATIONS))
    parser.add_argument("--out", default="results/coduel.jsonl")
    parser.add_argument("--jobs", type=int, default=os.cpu_count())
    parser.add_argument("--allow-test", action="store_true")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args()
    rosters = [r for r in args.rosters.split(",") if r]
    policies = [canonical_spec(spec) for spec in split_specs(args.policies)]  # as rows name them
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    rows = sweep(
        rosters,
        parse_seeds(args.seeds),
        policies,
        args.out,
        jobs=args.jobs,
        allow_test=args.allow_test,
        progress=not args.no_progress,
    )
    for roster in rosters:
        report(rows, roster, policies)


if __name__ == "__main__":
    main()
