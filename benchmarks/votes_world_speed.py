"""Speed of ``prefduel worlds build --from-votes`` on a vote log of a million votes, beside
``prefduel rank`` on the same log.

The log is a seeded synthetic Arena log (`prefduel.ranking.synthetic_arena`: users from taste
clusters, 8 models, 20-60 votes per user), cut to exactly ``--votes`` battles, with each
battle's prompt as plain text and a ``category`` column (the voice the user writes in:
coding, creative, math, knowledge), written as CSV. Both commands run in this process, one
after the other, from the same file:

- ``prefduel worlds build --from-votes LOG --out DIR`` with its defaults (6 models, voters with
  10 votes, 2,000 arrivals, the 5-fold held-out check and 5 replicated logs);
- ``prefduel rank LOG --out DIR --no-features --bt-mode hier``: the ratings path of rank, with
  the same hierarchical per-user fit (the topic, style and prediction steps are skipped: on a
  million prompts they are a different order of cost).

Target: the build in at most 60 s (wall) on 2 cores. Prints both times and their ratio.

    python benchmarks/votes_world_speed.py
    python benchmarks/votes_world_speed.py --votes 200000 --keep /tmp/votes-bench
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from prefduel.cli.main import main
from prefduel.ranking import synthetic_arena, write_battles

TARGET_SECONDS = 60.0
VOICES = np.array(["coding", "creative", "math", "knowledge"], dtype=object)


def write_log(path: Path, votes: int, seed: int) -> None:
    """The synthetic log of ``votes`` battles, as CSV (prompt text and a category column)."""
    users = max(1, round(votes / 40 * 1.02))  # 40 votes per user on average; cut to ``votes``
    frame, truth = synthetic_arena(
        n_users=users, n_models=8, votes=(20, 60), prompts=True, seed=seed
    )
    frame = frame.iloc[:votes].copy()
    frame["prompt"] = [turns[0]["content"] for turns in frame.pop("conversation_a")]
    voice = dict(zip(truth.users, VOICES[truth.voice % len(VOICES)], strict=True))
    frame["category"] = frame["judge"].map(voice)
    write_battles(frame, path)


def timed(argv: list[str]) -> float:
    """Wall seconds of ``prefduel ARGV`` (its output swallowed); stops on a failure."""
    start = time.perf_counter()
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    seconds = time.perf_counter() - start
    if code != 0:
        sys.exit(f"prefduel {' '.join(argv)} failed ({code}):\n{err.getvalue()}")
    return seconds


def run(folder: Path, votes: int, seed: int) -> bool:
    log = folder / "votes.csv"
    start = time.perf_counter()
    write_log(log, votes, seed)
    print(f"log: {votes:,} votes, {log.stat().st_size / 2**20:.0f} MiB CSV "
          f"(written in {time.perf_counter() - start:.1f} s)")
    build = timed(["worlds", "build", "--from-votes", str(log), "--out", str(folder / "world")])
    rank = timed(["rank", str(log), "--out", str(folder / "rank"), "--no-features",
                  "--bt-mode", "hier", "--no-progress"])
    ok = build <= TARGET_SECONDS
    print(f"prefduel worlds build --from-votes: {build:.1f} s (target <= {TARGET_SECONDS:.0f} s: "
          f"{'met' if ok else 'MISSED'})")
    print(f"prefduel rank --no-features --bt-mode hier: {rank:.1f} s")
    print(f"build / rank: {build / rank:.2f}")
    return ok


def cli() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--votes", type=int, default=1_000_000, help="default: %(default)s")
    parser.add_argument("--seed", type=int, default=0, help="default: %(default)s")
    parser.add_argument(
        "--keep", type=Path, default=None, metavar="DIR",
        help="write the log, the world and rank's report here (default: a temporary folder)",
    )
    args = parser.parse_args()
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
        return 0 if run(args.keep, args.votes, args.seed) else 1
    with tempfile.TemporaryDirectory() as folder:
        return 0 if run(Path(folder), args.votes, args.seed) else 1


if __name__ == "__main__":
    sys.exit(cli())
