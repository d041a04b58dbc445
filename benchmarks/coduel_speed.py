"""Speed and memory of one CODuel run (issue 3 targets: <= 10 s on one core for a 350-arrival
roster, < 500 MB per run).

Each run happens in a fresh process limited to one core's worth of BLAS threads; the script
prints its wall time, its peak resident memory, and the ratio to ``notransfer`` measured the
same way in the same invocation.

    python benchmarks/coduel_speed.py                       # control-unstructured, seed 0
    python benchmarks/coduel_speed.py --rosters dev,control-scrambled --spec coduel:pair=greedy
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import resource
import time


def _one_run(args: tuple[str, int, str]) -> tuple[float, float, float]:
    roster, seed, spec = args
    from threadpoolctl import threadpool_limits

    from prefduel.runner.cell import run_cell
    from prefduel.worlds import get_world

    world = get_world(roster, seed, allow_test=True)
    with threadpool_limits(limits=1):
        start, cpu_start = time.perf_counter(), time.process_time()
        run_cell(world, spec)
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return wall, cpu, peak_mb


def measure(roster: str, seed: int, spec: str) -> tuple[float, float, float]:
    """Wall time (s), CPU time (s) and peak RSS (MB) of one run in a fresh process (the CPU
    time is what a busy machine cannot inflate; on an idle one the two agree)."""
    ctx = mp.get_context("spawn")
    with ctx.Pool(1) as pool:
        return pool.apply(_one_run, ((roster, seed, spec),))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rosters", default="control-unstructured")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--spec", default="coduel")
    args = parser.parse_args()
    for roster in args.rosters.split(","):
        t_ref, _, m_ref = measure(roster, args.seed, "notransfer")
        t, cpu, m = measure(roster, args.seed, args.spec)
        print(
            f"{roster:22s} {args.spec:22s} {t:6.2f} s (target 10 s: ratio {t / 10:.2f}; "
            f"CPU {cpu:5.2f} s), "
            f"peak {m:6.0f} MB (target 500 MB) | notransfer {t_ref:5.2f} s, {m_ref:4.0f} MB: "
            f"{t / t_ref:5.1f}x time",
            flush=True,
        )


if __name__ == "__main__":
    main()
