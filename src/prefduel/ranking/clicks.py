"""TutorDuel clicks as Arena-format battles.

A TutorDuel run shows each arriving student two of the ``K`` persona answers per question and
records one click. Read as votes -- user = arrival, "models" = personas, prompt = the question --
the personalized-ranking analysis shows how far each student departs from the population.

The world and the trajectory are taken as arguments (duck-typed: a ``World`` and a runner
``Trajectory``), so this module depends on neither the runner nor the worlds; re-running a cell
to recover its trajectory is the caller's job (``prefduel rank --from-run`` does it with the
check that the re-run reproduces the stored row).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from prefduel.ranking import _deps
from prefduel.ranking.errors import RankingError

#: Columns of the exported battles, in order.
CLICK_COLUMNS: tuple[str, ...] = (
    "model_a",
    "model_b",
    "winner",
    "judge",
    "tstamp",
    "prompt",
    "student",
    "profile",
    "question_id",
    "topic",
    "arrival",
    "round",
    "world",
    "seed",
    "policy",
)


def trajectory_battles(world: Any, trajectory: Any, *, policy: str = "") -> Any:
    """The clicks of one run as Arena-format battles, one row per round (``N x S`` rows).

    Args:
        world: A TutorDuel ``World`` (``N`` arrivals x ``S`` rounds x ``K`` personas, with
            ``personas``, ``questions``, ``students``, ``question_index``, ``student_index``).
        trajectory: What the policy did: ``first``, ``second`` (shown personas) and
            ``outcome`` (1 if ``first`` won the click), each ``N x S``.
        policy: Policy spec, stored in every row.

    Returns:
        A pandas DataFrame with `CLICK_COLUMNS`: ``model_a``/``model_b`` persona names (as
        shown, first/second), ``winner`` (``model_a``/``model_b``), ``judge`` = the arrival
        (``arrival-0007``), ``tstamp`` = ``arrival * S + round``, ``prompt`` = the question text
        (its id when the world has no text), plus the student, profile, question and run ids.

    Raises:
        RankingError: shapes disagree with the world, or a pair repeats a persona.
    """
    pd = _deps.pandas()
    first = np.asarray(trajectory.first)
    second = np.asarray(trajectory.second)
    outcome = np.asarray(trajectory.outcome)
    _check_shapes(world, first, second, outcome)
    n_arr, n_rounds = int(world.N), int(world.S)
    names = _persona_names(world)
    arrival = np.repeat(np.arange(n_arr), n_rounds)
    rnd = np.tile(np.arange(n_rounds), n_arr)
    q_flat = np.asarray(world.question_index).reshape(-1)
    student_of, profile_of = _student_fields(world)
    q_ids, q_text, q_topic = _question_fields(world, q_flat)
    return pd.DataFrame(
        {
            "model_a": names[first.reshape(-1)],
            "model_b": names[second.reshape(-1)],
            "winner": np.where(outcome.reshape(-1) == 1, "model_a", "model_b"),
            "judge": [f"arrival-{n:04d}" for n in arrival.tolist()],
            "tstamp": arrival * n_rounds + rnd,
            "prompt": [q_text[q] for q in q_flat.tolist()],
            "student": student_of[arrival],
            "profile": profile_of[arrival],
            "question_id": [q_ids[q] for q in q_flat.tolist()],
            "topic": [q_topic[q] for q in q_flat.tolist()],
            "arrival": arrival,
            "round": rnd,
            "world": str(world.name),
            "seed": int(world.seed),
            "policy": policy,
        },
        columns=list(CLICK_COLUMNS),
    )


def _check_shapes(world: Any, first: np.ndarray, second: np.ndarray, outcome: np.ndarray) -> None:
    """Each array ``(N, S)``; each pair two distinct persona indices in ``[0, K)``."""
    n_arr, n_rounds, k = int(world.N), int(world.S), int(world.K)
    for name, arr in (("first", first), ("second", second), ("outcome", outcome)):
        if arr.shape != (n_arr, n_rounds):
            raise RankingError(
                f"trajectory.{name} has shape {arr.shape}, world {world.name!r} needs "
                f"({n_arr}, {n_rounds})"
            )
    if np.any(first == second) or first.min() < 0 or max(first.max(), second.max()) >= k:
        raise RankingError("trajectory pairs must be two distinct persona indices in [0, K)")


def _persona_names(world: Any) -> np.ndarray:
    """``(K,)`` object array of persona names (``persona-i`` where the world has none)."""
    k = int(world.K)
    personas = [_persona_name(p, i) for i, p in enumerate(world.personas or [])]
    personas += [f"persona-{i}" for i in range(len(personas), k)]
    return np.asarray(personas, dtype=object)


def _student_fields(world: Any) -> tuple[np.ndarray, np.ndarray]:
    """Student id and profile of each arrival, each ``(N,)``."""
    students = list(world.students or [])
    s_index = np.asarray(world.student_index)
    student_of = np.asarray([_field(students, int(i), "id", f"student-{int(i)}") for i in s_index])
    profile_of = np.asarray([_field(students, int(i), "profile", "") for i in s_index])
    return student_of, profile_of


def _question_fields(world: Any, q_flat: np.ndarray) -> tuple[list[str], list[str], list[str]]:
    """Id, text (the id when there is none) and topic of every question index ``q_flat``
    uses, each a list of ``Q`` (at least as many as the world lists)."""
    questions = list(world.questions or [])
    q_ids = [
        _field(questions, int(q), "id", f"q{int(q)}") for q in range(_count(questions, q_flat))
    ]
    q_text = [_field(questions, q, "text", q_ids[q]) for q in range(len(q_ids))]
    q_topic = [_field(questions, q, "topic", "") for q in range(len(q_ids))]
    return q_ids, q_text, q_topic


def _persona_name(persona: Any, index: int) -> str:
    if isinstance(persona, dict):
        return str(persona.get("name") or persona.get("id") or f"persona-{index}")
    return str(persona)


def _field(items: list[Any], index: int, key: str, default: str) -> str:
    if 0 <= index < len(items) and isinstance(items[index], dict):
        value = items[index].get(key)
        if value not in (None, ""):
            return str(value)
    return default


def _count(items: list[Any], indices: np.ndarray) -> int:
    return max(len(items), int(indices.max()) + 1 if indices.size else 0)
