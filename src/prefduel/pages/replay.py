"""Watch the policy learn: step through the arrivals of a finished run.

Result rows store ``excess_per_arrival`` but not the pairs, so the trajectory is recomputed by
re-running the cell (`prefduel.runner.cell.run_cell` is deterministic: the same world,
seed and policy give the same row) and checked against the stored row; a row that the current
package does not reproduce (e.g. one written by another version) is refused with
`ResultsFileError` rather than drawn wrongly.

The page's CSS, JavaScript, HTML template and icons are in `prefduel.pages._replay_assets`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

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
from prefduel.pages.asks import asked_by_arrival
from prefduel.policies.loading import display_name
from prefduel.runner.cell import Trajectory
from prefduel.runner.trajectories import check_trajectory
from prefduel.stats.paired import centered_moving_mean
from prefduel.worlds.world import World

#: Width of the centered moving mean drawn over the per-arrival excess regret.
WINDOW = 25


def _rounded(values: np.ndarray) -> list[float]:
    return [round(float(x), 6) for x in values]


def replay_data(
    world: World, row: dict[str, Any], trajectory: Trajectory, *, arrival: int = 0
) -> dict[str, Any]:
    """The JSON the replay page embeds; on an ask track also ``ask``: the questions the policy
    asked each arrival, before which round, and the world's stored answers
    (`prefduel.pages.asks.asked_by_arrival`).

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
        "label": display_name(str(row.get("policy", ""))),
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
        "ask": asked_by_arrival(world, trajectory.asked) if world.ask_budget else None,
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
    ``run-score``, ``round-row`` (with ``data-first``, ``data-second``, ``data-winner`` and
    ``data-best``) and, on an ask track, ``asked`` (the questions asked this arrival) and
    ``ask-row`` (one per question, before the round it was asked in, with ``data-round``,
    ``data-question`` and ``data-answer``, the world's stored answer).

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
    spec_line = (
        f'\n    <p class="{element_id}-muted">policy {esc(data["policy"])}</p>'
        if data["label"] != data["policy"]
        else ""
    )
    return (
        fill(REPLAY_HTML, element_id)
        .format(
            css=fill(BASE_CSS + REPLAY_CSS, element_id),
            policy=esc(data["policy"]),
            label=esc(data["label"]),
            spec_line=spec_line,
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
    policy = display_name(str(row["policy"])) if row.get("policy") else "the policy"
    title = f"Watch {policy} learn · {world.name} seed {world.seed}"
    return document(title, replay_widget(world, row, trajectory, arrival=arrival))
