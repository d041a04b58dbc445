"""Shared test helpers: small random worlds, a fake reference function, misbehaving policies.

Importable as ``pb_toys`` because ``tests/`` (the rootdir conftest's folder) is on ``sys.path``.
Functions here are module-level so they pickle into worker processes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from prefduel import __version__
from prefduel.core.btl import btl_matrix
from prefduel.core.rng import stream
from prefduel.runner.cell import summarize
from prefduel.runner.references import REFERENCES
from prefduel.worlds.world import World


def make_world(seed: int = 0, n: int = 12, s: int = 24, k: int = 6, d: int = 7) -> World:
    """A small random world ``N x S x K`` with ``d`` features (persona indicators + a score)."""
    rng = stream(seed, "tests", "toy-world")
    phi = rng.normal(size=(n, s, k, d))
    phi[..., : min(k, d)] = np.eye(k, d)[:, : min(k, d)]
    theta = rng.normal(size=(n, d))
    logits = np.einsum("nskd,nd->nsk", phi, theta)
    utilities = 1.0 / (1.0 + np.exp(-logits))
    return World(
        roster="toy",
        seed=seed,
        Phi=phi,
        U=utilities,
        P=btl_matrix(utilities, scale=8.0),
        u=rng.random((n, s)),
        student_index=np.arange(n) % 4,
        question_index=rng.integers(0, 10, size=(n, s)),
        students=[{"id": f"student-{i}"} for i in range(4)],
        questions=[{"id": f"q{i}"} for i in range(10)],
    )


def save_world(directory: Path, seed: int = 0) -> str:
    """Save a toy world under ``directory`` and return its path as a string."""
    return str(make_world(seed).save(directory))


def fake_reference_rows(world: World) -> list[dict[str, Any]]:
    """Stand-in for ``reference_rows``: every reference name, each showing one fixed pair."""
    rows = []
    for index, name in enumerate(REFERENCES):
        first = np.full((world.N, world.S), index % world.K)
        second = np.full((world.N, world.S), (index + 1) % world.K)
        rows.append(
            {
                "kind": "reference",
                "world": world.name,
                "seed": int(world.seed),
                "policy": name,
                **summarize(world, first, second),
                "wall_time": 0.0,
                "version": __version__,
            }
        )
    return rows


def strip_wall(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows without ``wall_time``, sorted by key (for run-to-run comparisons)."""
    out = [{k: v for k, v in row.items() if k != "wall_time"} for row in rows]
    return sorted(out, key=lambda r: (r["kind"], r["world"], r["seed"], r["policy"]))


#: Where the misbehaving policies break.
BAD_ARRIVAL, BAD_ROUND = 2, 3

BAD_POLICIES = f"""
from prefduel.policies.base import Policy


class _Bad(Policy):
    name = "bad"

    def reset(self, rng, context):
        super().reset(rng, context)
        self.arrival = -1

    def start_student(self):
        self.arrival += 1
        self.round = -1

    def select(self, Phi):
        self.round += 1
        if (self.arrival, self.round) == ({BAD_ARRIVAL}, {BAD_ROUND}):
            return self.misbehave()
        return 0, 1


class Dup(_Bad):
    def misbehave(self):
        return 2, 2


class OutOfRange(_Bad):
    def misbehave(self):
        return 0, self.K


class NonInteger(_Bad):
    def misbehave(self):
        return 0.5, 1


class Raises(_Bad):
    def misbehave(self):
        raise RuntimeError("boom in misbehave")


class Fixed(Policy):
    name = "fixed"

    def __init__(self, a=0, b=1):
        self.a, self.b = a, b

    def select(self, Phi):
        return self.a, self.b
"""

#: Class name -> text its error message must contain.
BAD_CASES = {
    "Dup": "two distinct indices",
    "OutOfRange": "outside 0..5",
    "NonInteger": "must return integers",
    "Raises": "boom in misbehave",
}


def write_policies(directory: Path) -> str:
    """Write :data:`BAD_POLICIES` to ``directory/user_policies.py``; return the path."""
    path = directory / "user_policies.py"
    path.write_text(BAD_POLICIES)
    return str(path)
