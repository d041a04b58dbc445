"""Speed of world generation and of one run of every registered policy.

Targets: one ``notransfer`` run on a 350-arrival roster (8,400 rounds) under 1 s; each
baseline under 2 s; world generation for one roster and seed under 2 s. Each figure
is printed with its ratio to the target and to a reference measured in the same run: for a
run, the ``random`` policy on the same world (the runner's own overhead); for generation,
drawing N x S x K x K normals with numpy. CODuel's own figures (one core, memory) are in
``benchmarks/coduel_speed.py``.

    python benchmarks/speed.py
    python benchmarks/speed.py --policies notransfer,coldb --repeats 5
"""

from __future__ import annotations

import argparse
import time

from threadpoolctl import threadpool_limits

from prefduel.core.registry import split_specs
from prefduel.core.rng import stream
from prefduel.policies import POLICIES
from prefduel.runner.cell import run_cell
from prefduel.worlds import ROSTERS, get_world

TARGETS = {"notransfer": 1.0, "coduel": 10.0}


def best_of(fn, repeats: int) -> float:
    """Minimum wall time of ``repeats`` calls (the least disturbed measurement)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--policies", default=",".join(p for p in POLICIES.ids() if p != "coduel"))
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    roster = "control-unstructured"  # 350 arrivals, unlocked
    n = ROSTERS[roster].arrivals
    world = get_world(roster, 0)
    print(f"world {roster!r}: {world.N} arrivals x {world.S} rounds = {world.N * world.S} rounds")

    gen = {r: best_of(lambda r=r: get_world(r, 1, allow_test=True), args.repeats) for r in ROSTERS}
    ref_gen = best_of(lambda: stream(0, "ref").normal(size=(n, 24, 6, 6)), args.repeats)
    for r, t in gen.items():
        print(
            f"generate {r:22s} {t:6.3f} s   target 2 s: ratio {t / 2:.2f}   "
            f"vs numpy normals {t / ref_gen:6.1f}x"
        )

    with threadpool_limits(limits=1):
        t_random = best_of(lambda: run_cell(world, "random"), args.repeats)
        for spec in split_specs(args.policies):
            t = best_of(lambda spec=spec: run_cell(world, spec), args.repeats)
            target = TARGETS.get(spec, 2.0)
            print(
                f"run {spec:20s} {t:6.3f} s ({1e6 * t / (world.N * world.S):6.1f} us/round)   "
                f"target {target:g} s: ratio {t / target:.2f}   vs random {t / t_random:5.1f}x"
            )


if __name__ == "__main__":
    main()
