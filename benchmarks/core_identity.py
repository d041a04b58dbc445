"""Bit-for-bit identity of every policy and reference row across a change of the numerical core.

Runs every registered policy (default settings, plus the CODuel settings the docs' tables
use), every reference row (`prefduel.runner.references`, the two population-prior rows
included) and the other headroom rows (`prefduel.runner.headroom.play_oracle_prior` at more
horizons and with a past-only prior) on a few worlds, once with the compiled kernels
(``PREFDUEL_NUMBA=1``, when numba is installed) and once on the numpy path
(``PREFDUEL_NUMBA=0``), each path in its own process, and writes every row's numbers (``R``,
``G``, ``R_rand``, ``excess``, ``score``, both curves) with a digest of its shown pairs and
clicks to a JSON file. ``--compare`` reads two such files and prints how many rows were
compared and the largest difference of any number (0 when the change kept every figure).

    python benchmarks/core_identity.py --out /tmp/core_before.json
    # ... change the code ...
    python benchmarks/core_identity.py --out /tmp/core_after.json
    python benchmarks/core_identity.py --compare /tmp/core_before.json /tmp/core_after.json

``--worlds`` takes roster ids and stored world folders (``prefduel datagen`` output), each with
``:seed``. JSON floats are written with ``repr``, so equal files mean equal bits.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

#: CODuel settings that appear in the docs' tables (each runs other code paths).
CODUEL_VARIANTS = (
    "coduel:pair=lookahead",
    "coduel:pair=greedy",
    "coduel:population=off",
    "coduel:recal=off",
    "coduel:gate=off",
    "coduel:recal_scale=off",
    "coduel:recal_prior=population",
    "coduel:split=on,split_every=5",
    "coduel:birth_margin=2",
    "coduel:em=full,recal_growth=0",
    "notransfer:rule=ts",
)
DEFAULT_WORLDS = "dev:0,dev:1,control-unstructured:0"
NUMBERS = ("R", "G", "R_rand", "excess", "score", "excess_per_arrival", "excess_per_round")


def _load(entry: str):
    """The world of ``name:seed`` (a roster id or a stored world folder)."""
    from prefduel.worlds import get_world, load_world

    name, _, seed = entry.rpartition(":")
    if Path(name).is_dir():
        return load_world(name, int(seed))
    return get_world(name, int(seed), allow_test=True)


def _digest(*arrays) -> str:
    h = hashlib.sha256()
    for arr in arrays:
        h.update(arr.tobytes())
    return h.hexdigest()[:16]


def _row(world, name: str, fields: dict, first, second, outcome=None) -> dict:
    import numpy as np

    keep = {k: fields[k] for k in NUMBERS}
    traj = (first, second) if outcome is None else (first, second, outcome)
    unordered = _digest(np.minimum(first, second), np.maximum(first, second))
    return {"world": world.name, "seed": world.seed, "policy": name, **keep,
            "pairs": _digest(*traj), "unordered_pairs": unordered}


def _headroom_rows(world) -> list[dict]:
    """The population-prior learner at other horizons and with a past-only prior."""
    from prefduel.runner import headroom, references
    from prefduel.runner.cell import summarize

    if headroom.lonely_arrivals(world):
        return []
    theta = references.linear_oracle_theta(world.Phi, world.U)
    rows = []
    for horizon, past_only in ((2, False), (3, False), (1, True), (headroom.HORIZON, True)):
        run = headroom.play_oracle_prior(world, theta, horizon=horizon, past_only=past_only)
        name = f"headroom:horizon={horizon},past_only={past_only}"
        fields = summarize(world, run.first, run.second)
        rows.append(_row(world, name, fields, run.first, run.second, run.first_won))
    return rows


def worker(worlds: list[str], specs: list[str], headroom_rows: bool = True) -> list[dict]:
    """Every row on ``worlds`` in this process (its numba setting is the environment's)."""
    import numpy as np
    from threadpoolctl import threadpool_limits

    from prefduel.runner.cell import run_cell
    from prefduel.runner.references import reference_pairs, reference_rows

    rows = []
    with threadpool_limits(limits=1):
        for entry in worlds:
            world = _load(entry)
            pairs = reference_pairs(world)
            for ref in reference_rows(world):
                first, second = pairs.get(ref["policy"], (np.zeros(1, int), np.zeros(1, int)))
                rows.append(_row(world, ref["policy"], ref, first, second))
            if headroom_rows:
                rows += _headroom_rows(world)
            for spec in specs:
                start = time.process_time()
                out = run_cell(world, spec, keep_trajectory=True)
                traj = out["trajectory"]
                row = _row(world, spec, out, traj.first, traj.second, traj.outcome)
                rows.append(row)
                print(f"  {entry} {spec}: {time.process_time() - start:.2f} s CPU",
                      file=sys.stderr, flush=True)
            for row in rows:
                row.setdefault("world_digest", world.digest()[:16])
    return rows


def _specs(policies: str) -> list[str]:
    if policies != "all":
        return [p for p in policies.split(";") if p]
    from prefduel.policies.loading import POLICIES

    return [*POLICIES, *CODUEL_VARIANTS]


def run(args: argparse.Namespace) -> None:
    """Both paths in child processes; the rows of both in one file."""
    out: dict = {"worlds": args.worlds, "paths": {}}
    for path in args.paths.split(","):
        env = {**os.environ, "PREFDUEL_NUMBA": path}
        cmd = [sys.executable, __file__, "--worker", "--worlds", args.worlds,
               "--policies", ";".join(_specs(args.policies))]
        cmd += [] if args.headroom else ["--no-headroom"]
        start = time.perf_counter()
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
        if done.returncode:
            sys.exit(f"the PREFDUEL_NUMBA={path} worker failed:\n{done.stderr[-4000:]}")
        payload = json.loads(done.stdout)
        out["paths"][path] = payload
        print(f"PREFDUEL_NUMBA={path} (compiled: {payload['compiled']}): "
              f"{len(payload['rows'])} rows in {time.perf_counter() - start:.0f} s")
    Path(args.out).write_text(json.dumps(out, indent=0))
    print(f"wrote {args.out}")


def _numbers(row: dict) -> list[float]:
    values = []
    for key in NUMBERS:
        value = row[key]
        values += value if isinstance(value, list) else [value]
    return values


def compare(a_path: str, b_path: str) -> int:
    """Print the rows compared and the largest difference; returns the rows that differ."""
    a, b = (json.loads(Path(p).read_text()) for p in (a_path, b_path))
    differ = compared = 0
    worst = 0.0
    for path in sorted(set(a["paths"]) & set(b["paths"])):
        key = lambda r: (r["world"], r["seed"], r["policy"])  # noqa: E731
        rows_a = {key(r): r for r in a["paths"][path]["rows"]}
        rows_b = {key(r): r for r in b["paths"][path]["rows"]}
        for k in sorted(set(rows_a) ^ set(rows_b)):
            print(f"PREFDUEL_NUMBA={path}: row {k} in one file only")
        for k in sorted(set(rows_a) & set(rows_b)):
            ra, rb = rows_a[k], rows_b[k]
            compared += 1
            if ra.get("world_digest") != rb.get("world_digest"):
                print(f"PREFDUEL_NUMBA={path}: {k}: the world itself differs")
            na, nb = _numbers(ra), _numbers(rb)
            gap = max(abs(x - y) for x, y in zip(na, nb, strict=True))
            worst = max(worst, gap)
            if na != nb or ra["pairs"] != rb["pairs"]:
                differ += 1
                same = ra["unordered_pairs"] == rb.get("unordered_pairs")
                shown = "the same" if ra["pairs"] == rb["pairs"] else (
                    "the same up to order" if same else "different")
                print(f"PREFDUEL_NUMBA={path}: {k}: score {ra['score']!r} -> {rb['score']!r}, "
                      f"largest difference {gap:.3g}, pairs shown: {shown}")
    print(f"{compared} rows compared, {differ} differ, largest difference {worst!r}")
    return differ


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="core_identity.json")
    parser.add_argument("--worlds", default=DEFAULT_WORLDS, help="name:seed,... (rosters, folders)")
    parser.add_argument("--policies", default="all", help="'all' or specs separated by ';'")
    parser.add_argument("--paths", default="1,0", help="PREFDUEL_NUMBA values to run")
    parser.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"))
    parser.add_argument("--no-headroom", dest="headroom", action="store_false",
                        help="leave out the headroom rows beyond the reference rows")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.compare:
        sys.exit(1 if compare(*args.compare) else 0)
    if args.worker:
        rows = worker(args.worlds.split(","), _specs(args.policies), args.headroom)
        print(json.dumps({"compiled": _compiled(), "rows": rows}))
        return
    run(args)


def _compiled() -> bool:
    """Whether this process runs the compiled kernels."""
    try:
        from prefduel.core.jit import ENABLED
    except ImportError:  # before the switch moved to core
        from prefduel.policies.coduel.kernels import ENABLED
    return bool(ENABLED)


if __name__ == "__main__":
    main()
