"""Consistent result rows for tests that read or write results files by hand."""

from __future__ import annotations

from typing import Any

from prefduel import __version__


def make_row(
    policy: str,
    seed: int = 0,
    score: float = 1.0,
    *,
    world: str = "w",
    kind: str = "policy",
    arrivals: int = 4,
    rounds: int = 3,
) -> dict[str, Any]:
    """A row whose numbers agree with each other (the store refuses any other).

    The floor is 10 and random pairs 110, so ``R`` follows from ``score``; the excess is
    spread evenly over arrivals and rounds.
    """
    floor, random_regret = 10.0, 110.0
    regret = random_regret - score * (random_regret - floor) / 100.0
    excess = regret - floor
    return {
        "kind": kind,
        "world": world,
        "seed": seed,
        "policy": policy,
        "R": regret,
        "G": floor,
        "R_rand": random_regret,
        "excess": excess,
        "score": score,
        "excess_per_arrival": [excess / arrivals] * arrivals,
        "excess_per_round": [excess / arrivals / rounds] * rounds,
        "wall_time": 0.1,
        "version": __version__,
    }
