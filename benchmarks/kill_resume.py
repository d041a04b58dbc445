"""Kill ``prefduel run`` at random moments, resume it, and count what was lost or doubled.

Each trial starts a run of a small grid into a fresh results file, kills it with SIGKILL (or
SIGTERM) after a random delay, runs the same command again to completion, and compares the
final file with a reference run of the same grid that was never interrupted (both measured in
this process):

    python benchmarks/kill_resume.py                   # 20 trials, SIGKILL
    python benchmarks/kill_resume.py --trials 50 --signal TERM --jobs 1

It prints, over all trials, the rows lost, duplicated and differing (every field but
``wall_time``), which must all be 0, and the time a resumed run took relative to the reference.
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GRID = ["--worlds", "dev", "--seeds", "0-3", "--policies", "random,notransfer,pooled,hier-ts"]


def _run(out: Path, jobs: int) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "prefduel.cli.main", "run", *GRID, "--jobs", str(jobs)]
    return subprocess.Popen(
        [*cmd, "--out", str(out), "--no-progress"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _rows(path: Path) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    for row in rows:
        row.pop("wall_time", None)
    return rows


def _key(row: dict) -> tuple:
    return row["kind"], row["world"], row["seed"], row["policy"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--signal", choices=("KILL", "TERM", "INT"), default="KILL")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    sig = getattr(signal, f"SIG{args.signal}")
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        start = time.perf_counter()
        reference_proc = _run(folder / "reference.jsonl", args.jobs)
        reference_proc.wait()
        full = time.perf_counter() - start
        reference = {_key(r): r for r in _rows(folder / "reference.jsonl")}
        lost = doubled = differing = 0
        resumed_times = []
        for trial in range(args.trials):
            out = folder / f"trial{trial}.jsonl"
            proc = _run(out, args.jobs)
            time.sleep(rng.uniform(0.2, 0.9) * full)
            proc.send_signal(sig)
            proc.wait()
            began = time.perf_counter()
            _run(out, args.jobs).wait()
            resumed_times.append(time.perf_counter() - began)
            rows = _rows(out)
            keys = [_key(r) for r in rows]
            doubled += len(keys) - len(set(keys))
            lost += len(set(reference) - set(keys))
            differing += sum(reference.get(_key(r)) != r for r in rows)
        print(f"grid: {' '.join(GRID)}; {len(reference)} rows; signal {args.signal}")
        print(
            f"trials {args.trials}: rows lost {lost}, duplicated {doubled}, "
            f"differing {differing}"
        )
        mean_resume = sum(resumed_times) / len(resumed_times)
        print(
            f"uninterrupted run {full:.1f} s; resumed run after a kill {mean_resume:.1f} s "
            f"on average (ratio {mean_resume / full:.2f})"
        )
    if lost or doubled or differing:
        sys.exit(1)


if __name__ == "__main__":
    main()
