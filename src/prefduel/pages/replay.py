"""Watch the policy learn: step through the arrivals of a finished run.

Result rows store ``excess_per_arrival`` but not the pairs, so the trajectory is recomputed by
re-running the cell (`prefduel.runner.cell.run_cell` is deterministic: the same world,
seed and policy give the same row) and checked against the stored row; a row that the current
package does not reproduce (e.g. one written by another version) is refused with
`ResultsFileError` rather than drawn wrongly.

The page's CSS, JavaScript, HTML template and icons are in `prefduel.pages._replay_assets`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from prefduel import __version__
from prefduel.core.errors import ResultsFileError
from prefduel.core.regret import floor_regret, pair_regret, random_regret
from prefduel.pages._html import (
    BASE_CSS,
    check_arrival,
    check_element_id,
    document,
    esc,
    fill,
    json_script,
    persona_table,
    question_card,
    student_card,
)
from prefduel.pages._replay_assets import ICONS, REPLAY_CSS, REPLAY_HTML, REPLAY_JS
from prefduel.runner.cell import Trajectory, run_cell, summarize
from prefduel.runner.store import ResultsStore
from prefduel.stats.paired import centered_moving_mean
from prefduel.worlds.world import World

#: Width of the centered moving mean drawn over the per-arrival excess regret.
WINDOW = 25


def _rounded(values: np.ndarray) -> list[float]:
    return [round(float(x), 6) for x in values]


def load_rows(path: str | Path) -> list[dict[str, Any]]:
    """Rows of a results file, read-only.

    Raises:
        ResultsFileError: the file does not exist or has a corrupt line.
    """
    if not os.path.isfile(path):
        raise ResultsFileError(f"results file {path} does not exist")
    return ResultsStore(path, repair=False).rows()


def find_row(rows: list[dict[str, Any]], world: str, seed: int, policy: str) -> dict[str, Any]:
    """The policy row of ``(world, seed, policy)`` (``policy`` in canonical form).

    Raises:
        ResultsFileError: no such row; the message lists what the file has for that world.
    """
    for row in rows:
        if (
            row.get("kind") == "policy"
            and row.get("world") == world
            and row.get("seed") == seed
            and row.get("policy") == policy
        ):
            return row
    same_world = [r for r in rows if r.get("kind") == "policy" and r.get("world") == world]
    if not same_world:
        worlds = sorted({str(r.get("world")) for r in rows if r.get("kind") == "policy"})
        have = f"it has policy rows for worlds: {', '.join(worlds)}" if worlds else "it is empty"
        raise ResultsFileError(f"no row for world {world!r} in the results file ({have})")
    policies = sorted({str(r.get("policy")) for r in same_world if r.get("seed") == seed})
    seeds = sorted({r.get("seed") for r in same_world if r.get("policy") == policy})
    hint = []
    if policies:
        hint.append(f"policies with seed {seed}: {', '.join(policies)}")
    if seeds:
        hint.append(f"seeds with policy {policy!r}: {', '.join(map(str, seeds))}")
    raise ResultsFileError(
        f"no row for world {world!r}, seed {seed}, policy {policy!r} in the results file"
        + (f" ({'; '.join(hint)})" if hint else "")
    )


def check_trajectory(world: World, row: dict[str, Any], trajectory: Trajectory) -> None:
    """Check that ``trajectory`` reproduces every score field of the row (per arrival, per
    round and the totals ``R``, ``G``, ``R_rand``, ``excess``, ``score``).

    Raises:
        ResultsFileError: shapes differ or the excess regrets do not match (the message names the
            first differing arrival and the version that wrote the row).
    """
    stored = row.get("excess_per_arrival")
    shape = (world.N, world.S)
    if trajectory.first.shape != shape or trajectory.second.shape != shape:
        raise ResultsFileError(
            f"trajectory has shape {trajectory.first.shape}, the world needs {shape}"
        )
    if not isinstance(stored, list) or len(stored) != world.N:
        got = len(stored) if isinstance(stored, list) else type(stored).__name__
        raise ResultsFileError(
            f"the row's excess_per_arrival has {got} entries, the world has {world.N} arrivals "
            "(is it a row of another world?)"
        )
    recomputed = summarize(world, trajectory.first, trajectory.second)
    mismatch = _first_mismatch(row, recomputed)
    if mismatch is not None:
        version = row.get("version", "unknown")
        why = (
            f"the row was written by prefduel {version}, this is {__version__}"
            if version != __version__
            else "same package version, so the world or the policy code has changed"
        )
        raise ResultsFileError(
            f"re-running policy {row.get('policy')!r} on world {row.get('world')!r}, seed "
            f"{row.get('seed')} does not reproduce the stored row ({mismatch}; {why}); refusing "
            "to draw a page that would not show what that run did"
        )


def _first_mismatch(row: dict[str, Any], recomputed: dict[str, Any]) -> str | None:
    """The first score field of ``row`` that the re-run does not reproduce, described; None
    when every one matches (to 1e-6)."""
    for name in ("excess_per_arrival", "excess_per_round", "R", "G", "R_rand", "excess", "score"):
        want = np.asarray(recomputed[name], dtype=float)
        try:
            got = np.asarray(row.get(name), dtype=float)
        except (TypeError, ValueError):
            return f"{name} is {row.get(name)!r}"
        if got.shape != want.shape:
            return f"{name} has shape {got.shape}, the re-run {want.shape}"
        close = np.isclose(got, want, rtol=1e-6, atol=1e-6)
        if not close.all():
            if want.ndim == 0:
                return f"{name}: stored {float(got):.6f}, recomputed {float(want):.6f}"
            bad = int(np.flatnonzero(~close)[0])
            what = "arrival" if name == "excess_per_arrival" else "round"
            return (
                f"{name} of {what} {bad}: stored {got[bad]:.6f}, recomputed {want[bad]:.6f}"
            )
    return None


def replay_trajectory(
    world: World, row: dict[str, Any], *, on_arrival: Callable[[int], None] | None = None
) -> Trajectory:
    """Recompute the pairs and clicks behind a result row by re-running its cell.

    Args:
        world: The row's world, with the row's name and seed.
        row: A policy row (``policy`` is the spec that is run again).
        on_arrival: Called as each arrival of the re-run ends (progress).

    Raises:
        ResultsFileError: the re-run does not reproduce the row (see `check_trajectory`).
    """
    fresh = run_cell(world, str(row["policy"]), keep_trajectory=True, on_arrival=on_arrival)
    trajectory = fresh["trajectory"]
    check_trajectory(world, row, trajectory)
    return trajectory


def replay_data(
    world: World, row: dict[str, Any], trajectory: Trajectory, *, arrival: int = 0
) -> dict[str, Any]:
    """The JSON the replay page embeds.

    Raises:
        ResultsFileError: ``trajectory`` does not reproduce ``row``.
        SpecError: ``arrival`` out of range.
    """
    arrival = check_arrival(world, arrival)
    check_trajectory(world, row, trajectory)
    first = np.asarray(trajectory.first, dtype=np.int64)
    second = np.asarray(trajectory.second, dtype=np.int64)
    outcome = np.asarray(trajectory.outcome, dtype=np.int64)
    excess_rounds = pair_regret(world.U, first, second) - floor_regret(world.U)
    excess = [float(x) for x in row["excess_per_arrival"]]
    rand_excess = (random_regret(world.U) - floor_regret(world.U)).sum(axis=1)
    best = np.argsort(-world.U, axis=-1, kind="stable")[..., :2]
    winners = np.where(outcome == 1, first, second)

    students, student_of = _distinct_students(world)
    questions, q = _distinct_questions(world)
    return {
        "world": str(row.get("world", world.name)),
        "seed": int(row.get("seed", world.seed)),
        "policy": str(row.get("policy", "")),
        "version": str(row.get("version", "")),
        "score": row.get("score"),
        "excess_total": float(sum(excess)),
        "N": world.N,
        "S": world.S,
        "K": world.K,
        "window": WINDOW,
        "start": arrival,
        "personas": persona_table(world),
        "excess": excess,
        "ma": _rounded(centered_moving_mean(np.asarray(excess, dtype=float), WINDOW)),
        "rand": [round(float(x), 6) for x in rand_excess],
        "rand_ma": _rounded(centered_moving_mean(np.asarray(rand_excess, dtype=float), WINDOW)),
        "students": students,
        "student": student_of,
        "questions": questions,
        "q": q,
        "first": first.tolist(),
        "second": second.tolist(),
        "winner": winners.tolist(),
        "best": best.tolist(),
        "rx": np.round(excess_rounds, 4).tolist(),
    }


def _distinct_students(world: World) -> tuple[list[dict[str, str]], list[int]]:
    """Student cards without repeats, and each of the ``N`` arrivals' index into them.

    Arrivals of the same profile share one entry (their ids differ, their text does not).
    """
    student_ids: dict[tuple[str, str, str], int] = {}
    students = []
    student_of = []
    for n in range(world.N):
        card = student_card(world, n)
        key = (card["profile"], card["name"], card["description"])
        if key not in student_ids:
            student_ids[key] = len(students)
            students.append({"profile": key[0], "name": key[1], "description": key[2]})
        student_of.append(student_ids[key])
    return students, student_of


def _distinct_questions(world: World) -> tuple[list[str], list[list[int]]]:
    """Question texts in order of first use, and the ``(N, S)`` index of each round's."""
    question_ids: dict[int, int] = {}
    questions = []
    q = []
    for n in range(world.N):
        q_row = []
        for s in range(world.S):
            index = int(world.question_index[n, s])
            if index not in question_ids:
                question_ids[index] = len(questions)
                questions.append(question_card(world, n, s)["text"])
            q_row.append(question_ids[index])
        q.append(q_row)
    return questions, q


def replay_widget(
    world: World,
    row: dict[str, Any],
    trajectory: Trajectory,
    *,
    arrival: int = 0,
    element_id: str = "replay",
) -> str:
    """A self-contained HTML fragment replaying a finished run arrival by arrival.

    Stable ``data-testid`` attributes: ``chart``, ``first``, ``prev``, ``play``, ``next``,
    ``last``, ``slider``, ``speed``, ``arrival`` (with ``data-arrival``), ``student``, ``excess``,
    ``run-score`` and ``round-row`` (with ``data-first``, ``data-second``, ``data-winner`` and
    ``data-best``).

    Args:
        world: The world of the row (same name and seed).
        row: The policy's result row (``excess_per_arrival``, ``score``, ...).
        trajectory: The run's pairs and clicks, e.g. from `replay_trajectory`.
        arrival: The arrival shown first.
        element_id: Id of the section and prefix of its ids and classes.

    Raises:
        ResultsFileError: ``trajectory`` does not reproduce ``row``.
        SpecError: ``arrival`` out of range or an unusable ``element_id``.
    """
    element_id = check_element_id(element_id)
    data = replay_data(world, row, trajectory, arrival=arrival)
    score = data["score"]
    return (
        fill(REPLAY_HTML, element_id)
        .format(
            css=fill(BASE_CSS + REPLAY_CSS, element_id),
            policy=esc(data["policy"]),
            world=esc(data["world"]),
            seed=data["seed"],
            N=data["N"],
            S=data["S"],
            window=data["window"],
            score=f"{score:.1f}" if isinstance(score, int | float) else "&mdash;",
            mean_excess=f"{data['excess_total'] / data['N']:.2f}",
            data=json_script(element_id, data),
            js=fill(REPLAY_JS, element_id),
            **ICONS,
        )
        .strip()
        + "\n"
    )


def replay_page(
    world: World, row: dict[str, Any], trajectory: Trajectory, *, arrival: int = 0
) -> str:
    """A complete, offline HTML document with `replay_widget`."""
    title = f"Watch {row.get('policy', 'the policy')} learn · {world.name} seed {world.seed}"
    return document(title, replay_widget(world, row, trajectory, arrival=arrival))
