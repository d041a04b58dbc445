"""Headroom of transfer: the population-prior references beside the per-user oracle.

For every roster and seed, computes the reference rows (`prefduel.runner.references`, which
include ``ref:oracle-prior`` and ``ref:oracle-prior-lookahead``) and runs the given policies in
this process, then prints per roster the scores (mean ± s.e. over seeds) and the paired steps of
the decomposition with 95% t intervals over seeds:

* ``ref:oracle-prior -> ref:oracle-user``: the price of 24 clicks (a learner that knows the
  population still has to find out which user this is);
* ``ref:oracle-prior -> ref:oracle-prior-lookahead``: what a better pair rule adds;
* each policy ``-> ref:oracle-prior``: what a perfect population model would add.

It also prints the CPU time per world-seed of the two new references and of the whole set of
references, against a ``notransfer`` run on the same world in the same process (the yardstick).
``--horizons`` also scores the lookahead at other horizons, paired against greedy pairs (the
horizon of the row was chosen on ``dev`` this way).

``--online`` adds the online variants of both rows (``online:oracle-prior``, ``online:oracle-
prior-lookahead``: each arrival's prior holds the exact weights of the *earlier* arrivals only,
`headroom.prior_log_weights` with ``past_only``), which is at best what a policy that learns the
population as users arrive can know, and a table of scores by quarter of the arrivals (the
score of each quarter's arrivals alone): how much of the gap to ``ref:oracle-prior`` is the
price of learning the population online, which no policy can avoid. With ``--horizons`` it
also scores the online lookahead at those horizons, and each policy's gap to them.

``--online`` also adds the recalibration-aware online rows (`prefduel.runner.headroom_recal`):
the rater's score g replaced by ``A g`` with the best linear map ``A`` (the class CODuel's
recalibration fits), fitted for each arrival on the earlier users only
(``online:oracle-prior-recal``, greedy, and ``online:oracle-prior-lookahead-recal``), fitted
in hindsight on every user (``online:oracle-prior-lookahead-recal-hindsight``), and with
persona-by-question-kind indicators (``online:oracle-prior-lookahead-recal-kind``), each
against the policies with paired intervals (about 10-11 s more CPU per 350-arrival
world-seed, measured on a shared 2-core machine under load, 4.5-4.7x all the references;
``--no-recal`` leaves them out).

    python benchmarks/headroom.py --rosters dev --seeds 0-31 --horizons 2,3,4,5,6
    python benchmarks/headroom.py --rosters dev --seeds 0-31 --policies coduel,notransfer --online
    python benchmarks/headroom.py --rosters test-profiles,test-composite,test-quirky \\
        --seeds 0-31 --policies coduel,notransfer --online --allow-test
    python benchmarks/headroom.py --rosters test-profiles,test-composite,test-quirky \\
        --seeds 0-31 --allow-test --out headroom.jsonl   # references only look at the world
    prefduel stats headroom.jsonl --format md --allow-test   # the leaderboard lines

One process and one BLAS thread (CPU times are of one core).
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict

import numpy as np
from scipy import stats
from threadpoolctl import threadpool_limits

from prefduel.cli.main import parse_seeds
from prefduel.core.regret import floor_regret, random_regret, score
from prefduel.runner import headroom, headroom_recal, references
from prefduel.runner.cell import run_cell, summarize
from prefduel.worlds import get_world

SHOWN = (
    "ref:oracle-user",
    "ref:best-pair-per-user",
    "ref:oracle-prior-lookahead",
    "ref:oracle-prior",
)
STEPS = (
    ("ref:oracle-prior", "ref:oracle-user", "price of 24 clicks"),
    ("ref:oracle-prior", "ref:oracle-prior-lookahead", "pair rule (lookahead)"),
)
ONLINE = ("online:oracle-prior", "online:oracle-prior-lookahead")
ONLINE_STEPS = (
    ("online:oracle-prior", "ref:oracle-prior", "learning the population online"),
    ("online:oracle-prior", "online:oracle-prior-lookahead", "pair rule, online (lookahead)"),
)
RECAL = headroom_recal.RECAL_ROWS
RECAL_STEPS = (
    ("online:oracle-prior", RECAL[0], "the map, online (greedy)"),
    ("online:oracle-prior-lookahead", RECAL[1], "the map, online (lookahead)"),
    (RECAL[1], RECAL[2], "the map in hindsight"),
    (RECAL[1], RECAL[3], "question kinds"),
)
QUARTERS = 4


def mean_ci(values: np.ndarray, level: float = 0.95) -> tuple[float, float, float]:
    """Mean and the two ends of a t interval."""
    mean = float(values.mean())
    if values.size < 2:
        return mean, float("nan"), float("nan")
    half = stats.t.ppf(0.5 + level / 2, values.size - 1) * values.std(ddof=1)
    return mean, mean - half / np.sqrt(values.size), mean + half / np.sqrt(values.size)


def _timed_play(timings: dict[str, list[float]]):
    """`headroom.play_oracle_prior` that records its CPU time per horizon in ``timings``."""

    def play(world, theta, **kwargs):
        start = time.process_time()
        out = headroom.play_oracle_prior(world, theta, **kwargs)
        key = "ref:oracle-prior" if kwargs.get("horizon", 1) <= 1 else "ref:oracle-prior-lookahead"
        timings[key].append(time.process_time() - start)
        return out

    return play


def quarter_scores(rand: np.ndarray, floor: np.ndarray, excess: np.ndarray) -> list[float]:
    """Score of each quarter of the arrivals (in arrival order), from the per-arrival random
    regret, floor and a row's excess regret (each ``(N,)``): `score` over that quarter alone."""
    parts = np.array_split(np.arange(rand.size), QUARTERS)
    return [score(floor[p].sum() + excess[p].sum(), rand[p].sum(), floor[p].sum()) for p in parts]


def _online_rows(
    world, theta: np.ndarray, horizons: list[int], recal: bool, timings: dict[str, list[float]]
) -> list[dict]:
    """Rows of the online variants (past-only prior) for ``world``: the two of `ONLINE`, the
    lookahead at each of ``horizons``, and with ``recal`` those of `RECAL` (timed together)."""
    named = [*zip(ONLINE, (1, references.HORIZON), strict=True)]
    named += [(f"online lookahead, horizon {h}", h) for h in horizons]
    rows = []
    for name, h in named:
        run = headroom.play_oracle_prior(world, theta, horizon=h, past_only=True)
        rows.append({"policy": name, **summarize(world, run.first, run.second)})
    if recal:
        start = time.process_time()
        pairs = headroom_recal.recal_pairs(world)
        timings["recalibration-aware online rows"].append(time.process_time() - start)
        for name, (first, second) in pairs.items():
            rows.append({"policy": name, **summarize(world, first, second)})
    return rows


def measure(
    roster: str,
    seeds: list[int],
    policies: list[str],
    horizons: list[int],
    allow_test,
    out=None,
    online: bool = False,
    recal: bool = True,
    online_out=None,
):
    """Scores ``{name: {seed: score}}`` (with ``online``, also ``{(name, quarter): {seed:
    score}}``) and CPU times ``{what: [seconds per world-seed]}``; the reference and policy rows
    are also written to the open file ``out`` (JSON lines), the online rows (with ``world``
    and ``seed``) to ``online_out``."""
    scores: dict = defaultdict(dict)
    timings: dict[str, list[float]] = defaultdict(list)
    references.play_oracle_prior = _timed_play(timings)  # time the two rows inside the set
    for seed in seeds:
        world = get_world(roster, seed, allow_test=allow_test)
        start = time.process_time()
        rows = references.reference_rows(world)
        timings["all references"].append(time.process_time() - start)
        for spec in policies:
            start = time.process_time()
            rows.append(run_cell(world, spec))
            timings[spec].append(time.process_time() - start)
        for row in rows:
            scores[row["policy"]][seed] = row["score"]
            if out is not None:
                out.write(json.dumps(row, separators=(",", ":")) + "\n")
        if out is not None:
            out.flush()
        if online or horizons:
            theta = references.linear_oracle_theta(world.Phi, world.U)
        if online:
            online_rows = _online_rows(world, theta, horizons, recal, timings)
            rand, floor = random_regret(world.U).sum(axis=1), floor_regret(world.U).sum(axis=1)
            for row in online_rows:
                scores[row["policy"]][seed] = row["score"]
                if online_out is not None:
                    keyed = {"world": roster, "seed": seed, **row}
                    online_out.write(json.dumps(keyed, separators=(",", ":")) + "\n")
                    online_out.flush()
            for row in rows + online_rows:
                excess = np.asarray(row["excess_per_arrival"])
                for q, value in enumerate(quarter_scores(rand, floor, excess)):
                    scores[(row["policy"], q)][seed] = value
        for h in horizons:
            run = headroom.play_oracle_prior(world, theta, horizon=h)
            fields = summarize(world, run.first, run.second)
            scores[f"lookahead, horizon {h}"][seed] = fields["score"]
        print(f"  {roster} seed {seed}: done", flush=True)
    references.play_oracle_prior = headroom.play_oracle_prior
    return scores, timings


def _paired(scores, a: str, b: str) -> str:
    seeds = sorted(set(scores[a]) & set(scores[b]))
    diff = np.array([scores[b][s] - scores[a][s] for s in seeds])
    m, lo, hi = mean_ci(diff)
    return f"{m:+.2f} [{lo:+.2f}, {hi:+.2f}]"


def report_online(scores, policies: list[str], horizons: list[int]) -> None:
    """Print the online rows, their steps and the scores by quarter of the arrivals."""
    print("\n| online step | score difference (paired, 95% CI) |\n|---|---|")
    recal = [name for name in RECAL if name in scores]
    for a, b, label in (*ONLINE_STEPS, *RECAL_STEPS):
        if a in scores and b in scores:
            print(f"| {label}: `{a}` -> `{b}` | {_paired(scores, a, b)} |")
    at_horizons = [f"online lookahead, horizon {h}" for h in horizons]
    for spec in policies:
        for name in (*ONLINE, *at_horizons, *recal):
            print(f"| online ceiling: `{spec}` -> `{name}` | {_paired(scores, spec, name)} |")
    head = " | ".join(f"quarter {q + 1}" for q in range(QUARTERS))
    print(f"\n| row (score of each quarter of the arrivals) | {head} |")
    print("|---|" + "---|" * QUARTERS)
    for name in ("ref:oracle-prior", *ONLINE, *recal, *policies):
        cells = [np.mean(list(scores[(name, q)].values())) for q in range(QUARTERS)]
        print(f"| `{name}` | " + " | ".join(f"{c:.2f}" for c in cells) + " |")


def report(roster: str, scores, timings, policies: list[str], horizons: list[int]) -> None:
    """Print the score table, the decomposition and the costs of one roster."""
    n = len(scores["ref:floor"])
    print(f"\n## {roster} ({n} seeds, each an independent world; mean ± s.e. over seeds)\n")
    print("| row | score |\n|---|---|")
    online = [name for name in (*ONLINE, *RECAL) if name in scores]
    for name in (*SHOWN, *online, *policies):
        v = np.array(list(scores[name].values()))
        print(f"| `{name}` | {v.mean():.2f} ± {v.std(ddof=1) / np.sqrt(v.size):.2f} |")
    print("\n| step | score difference (paired, 95% CI) |\n|---|---|")
    for a, b, label in STEPS:
        print(f"| {label}: `{a}` -> `{b}` | {_paired(scores, a, b)} |")
    for spec in policies:
        print(
            f"| population model: `{spec}` -> `ref:oracle-prior` | "
            f"{_paired(scores, spec, 'ref:oracle-prior')} |"
        )
    for h in horizons:
        print(
            f"| horizon {h}: `ref:oracle-prior` -> lookahead | "
            f"{_paired(scores, 'ref:oracle-prior', f'lookahead, horizon {h}')} |"
        )
    if ONLINE[0] in scores:
        report_online(scores, policies, horizons)
    yard = np.mean(timings["notransfer"]) if timings.get("notransfer") else float("nan")
    print("\n| CPU per world-seed | seconds (mean) | x `notransfer` run |\n|---|---|---|")
    for what, values in timings.items():
        print(f"| {what} | {np.mean(values):.2f} | {np.mean(values) / yard:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rosters", default="dev")
    parser.add_argument("--seeds", default="0-31")
    parser.add_argument("--policies", default="notransfer", help="run beside (default: notransfer)")
    parser.add_argument("--horizons", default="", help="also score the lookahead at these")
    parser.add_argument("--online", action="store_true", help="add the past-only prior rows")
    parser.add_argument(
        "--no-recal", action="store_true", help="with --online: leave out the recal rows"
    )
    parser.add_argument("--allow-test", action="store_true")
    parser.add_argument("--out", default=None, help="also write the rows here (JSON lines)")
    parser.add_argument("--online-out", default=None, help="and the online rows here")
    args = parser.parse_args()
    seeds = parse_seeds(args.seeds)
    policies = [p for p in args.policies.split(",") if p]
    horizons = [int(h) for h in args.horizons.split(",") if h]
    out = open(args.out, "w", encoding="utf-8") if args.out else None
    online_out = open(args.online_out, "w", encoding="utf-8") if args.online_out else None
    for roster in args.rosters.split(","):
        with threadpool_limits(1):  # CPU time of one core, as in the other benchmarks
            scores, timings = measure(
                roster,
                seeds,
                policies,
                horizons,
                args.allow_test,
                out,
                args.online,
                not args.no_recal,
                online_out,
            )
        report(roster, scores, timings, policies, horizons)
    for file in (out, online_out):
        if file is not None:
            file.close()


if __name__ == "__main__":
    main()
