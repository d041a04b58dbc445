"""Helpers of the ask-track tests: a small results file with three ask tracks.

Importable as ``pb_ask_rows`` (pytest puts this folder on ``sys.path``).
"""

from __future__ import annotations

from pathlib import Path

from pb_toys import fake_reference_rows
from prefduel.runner.sweep import sweep

#: A dev roster of 40 arrivals, small enough for a test.
TINY_ROSTER = "base: dev\narrivals: 40\n"


def ask_results(directory: Path, budgets: tuple[int, ...] = (0, 1, 2)) -> tuple[Path, str]:
    """Run notransfer and notransfer-ask on a 40-arrival dev roster on the ask tracks
    ``budgets`` (seeds 0-1), with stand-in reference rows; return (results, roster file).

    The library equivalent of ``prefduel leaderboard --worlds tiny.yaml --ask-budget 0,1,2
    --policies notransfer,notransfer-ask --seeds 0-1``.
    """
    roster = directory / "tiny.yaml"
    roster.write_text(TINY_ROSTER, encoding="utf-8")
    worlds = [str(roster) + (f"+ask{b}" if b else "") for b in budgets]
    results = directory / "results.jsonl"
    sweep(
        worlds,
        [0, 1],
        ["notransfer", "notransfer-ask"],
        results,
        jobs=1,
        progress=False,
        reference_fn=fake_reference_rows,
    )
    return results, str(roster)
