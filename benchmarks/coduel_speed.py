"""Speed and memory of CODuel, and its cost as the population grows (targets: <= 2 s
per 350-arrival run on one core; cost per arrival flat in N, 10,000 arrivals <= 60 s).

Every cell runs in a fresh process limited to one core's worth of BLAS threads, twice: the
second run's CPU time is the cost per run, the figure the target is about; the first run's is
printed beside it, as it also pays what a process does once, loading the compiled kernels
from numba's cache and numba's own start (about 0.35-0.5 s of CPU on this machine: a
leaderboard worker pays it once for hundreds of cells). The script prints the peak resident
memory and ratios to ``notransfer`` measured the same way in the same invocation. Compiled
kernels are used when numba is installed (``pip install prefduel[fast]``; the first run ever
compiles them into numba's cache, which ``--warm`` does before timing); ``PREFDUEL_NUMBA=0``
times the numpy path.

    python benchmarks/coduel_speed.py                        # 350-arrival rosters, seed 0
    python benchmarks/coduel_speed.py --sizes 150,300,600,1200,10000 --full-upto 1200
    python benchmarks/coduel_speed.py --rosters dev --spec coduel:pair=greedy
    python benchmarks/coduel_speed.py --spec coduel-ask --ask-budget 2 --sizes 150,300,600,1200

``--sizes`` builds ``dev`` with N arrivals (the roster API: `dataclasses.replace` of its
`Roster`, as the files in ``benchmarks/rosters/`` do) and prints the cost-vs-N table: CPU per
run and per arrival for ``notransfer``, ``--spec`` and, up to ``--full-upto`` arrivals, the
full refit (``coduel:em=full,recal_growth=0``, the population refitted over every completed
user after each session, CODuel's earlier default).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import resource
import time
from dataclasses import dataclass

ROSTERS_350 = "control-unstructured,control-scrambled,test-profiles,test-quirky"
FULL_REFIT = "coduel:em=full,recal_growth=0"


#: Cells of at most this many arrivals are run twice per process (the second run is timed);
#: longer ones once, where the one-time loading of the kernels is a small share.
TWICE_UPTO = 2000

#: Questions per arrival of the runs (``--ask-budget``; 0: the benchmark without questions).
ASK_BUDGET = {"value": 0}


def _one_run(args: tuple[str, int, int | None, str, int, bool]) -> Timing:
    roster, seed, arrivals, spec, budget, again = args
    start_process = time.perf_counter()
    from dataclasses import replace

    from threadpoolctl import threadpool_limits

    from prefduel.runner.cell import run_cell
    from prefduel.worlds import get_roster, get_world
    from prefduel.worlds.tutorsim import generate_world

    if arrivals is None:
        world = get_world(roster, seed, allow_test=True)
    else:
        world = generate_world(replace(get_roster(roster), arrivals=arrivals), seed)
    if budget:
        world = replace(world, ask_budget=budget)  # the world's ask track
    cpu_runs = []
    with threadpool_limits(limits=1):
        for _ in range(2 if again else 1):
            start, cpu_start = time.perf_counter(), time.process_time()
            run_cell(world, spec)
            wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
            cpu_runs.append(cpu)
            if len(cpu_runs) == 1:
                process = time.perf_counter() - start_process
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return Timing(wall, cpu_runs[-1], cpu_runs[0], peak_mb, process)


@dataclass(frozen=True)
class Timing:
    """One fresh process: ``cpu`` is the CPU seconds of a run once the process has loaded the
    compiled kernels (the second run of the cell; the first when timed once), ``first_cpu``
    the first run's, which also pays that one-time loading; ``process`` is the time from the
    process's first import to the end of the first run."""

    wall: float
    cpu: float
    first_cpu: float
    peak_mb: float
    process: float


def measure(roster: str, seed: int, spec: str, arrivals: int | None = None) -> Timing:
    """One cell in a fresh process, run twice (up to `TWICE_UPTO` arrivals) so that the
    per-run cost and the first run's are both known (the CPU time is what a busy machine
    cannot inflate; on an idle one wall and CPU agree)."""
    ctx = mp.get_context("spawn")
    again = (arrivals or 350) <= TWICE_UPTO
    with ctx.Pool(1) as pool:
        return pool.apply(_one_run, ((roster, seed, arrivals, spec, ASK_BUDGET["value"], again),))


def rosters_table(rosters: list[str], seed: int, spec: str) -> None:
    """One cell per roster, against ``notransfer`` in the same invocation."""
    print(
        f"seed {seed}, one core: CPU per run (target 2 s per 350-arrival run), and the first "
        "run in a fresh process, which also loads the compiled kernels (once per process)"
    )
    for roster in rosters:
        ref = measure(roster, seed, "notransfer")
        run = measure(roster, seed, spec)
        print(
            f"{roster:22s} {spec:22s} CPU {run.cpu:5.2f} s per run (target 2 s: ratio "
            f"{run.cpu / 2:.2f}), first run {run.first_cpu:5.2f} s, process {run.process:5.2f}"
            f" s, peak {run.peak_mb:4.0f} MB | notransfer CPU {ref.cpu:5.2f} s per run, first "
            f"{ref.first_cpu:5.2f} s: {run.cpu / ref.cpu:5.1f}x per run, "
            f"{run.process / ref.process:4.1f}x process",
            flush=True,
        )


def sizes_table(sizes: list[int], seed: int, spec: str, full_upto: int) -> None:
    """The cost-vs-N table on ``dev`` with N arrivals."""
    print(f"\ncost vs N: dev with N arrivals, seed {seed}, CPU seconds of one run (one core)")
    print(
        f"{'N':>6s} {'notransfer':>11s} {spec:>12s} {'ms/arrival':>11s} {'vs notransfer':>14s}"
        f" {'full refit':>11s} {'ms/arrival':>11s} {'vs notransfer':>14s} {'peak MB':>8s}"
    )
    for n in sizes:
        c_ref = measure("dev", seed, "notransfer", n).cpu
        run = measure("dev", seed, spec, n)
        cpu, mem = run.cpu, run.peak_mb
        full = ""
        if n <= full_upto:
            c_full = measure("dev", seed, FULL_REFIT, n).cpu
            full = f"{c_full:11.2f} {1e3 * c_full / n:11.2f} {c_full / c_ref:13.1f}x"
        target = f"   (target 60 s: ratio {cpu / 60:.2f})" if n >= 10_000 else ""
        print(
            f"{n:6d} {c_ref:11.2f} {cpu:12.2f} {1e3 * cpu / n:11.2f} {cpu / c_ref:13.1f}x "
            f"{full:>38s} {mem:8.0f}{target}",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rosters", default=ROSTERS_350, help="'' to skip the roster table")
    parser.add_argument("--sizes", default="", help="arrivals for the cost-vs-N table")
    parser.add_argument("--full-upto", type=int, default=1200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--spec", default="coduel")
    parser.add_argument("--warm", action="store_true", help="compile the kernels first")
    parser.add_argument(
        "--ask-budget", type=int, default=0, help="questions per arrival (an ask track)"
    )
    args = parser.parse_args()
    ASK_BUDGET["value"] = args.ask_budget
    if args.warm:
        measure("dev", args.seed, args.spec, 60)
    rosters = [r for r in args.rosters.split(",") if r]
    if rosters:
        rosters_table(rosters, args.seed, args.spec)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    if sizes:
        sizes_table(sizes, args.seed, args.spec, args.full_upto)


if __name__ == "__main__":
    main()
