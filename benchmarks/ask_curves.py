"""What asking is worth: the budget curve and the answer-noise curve of every ask-capable policy.

For every roster, answer style and seed, runs the ask-capable policies on the ask tracks
``ROSTER[/STYLE]+askB`` for each budget B (B = 0: the roster without questions), the clicks-only
policies beside them, and computes the rows the goal is judged against (no policy involved):
``online:oracle-prior-lookahead`` (the clicks-only online headroom reference: a prior of the
*earlier* users' exact weights, a 4-round lookahead), its recalibration-aware version
``online:oracle-prior-lookahead-recal`` (the rater seen through the best map fitted on earlier
users) and ``ref:oracle-prior-ask`` (the leave-one-out population prior that asks). Prints:

* per roster and style, the score of each policy at each budget (mean ± s.e. over seeds, each an
  independent world) and the references;
* paired differences (95% t intervals over seeds): each ask policy at each B against the
  online lookahead reference, its recalibration-aware version and CODuel (clicks only);
* on the controls, each ask policy's excess regret against ``notransfer``'s, in percent (the
  goal: never more than 2% worse);
* CPU seconds per run of each policy (one core, whole-run process time).

    python benchmarks/ask_curves.py --rosters dev --seeds 0-7 --budgets 0,1,2,3,5
    python benchmarks/ask_curves.py --rosters dev --seeds 0-7 --budgets 2 \\
        --styles cooperative,terse,vague            # the noise curve: 0.5x, 1x, 2x
    python benchmarks/ask_curves.py --rosters test-profiles,test-composite,test-quirky \\
        --seeds 0-31 --budgets 2 --allow-test --jobs 2 --out eval.jsonl   # once, settings frozen
    python benchmarks/ask_curves.py --from eval.jsonl      # the tables again, nothing re-run

One BLAS thread per process.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor

import numpy as np
from scipy import stats
from threadpoolctl import threadpool_limits

from prefduel.cli.main import parse_seeds
from prefduel.runner import headroom, headroom_recal, references
from prefduel.runner.cell import run_cell, summarize
from prefduel.runner.headroom_ask import play_oracle_prior_ask
from prefduel.worlds import parse_world

ONLINE = "online:oracle-prior-lookahead"
ONLINE_RECAL = "online:oracle-prior-lookahead-recal"
ASK_REF = "ref:oracle-prior-ask"
CONTROLS = ("control-scrambled", "control-unstructured")


def world_name(roster: str, style: str, budget: int) -> str:
    """``ROSTER[/STYLE][+askB]``."""
    name = f"{roster}/{style}" if style else roster
    return f"{name}+ask{budget}" if budget else name


def measure_seed(task: tuple) -> list[dict]:
    """Rows ``{roster, style, seed, budget, name, score, excess, cpu}`` of one world seed."""
    roster, style, seed, budgets, ask_policies, click_policies, allow_test = task
    out = []

    def add(budget, name, fields, cpu):
        out.append(dict(roster=roster, style=style, seed=seed, budget=budget, name=name,
                        score=fields["score"], excess=fields["excess"], cpu=cpu))

    with threadpool_limits(1):
        plain = parse_world(roster).make(seed, allow_test=allow_test)
        theta = references.linear_oracle_theta(plain.Phi, plain.U)
        run = headroom.play_oracle_prior(plain, theta, horizon=headroom.HORIZON, past_only=True)
        add(0, ONLINE, summarize(plain, run.first, run.second), 0.0)
        if headroom_recal.recal_layout(plain):
            x = headroom_recal.fixed_features(plain)
            stats_ = headroom_recal.MapStats.of(x, plain.Phi[..., -1], plain.U)
            maps = headroom_recal.online_maps(stats_, plain.student_index)
            run = headroom_recal.play_online_recal(plain, x, maps, headroom.HORIZON)
            add(0, ONLINE_RECAL, summarize(plain, run.first, run.second), 0.0)
        for spec in click_policies:
            start = time.process_time()
            add(0, spec, run_cell(plain, spec), time.process_time() - start)
        for budget in budgets:
            world = parse_world(world_name(roster, style, budget)).make(
                seed, allow_test=allow_test
            )
            if budget:
                asked, _ = play_oracle_prior_ask(world, theta, budget)
                add(budget, ASK_REF, summarize(world, asked.first, asked.second), 0.0)
            for spec in ask_policies:
                start = time.process_time()
                add(budget, spec, run_cell(world, spec), time.process_time() - start)
    return out


def mean_se(values: list[float]) -> str:
    v = np.asarray(values)
    se = v.std(ddof=1) / np.sqrt(v.size) if v.size > 1 else float("nan")
    return f"{v.mean():.2f} ± {se:.2f}"


def paired(a: dict[int, float], b: dict[int, float]) -> str:
    """``b - a`` over the common seeds: mean [95% t interval]."""
    seeds = sorted(set(a) & set(b))
    diff = np.array([b[s] - a[s] for s in seeds])
    if diff.size < 2:
        return f"{diff.mean():+.2f}" if diff.size else "-"
    half = stats.t.ppf(0.975, diff.size - 1) * diff.std(ddof=1) / np.sqrt(diff.size)
    return f"{diff.mean():+.2f} [{diff.mean() - half:+.2f}, {diff.mean() + half:+.2f}]"


def report(rows: list[dict], ask_policies: list[str], click_policies: list[str]) -> None:
    """Print the tables of the module docstring."""
    score = defaultdict(dict)
    excess = defaultdict(dict)
    cpu = defaultdict(list)
    for r in rows:
        key = (r["roster"], r["style"], r["budget"], r["name"])
        score[key][r["seed"]] = r["score"]
        excess[key][r["seed"]] = r["excess"]
        if r["cpu"]:
            cpu[r["name"]].append(r["cpu"])
    groups = sorted({(r["roster"], r["style"]) for r in rows})
    budgets = sorted({r["budget"] for r in rows})
    for roster, style in groups:
        seeds = len(score[(roster, style, 0, ONLINE)])
        label = f"{roster}/{style}" if style else roster
        print(f"\n## {label} ({seeds} seeds, each an independent world; mean ± s.e.)\n")
        print("| row | " + " | ".join(f"B = {b}" for b in budgets) + " |")
        print("|---|" + "---|" * len(budgets))
        for name in (*ask_policies, ASK_REF):
            cells = [score.get((roster, style, b, name)) for b in budgets]
            print(f"| `{name}` | " + " | ".join(mean_se(list(c.values())) if c else "-"
                                                for c in cells) + " |")
        for name in (ONLINE, ONLINE_RECAL, *click_policies):
            if (roster, style, 0, name) in score:
                print(f"| `{name}` (clicks only) | "
                      f"{mean_se(list(score[(roster, style, 0, name)].values()))} |")
        print("\n| comparison (score, paired by seed) | " + " | ".join(
            f"B = {b}" for b in budgets if b) + " |")
        print("|---|" + "---|" * len([b for b in budgets if b]))
        for spec in ask_policies:
            for ref in (ONLINE, ONLINE_RECAL, "coduel"):
                base = score.get((roster, style, 0, ref))
                if not base:
                    continue
                cells = [paired(base, score[(roster, style, b, spec)]) for b in budgets if b]
                print(f"| `{spec}` - `{ref}` | " + " | ".join(cells) + " |")
        if roster in CONTROLS and (roster, style, 0, "notransfer") in excess:
            base = excess[(roster, style, 0, "notransfer")]
            for spec in ask_policies:
                cells = []
                for b in budgets:
                    mine = excess.get((roster, style, b, spec), {})
                    ratio = [100 * (mine[s] / base[s] - 1) for s in sorted(set(mine) & set(base))]
                    if not ratio:
                        cells.append("-")
                        continue
                    cells.append(f"{np.mean(ratio):+.1f}% (worst seed {np.max(ratio):+.1f}%)")
                print(f"| `{spec}` excess vs `notransfer` | " + " | ".join(cells) + " |")
    print("\n| policy | CPU s per run (mean, max) |\n|---|---|")
    for name, values in sorted(cpu.items()):
        print(f"| `{name}` | {np.mean(values):.2f}, {np.max(values):.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rosters", default="dev")
    parser.add_argument("--seeds", default="0-7")
    parser.add_argument("--budgets", default="0,1,2,3,5")
    parser.add_argument("--styles", default="", help="answer styles, e.g. cooperative,vague")
    parser.add_argument("--ask-policies", default="coduel-ask,notransfer-ask,conucb-duel")
    parser.add_argument("--click-policies", default="coduel,notransfer")
    parser.add_argument("--allow-test", action="store_true")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--out", help="also write every row here (JSON lines)")
    parser.add_argument("--from", dest="source", help="report the rows of an earlier --out")
    args = parser.parse_args()
    ask_policies = [p for p in args.ask_policies.split(",") if p]
    click_policies = [p for p in args.click_policies.split(",") if p]
    budgets = [int(b) for b in args.budgets.split(",")]
    tasks = [
        (roster, style, seed, budgets, ask_policies, click_policies, args.allow_test)
        for roster in args.rosters.split(",")
        for style in (args.styles.split(",") if args.styles else [""])
        for seed in parse_seeds(args.seeds)
    ]
    if args.source:  # the tables again, from rows already measured
        with open(args.source, encoding="utf-8") as handle:
            report([json.loads(line) for line in handle], ask_policies, click_policies)
        return
    start = time.time()
    rows: list[dict] = []
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for done, part in enumerate(pool.map(measure_seed, tasks), 1):
            rows.extend(part)
            print(f"  {done}/{len(tasks)} world seeds done ({time.time() - start:.0f} s)",
                  flush=True)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.writelines(json.dumps(r) + "\n" for r in rows)
    report(rows, ask_policies, click_policies)
    print(f"\n{os.cpu_count()} CPUs; wall time {time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
