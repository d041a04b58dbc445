"""Speed of ``prefduel report`` on a leaderboard-sized results file.

Target: the whole report (3 rosters x 10 policies x 32 seeds, plus the 7 reference rows of every
world and seed) in under 30 s, measured as the wall time of the CLI in a fresh process (imports
included). The results file is synthetic but has the real shape: the rosters' real N and S, the
real students (so the per-profile breakdown has real profiles), curves with learning across and
within sessions, per-student difficulty, and all fields of ``run_cell`` rows. Printed with the
ratio to the target and to a reference measured in the same run: reading the rows with
``ResultsStore`` and summarizing them with ``summarize_rows`` (what ``prefduel stats``
does). Also shown: the per-profile breakdown's students tables through
``WorldSpec.students`` against the estimated cost of regenerating every world with ``get_world``.

    python benchmarks/report_speed.py
    python benchmarks/report_speed.py --seeds 8 --keep /tmp/speed
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from prefduel.core.rng import stream
from prefduel.runner.references import REFERENCES
from prefduel.runner.rows import ResultRow, score_fields
from prefduel.runner.store import ResultsStore
from prefduel.stats.table import summarize_rows
from prefduel.worlds import ROSTERS, get_world, parse_world

TARGET = 30.0
WORLDS = ("test-profiles", "test-composite", "test-quirky")
#: (policy, level of excess per round at the start, transfer across students, within a session)
POLICIES = (
    ("random", 0.23, 0.0, 0.0),
    ("notransfer", 0.17, 0.0, 0.45),
    ("pooled", 0.19, 0.15, 0.1),
    ("coduel", 0.17, 0.25, 0.5),
    ("rucb", 0.22, 0.05, 0.05),
    ("colstim", 0.165, 0.05, 0.45),
    ("maxinp", 0.165, 0.05, 0.45),
    ("coldb", 0.165, 0.08, 0.45),
    ("meta-ts", 0.16, 0.12, 0.45),
    ("hier-ts", 0.16, 0.14, 0.45),
)
ROUNDS = 24


def _difficulty(profile: str) -> float:
    """A stable per-profile multiplier in [0.85, 1.15]."""
    return 0.85 + 0.3 * (zlib.crc32(profile.encode()) % 1000) / 999


def _row(
    kind: str, world: str, seed: int, policy: str, excess: np.ndarray, g: float, r_rand: float
) -> dict[str, Any]:
    """A result row with every field of ``run_cell`` from an ``(N, S)`` excess matrix."""
    fields = score_fields(g + float(excess.sum()), g, r_rand, excess)
    return ResultRow.build(kind, world, seed, policy, fields, 1.0).to_json()


def synthesize(path: Path, seeds: int) -> int:
    """Write the synthetic results file; returns its number of rows."""
    rows = 0
    with open(path, "w", encoding="utf-8") as handle:
        for world in WORLDS:
            n = ROSTERS[world].arrivals
            for seed in range(seeds):
                students, index = parse_world(world).students(seed, allow_test=True)
                hard = np.array([_difficulty(students[i]["profile"]) for i in index])[:, None]
                rng = stream(seed, "bench", world)
                shared = rng.gamma(4.0, 0.25, size=(n, ROUNDS))  # common random numbers
                g = 500.0 + 20 * rng.standard_normal()
                rnd_excess = 0.23 * hard * shared
                r_rand = g + float(rnd_excess.sum())
                out = []
                for policy, level, transfer, within in POLICIES:
                    across = 1 - transfer * (1 - np.exp(-np.arange(n) / 60.0))[:, None]
                    session = 1 - within * np.linspace(0, 1, ROUNDS)[None, :]
                    noise = rng.gamma(8.0, 1 / 8.0, size=(n, ROUNDS))
                    excess = level * hard * across * session * shared * noise
                    out.append(_row("policy", world, seed, policy, excess, g, r_rand))
                for k, ref in enumerate(REFERENCES):
                    factor = {"ref:floor": 0.0, "ref:random": 1.0}.get(ref, 0.2 + 0.1 * k)
                    out.append(_row("reference", world, seed, ref, rnd_excess * factor, g, r_rand))
                for row in out:
                    handle.write(json.dumps(row, separators=(",", ":")) + "\n")
                rows += len(out)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=32)
    parser.add_argument("--keep", default=None, help="write files here instead of a temp dir")
    args = parser.parse_args()
    base = Path(args.keep or tempfile.mkdtemp(prefix="report-speed-"))
    base.mkdir(parents=True, exist_ok=True)
    results = base / "results.jsonl"
    start = time.perf_counter()
    n_rows = synthesize(results, args.seeds)
    size = results.stat().st_size / 1e6
    print(
        f"synthetic results: {len(WORLDS)} rosters x {len(POLICIES)} policies x {args.seeds} "
        f"seeds + references = {n_rows} rows, {size:.1f} MB ({time.perf_counter() - start:.1f} s)"
    )

    start = time.perf_counter()
    summarize_rows(ResultsStore(results, repair=False).rows())
    t_ref = time.perf_counter() - start
    print(f"reference: read + summarize_rows        {t_ref:6.2f} s")

    start = time.perf_counter()
    for world in WORLDS:
        for seed in range(args.seeds):
            parse_world(world).students(seed, allow_test=True)
    t_students = time.perf_counter() - start
    start = time.perf_counter()
    get_world(WORLDS[0], 0, allow_test=True)
    t_world = (time.perf_counter() - start) * len(WORLDS) * args.seeds
    print(
        f"students tables (WorldSpec.students) x {len(WORLDS) * args.seeds}  {t_students:6.2f} s   "
        f"(get_world for all: ~{t_world:.0f} s estimated)"
    )

    out = base / "report"
    cmd = [
        sys.executable,
        "-m",
        "prefduel.cli.main",
        "report",
        str(results),
        "--out",
        str(out),
        "--allow-test",
    ]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    t_report = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"report failed ({proc.returncode}):\n{proc.stderr}")
    print(proc.stdout.strip())
    print(
        f"report (CLI, fresh process)             {t_report:6.2f} s   target {TARGET:.0f} s: "
        f"ratio {t_report / TARGET:.2f}   vs reference {t_report / t_ref:5.1f}x"
    )

    from prefduel.report import build_report

    timed = build_report(results, base / "report-inproc", allow_test=True)
    stages = ", ".join(f"{k} {v:.2f} s" for k, v in timed.timings.items())
    print(f"stages (in-process, warm imports): {stages}")
    html = out / "report.html"
    print(f"report.html {html.stat().st_size / 1e6:.1f} MB, files in {out}")


if __name__ == "__main__":
    main()
