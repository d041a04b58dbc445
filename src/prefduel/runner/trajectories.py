"""Recover what a finished cell did -- the pairs it showed and the clicks it got -- by re-running
it.

Result rows store the excess regret per arrival and per round, not the pairs or the clicks. A
cell is deterministic (the same world, seed and policy give the same row, `run_cell`), so
`find_cell` locates the stored row of ``(world, seed, policy)`` in a results file and
`replay_cell` runs that cell again and checks the re-run against every score field of the row:
a row the current package does not reproduce (e.g. one written by another version) is refused
with `ReplayMismatchError` rather than used wrongly.

::

    cell = find_cell("results.jsonl", "dev", 0, "random")
    clicks = replay_cell(cell, on_arrival=lambda n: ...)
    clicks.trajectory.first, clicks.trajectory.second, clicks.trajectory.outcome  # N x S
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from prefduel import __version__
from prefduel.core.errors import ResultsFileError
from prefduel.policies.loading import PolicySpec, resolve_spec
from prefduel.runner.cell import Trajectory, run_cell, summarize
from prefduel.runner.store import ResultsStore
from prefduel.worlds.spec import parse_world
from prefduel.worlds.world import World

#: Score fields a re-run must reproduce, in the order they are compared.
CHECKED_FIELDS: tuple[str, ...] = (
    "excess_per_arrival",
    "excess_per_round",
    "R",
    "G",
    "R_rand",
    "excess",
    "score",
)


class CellNotFoundError(ResultsFileError):
    """The results file has no policy row for the requested ``(world, seed, policy)``; the
    message lists what it has instead."""


class ReplayMismatchError(ResultsFileError):
    """Re-running a cell does not reproduce its stored row; the message names the first
    differing field and the version that wrote the row."""


@dataclass(frozen=True)
class StoredCell:
    """A finished policy cell of a results file, ready to be re-run.

    Attributes:
        world: The cell's world, labelled like its row (`WorldSpec.make`), with the row's seed.
        spec: The policy, resolved once; ``spec.canonical`` is the row's ``policy``.
        row: The stored result row.
    """

    world: World
    spec: PolicySpec
    row: dict[str, Any]

    @property
    def policy(self) -> str:
        """The canonical policy spec (the row's ``policy``)."""
        return self.spec.canonical


@dataclass(frozen=True)
class CellClicks:
    """What a stored cell did, recovered by `replay_cell`.

    Attributes:
        cell: The cell that was re-run.
        trajectory: The shown pairs ``first``/``second`` and the clicks ``outcome`` (each
            ``N x S``; ``outcome`` is 1 when ``first`` won), checked against the row.
    """

    cell: StoredCell
    trajectory: Trajectory

    @property
    def world(self) -> World:
        """The cell's world."""
        return self.cell.world

    @property
    def policy(self) -> str:
        """The canonical policy spec."""
        return self.cell.policy


def load_rows(path: str | Path) -> list[dict[str, Any]]:
    """Rows of a results file, read-only (a damaged file is reported, never repaired).

    Raises:
        ResultsFileError: the file does not exist or has a corrupt line.
    """
    if not os.path.isfile(path):
        raise ResultsFileError(f"results file {path} does not exist")
    return ResultsStore(path, repair=False).rows()


def _is_policy_row(row: dict[str, Any], world: str) -> bool:
    return row.get("kind") == "policy" and row.get("world") == world


def find_row(rows: Sequence[dict[str, Any]], world: str, seed: int, policy: str) -> dict[str, Any]:
    """The policy row of ``(world, seed, policy)`` (``world`` labelled as in rows, ``policy``
    in canonical form).

    Raises:
        CellNotFoundError: no such row; the message lists what the rows have for that world
            (its policies at that seed, the seeds of that policy), or the worlds they have.
    """
    for row in rows:
        if _is_policy_row(row, world) and row.get("seed") == seed and row.get("policy") == policy:
            return row
    same_world = [r for r in rows if _is_policy_row(r, world)]
    if not same_world:
        worlds = sorted({str(r.get("world")) for r in rows if r.get("kind") == "policy"})
        have = f"it has policy rows for worlds: {', '.join(worlds)}" if worlds else "it is empty"
        raise CellNotFoundError(f"no row for world {world!r} in the results file ({have})")
    policies = sorted({str(r.get("policy")) for r in same_world if r.get("seed") == seed})
    seeds = sorted({r.get("seed") for r in same_world if r.get("policy") == policy})
    hint = []
    if policies:
        hint.append(f"policies with seed {seed}: {', '.join(policies)}")
    if seeds:
        hint.append(f"seeds with policy {policy!r}: {', '.join(map(str, seeds))}")
    raise CellNotFoundError(
        f"no row for world {world!r}, seed {seed}, policy {policy!r} in the results file"
        + (f" ({'; '.join(hint)})" if hint else "")
    )


def find_cell(
    results: str | Path | Sequence[dict[str, Any]],
    world: str,
    seed: int,
    policy: str | PolicySpec,
    *,
    allow_test: bool = False,
) -> StoredCell:
    """The stored cell of ``(world, seed, policy)``: its world as the sweep built it and its row.

    Args:
        results: A results file, or its rows.
        world: A roster id, roster file or stored world, as given to the sweep (any spelling
            of its label, see `prefduel.worlds.world_label`).
        seed: The cell's seed.
        policy: A policy spec (any order of settings), or one already resolved.
        allow_test: Allow building the locked held-out ``test-*`` rosters.

    Raises:
        ResultsFileError: the results file is missing or damaged.
        CellNotFoundError: the rows have no such cell.
        PrefduelError: the world or the policy spec is not valid (the usual errors of
            `WorldSpec.make` and `resolve_spec`).
    """
    rows = load_rows(results) if isinstance(results, (str, Path)) else results
    world_spec = parse_world(world)
    label = world_spec.label
    built = world_spec.make(seed, allow_test=allow_test)
    spec = resolve_spec(policy)
    return StoredCell(built, spec, find_row(rows, label, seed, spec.canonical))


def check_trajectory(world: World, row: dict[str, Any], trajectory: Trajectory) -> None:
    """Check that ``trajectory`` reproduces every score field of the row (`CHECKED_FIELDS`:
    per arrival, per round and the totals).

    Raises:
        ReplayMismatchError: shapes differ or the excess regrets do not match (the message
            names the first differing field and the version that wrote the row).
    """
    stored = row.get("excess_per_arrival")
    shape = (world.N, world.S)
    if trajectory.first.shape != shape or trajectory.second.shape != shape:
        raise ReplayMismatchError(
            f"trajectory has shape {trajectory.first.shape}, the world needs {shape}"
        )
    if not isinstance(stored, list) or len(stored) != world.N:
        got = len(stored) if isinstance(stored, list) else type(stored).__name__
        raise ReplayMismatchError(
            f"the row's excess_per_arrival has {got} entries, the world has {world.N} arrivals "
            "(is it a row of another world?)"
        )
    mismatch = _first_mismatch(row, summarize(world, trajectory.first, trajectory.second))
    if mismatch is None:
        return
    version = row.get("version", "unknown")
    why = (
        f"the row was written by prefduel {version}, this is {__version__}"
        if version != __version__
        else "same package version, so the world or the policy code has changed"
    )
    raise ReplayMismatchError(
        f"re-running policy {row.get('policy')!r} on world {row.get('world')!r}, seed "
        f"{row.get('seed')} does not reproduce the stored row ({mismatch}; {why}); refusing "
        "to draw a page that would not show what that run did"
    )


def _first_mismatch(row: dict[str, Any], recomputed: dict[str, Any]) -> str | None:
    """The first score field of ``row`` that the re-run does not reproduce, described; None
    when every one matches (to 1e-6)."""
    for name in CHECKED_FIELDS:
        want = np.asarray(recomputed[name], dtype=float)
        try:
            got = np.asarray(row.get(name), dtype=float)
        except (TypeError, ValueError):
            return f"{name} is {row.get(name)!r}"
        if got.shape != want.shape:
            return f"{name} has shape {got.shape}, the re-run {want.shape}"
        close = np.isclose(got, want, rtol=1e-6, atol=1e-6)
        if close.all():
            continue
        if want.ndim == 0:
            return f"{name}: stored {float(got):.6f}, recomputed {float(want):.6f}"
        bad = int(np.flatnonzero(~close)[0])
        what = "arrival" if name == "excess_per_arrival" else "round"
        return f"{name} of {what} {bad}: stored {got[bad]:.6f}, recomputed {want[bad]:.6f}"
    return None


def replay_trajectory(
    world: World,
    row: dict[str, Any],
    *,
    spec: str | PolicySpec | None = None,
    on_arrival: Callable[[int], None] | None = None,
) -> Trajectory:
    """Recompute the pairs and clicks behind a result row by re-running its cell.

    Args:
        world: The row's world, with the row's name and seed.
        row: A policy row.
        spec: The policy to run (default: the row's ``policy``).
        on_arrival: Called with each arrival's index as its session in the re-run ends
            (progress).

    Raises:
        ReplayMismatchError: the re-run does not reproduce the row (see `check_trajectory`).
    """
    policy = str(row["policy"]) if spec is None else spec
    fresh = run_cell(world, policy, keep_trajectory=True, on_arrival=on_arrival)
    trajectory = fresh["trajectory"]
    check_trajectory(world, row, trajectory)
    return trajectory


def replay_cell(
    cell: StoredCell, *, on_arrival: Callable[[int], None] | None = None
) -> CellClicks:
    """Re-run a stored cell and return its pairs and clicks, checked against its row.

    Args:
        cell: The cell (`find_cell`).
        on_arrival: Called with each arrival's index (``0 .. world.N - 1``) as its session in
            the re-run ends (progress).

    Raises:
        ReplayMismatchError: the re-run does not reproduce the stored row.
        PolicyError: the policy broke the protocol or raised.
    """
    trajectory = replay_trajectory(cell.world, cell.row, spec=cell.spec, on_arrival=on_arrival)
    return CellClicks(cell, trajectory)
