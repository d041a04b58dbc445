"""Speed of world generation and of one ``notransfer`` run.

Targets (issue 2): one ``notransfer`` run on a 350-arrival roster (8,400 rounds) under 1 s;
world generation for one roster and seed under 2 s. Each figure is printed with its ratio to
the target and to a reference measured in the same run: for a run, the ``random`` policy on
the same world (the runner's own overhead); for generation, drawing the world's uniform arrays
(N x S x K x K normals) with numpy, the floor of any generator.

    python benchmarks/speed.py
"""

from __future__ import annotations

import time

from persona_bench.core.rng import stream
from persona_bench.runner.cell import run_cell
from persona_bench.worlds import ROSTERS, get_world


def best_of(fn, repeats: int = 5) -> float:
    """Minimum wall time of ``repeats`` calls (the least disturbed measurement)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    roster = "control-unstructured"  # 350 arrivals, unlocked
    n = ROSTERS[roster].arrivals
    world = get_world(roster, 0)
    print(f"world {roster!r}: {world.N} arrivals x {world.S} rounds = {world.N * world.S} rounds")

    gen = {r: best_of(lambda r=r: get_world(r, 1, allow_test=True), 3) for r in ROSTERS}
    ref_gen = best_of(lambda: stream(0, "ref").normal(size=(n, 24, 6, 6)), 3)
    for r, t in gen.items():
        print(
            f"generate {r:22s} {t:6.3f} s   target 2 s: ratio {t / 2:.2f}   "
            f"vs numpy normals {t / ref_gen:6.1f}x"
        )

    t_random = best_of(lambda: run_cell(world, "random"))
    for spec in ("notransfer", "notransfer:rule=ts", "pooled"):
        t = best_of(lambda spec=spec: run_cell(world, spec))
        print(
            f"run {spec:20s} {t:6.3f} s ({1e6 * t / (world.N * world.S):5.1f} us/round)   "
            f"target 1 s: ratio {t:.2f}   vs random policy {t / t_random:4.1f}x "
            f"({t_random:.3f} s)"
        )


if __name__ == "__main__":
    main()
