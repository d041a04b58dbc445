"""Helpers of the report tests: a toy world with profiles, synthetic rows, JSONL files.

Importable as ``pb_report_rows`` (pytest puts this folder on ``sys.path``).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pb_toys import make_world
from prefduel import __version__
from prefduel.core.rng import stream
from prefduel.runner.rows import ResultRow, score_fields
from prefduel.runner.sweep import sweep
from prefduel.worlds import parse_world

#: Hidden profiles of the toy world's 4 students (arrival a is student a % 4).
TOY_PROFILES = ("alpha", "beta", "alpha", "gamma")


def profile_world(directory: Path, seed: int = 0) -> str:
    """Save a toy world (N=12, S=24) whose students carry profiles; return its path."""
    world = make_world(seed)
    world.students = [{"id": f"student-{i}", "profile": p} for i, p in enumerate(TOY_PROFILES)]
    return str(world.save(directory))


def sweep_results(directory: Path, seeds: Sequence[int] = (0, 1, 2)) -> tuple[Path, str]:
    """Run random, notransfer and pooled on a toy profile world; return (results, world)."""
    world = profile_world(directory / "world")
    results = directory / "results.jsonl"
    sweep(
        [world],
        list(seeds),
        ["random", "notransfer", "pooled"],
        str(results),
        jobs=1,
        progress=False,
    )
    return results, world


def synthetic_rows(
    world: str,
    seeds: Iterable[int],
    policies: dict[str, float],
    n: int,
    s: int = 24,
    version: str = __version__,
) -> list[dict[str, Any]]:
    """Rows with every field of ``run_cell``: ``policies`` maps a name to its regret level."""
    rows = []
    for seed in seeds:
        rng = stream(seed, "tests", "report-rows", world)
        shared = rng.gamma(4.0, 0.25, size=(n, s))
        g = 400.0
        r_rand = g + float(0.3 * shared.sum())
        for policy, level in policies.items():
            excess = level * shared * rng.gamma(8.0, 1 / 8.0, size=(n, s))
            fields = score_fields(g + float(excess.sum()), g, r_rand, excess)
            row = ResultRow.build("policy", world, seed, policy, fields, 0.1)
            rows.append(dataclasses.replace(row, version=version).to_json())
    return rows


def write_rows(path: Path, rows: Iterable[dict[str, Any]], tail: str = "") -> Path:
    """Write rows as JSONL (plus raw ``tail`` text); return the path."""
    text = "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in rows)
    path.write_text(text + tail, encoding="utf-8")
    return path


def read_rows(path: Path) -> list[dict[str, Any]]:
    """The JSON rows of a JSONL file."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def roster_size(world: str, seed: int = 0) -> int:
    """Number of arrivals of a roster (from its students table)."""
    return int(np.asarray(parse_world(world).students(seed, allow_test=True)[1]).size)
