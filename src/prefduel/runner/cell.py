"""Run one (world, seed, policy) cell with common random numbers."""

from __future__ import annotations

import functools
import numbers
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from prefduel.core.errors import PolicyError, WorldFormatError
from prefduel.core.regret import floor_regret, pair_regret, random_regret
from prefduel.core.rng import stream
from prefduel.policies.base import policy_context, validate_pair
from prefduel.policies.loading import PolicySpec, resolve_spec
from prefduel.runner.rows import ResultRow, score_fields
from prefduel.worlds.world import World


@dataclass
class Trajectory:
    """What a policy did in one cell: shown pairs ``first``/``second`` and ``outcome`` (N x S),
    and on an ask track the questions it asked, ``(arrival, round, question)`` each."""

    first: np.ndarray
    second: np.ndarray
    outcome: np.ndarray
    asked: list[tuple[int, int, int]] = field(default_factory=list)


def play(
    world: World,
    policy: Any,
    rng: np.random.Generator,
    label: str = "policy",
    on_arrival: Callable[[int], None] | None = None,
) -> Trajectory:
    """Drive ``policy`` through every arrival and round of ``world``.

    Clicks follow the benchmark's one click rule, `World.click` (canonical order, then a
    flip), so ``(i, j)`` and ``(j, i)`` receive the same click under common random numbers.

    Args:
        world: The world.
        policy: The policy instance.
        rng: The policy's generator.
        label: The policy's name in error messages.
        on_arrival: Called with each arrival's index once its session is over (progress).

    Raises:
        PolicyError: naming the policy, world, seed, arrival and round of any protocol violation
            or exception raised by the policy.
    """
    n_arr, n_rounds, k = world.N, world.S, world.K
    phi_all = world.Phi.view()
    phi_all.flags.writeable = False  # a policy must not change what later policies see
    where = f"policy {label!r} on world {world.name!r}, seed {world.seed}"
    call = functools.partial(_call_policy, policy, where)
    call("reset", rng, _context(world))
    asking = _Asking.of(world, policy, call, where)
    asked: list[tuple[int, int, int]] = []
    # The two calls of every round are bound once (a round costs a few microseconds of runner
    # time, so per-call partials and lookups showed up next to cheap policies).
    select, update, click = _method(policy, "select"), _method(policy, "update"), world.click
    shown: list[int] = []  # i, j, click of every round, flat (one cheap array at the end)
    rounds = range(n_rounds)
    for n in range(n_arr):
        call("start_student", arrival=n)
        remaining = world.ask_budget if asking is not None else 0
        phi_n = phi_all[n]
        for s in rounds:
            if remaining:
                remaining = asking.round(n, s, remaining, asked)  # type: ignore[union-attr]
            try:
                raw = select(phi_n[s])
            except PolicyError:
                raise
            except (Exception, SystemExit) as exc:  # a policy must not end the whole run
                raise _policy_failure(where, "select", exc, n, s) from exc
            i, j = _checked_pair(raw, k, where, n, s)
            y = click(n, s, i, j)
            try:
                update(y)
            except PolicyError:
                raise
            except (Exception, SystemExit) as exc:
                raise _policy_failure(where, "update", exc, n, s) from exc
            shown += (i, j, y)
        call("end_student", arrival=n)
        if on_arrival is not None:
            on_arrival(n)
    table = np.array(shown, dtype=np.int64).reshape(n_arr, n_rounds, 3)
    first = np.ascontiguousarray(table[..., 0])
    second = np.ascontiguousarray(table[..., 1])
    outcome = table[..., 2].astype(np.int8)
    return Trajectory(first, second, outcome, asked)


def _context(world: World) -> dict[str, Any]:
    """The policy's context; on an ask track also ``ask_budget`` and the public ``questions``
    (`prefduel.worlds.asking.AskQuestion.to_json`). Without a track it is unchanged."""
    context = policy_context(world.N, world.S, world.K, world.d)
    if world.ask_budget and world.asks is not None:
        context["ask_budget"] = world.ask_budget
        context["questions"] = [q.to_json() for q in world.asks.questions]
    return context


@dataclass
class _Asking:
    """The ask loop of one cell: before each round a policy with an ``ask`` method may spend
    questions from the arrival's budget; each answer goes to its ``answer`` method."""

    answers: np.ndarray
    call: Callable[..., Any]
    where: str

    @classmethod
    def of(cls, world: World, policy: Any, call: Callable[..., Any], where: str) -> _Asking | None:
        """The loop, or None when the policy cannot ask or the world has no ask track."""
        if not world.ask_budget or world.asks is None or not callable(getattr(policy, "ask", None)):
            return None
        if not callable(getattr(policy, "answer", None)):
            raise PolicyError(f"{where}: a policy with ask() needs answer(question, value)")
        return cls(world.asks.answers, call, where)

    def round(self, n: int, s: int, remaining: int, asked: list[tuple[int, int, int]]) -> int:
        """Ask until the policy returns None or the budget is spent; the budget left."""
        while remaining:
            question = self.call("ask", arrival=n, rnd=s)
            if question is None:
                break
            q = _question_index(question, self.answers.shape[1], f"{self.where}, arrival {n}")
            self.call("answer", q, int(self.answers[n, q]), arrival=n, rnd=s)
            asked.append((n, s, q))
            remaining -= 1
        return remaining


def _question_index(question: Any, count: int, where: str) -> int:
    """Check what ``ask()`` returned: None (checked by the caller) or a question index."""
    if isinstance(question, bool | np.bool_) or not isinstance(question, numbers.Integral):
        raise PolicyError(f"{where}: ask() must return a question index or None, got {question!r}")
    if not 0 <= int(question) < count:
        raise PolicyError(f"{where}: ask() returned question {question} outside 0..{count - 1}")
    return int(question)


def _checked_pair(raw: Any, k: int, where: str, n: int, s: int) -> tuple[int, int]:
    """What ``select()`` returned, as two Python ints (`validate_pair`'s checks and messages).

    A tuple of two distinct in-range Python ints, what nearly every policy returns, is taken
    as it is; anything else goes through `validate_pair`.
    """
    if type(raw) is tuple and len(raw) == 2:
        i, j = raw
        if type(i) is int and type(j) is int and 0 <= i < k and 0 <= j < k and i != j:
            return i, j
    try:
        return validate_pair(raw, k)
    except ValueError as exc:
        raise PolicyError(f"{where}, arrival {n}, round {s}: {exc}") from exc


def _method(policy: Any, name: str) -> Any:
    """``policy.name``, bound once; a lookup that fails (a missing method, say) fails again
    when called, inside the round, whose error names the arrival and round."""
    try:
        return getattr(policy, name)
    except Exception:
        return lambda *args: getattr(policy, name)(*args)


def _call_policy(
    policy: Any,
    where: str,
    method: str,
    *args: Any,
    arrival: int | None = None,
    rnd: int | None = None,
) -> Any:
    """``policy.method(*args)``; any exception (``sys.exit`` too) becomes a `PolicyError`
    naming ``where`` (policy, world, seed), the arrival and round, and the method."""
    try:
        return getattr(policy, method)(*args)
    except PolicyError:
        raise
    except (Exception, SystemExit) as exc:  # a policy must not end the whole run
        raise _policy_failure(where, method, exc, arrival, rnd) from exc


def _policy_failure(
    where: str, method: str, exc: BaseException, arrival: int | None, rnd: int | None
) -> PolicyError:
    """The error for a policy method that raised ``exc`` (or called ``sys.exit``)."""
    at = "" if arrival is None else f", arrival {arrival}"
    at += "" if rnd is None else f", round {rnd}"
    what = (
        f"called sys.exit({exc.code})"
        if isinstance(exc, SystemExit)
        else f"raised {type(exc).__name__}: {exc}"
    )
    return PolicyError(f"{where}{at}: {method}() {what}")


def summarize(world: World, first: np.ndarray, second: np.ndarray) -> dict[str, Any]:
    """Regret, floor, exact random regret, excess and score of shown pairs (each N x S)."""
    regret = pair_regret(world.U, first, second)
    floor = floor_regret(world.U)
    rand = random_regret(world.U)
    if not float(rand.sum()) > float(floor.sum()):
        raise WorldFormatError(
            f"world {world.name}, seed {world.seed}: random pairs do no worse than the floor "
            "(every persona is equally good in every round), so no score is defined; the "
            "world's utilities carry no preference to learn"
        )
    return score_fields(float(regret.sum()), float(floor.sum()), float(rand.sum()), regret - floor)


def policy_rng(seed: int, canonical: str) -> np.random.Generator:
    """The generator a policy receives in ``reset`` for a seed (depends on its spec only)."""
    return stream(seed, "policy", canonical)


def run_cell(
    world: World,
    spec: str | PolicySpec,
    *,
    keep_trajectory: bool = False,
    on_arrival: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Run the policy named by ``spec`` on ``world`` and return its result row.

    Args:
        world: The world (its ``seed`` is the cell's seed).
        spec: A policy spec (registered id with settings, ``file.py:Class`` or
            ``module:Class``), or one already resolved (`PolicySpec`).
        keep_trajectory: Also return the shown pairs and clicks under ``"trajectory"``.
        on_arrival: Called with each arrival's index as its session ends (progress).

    Returns:
        A JSON-serializable row: kind, world, seed, policy (canonical spec), R, G, R_rand,
        excess, score, excess_per_arrival (N), excess_per_round (S, mean over arrivals),
        wall_time, version.
    """
    resolved = resolve_spec(spec)
    canonical, policy = resolved.canonical, resolved.build()
    start = time.perf_counter()
    rng = policy_rng(world.seed, canonical)
    traj = play(world, policy, rng, label=canonical, on_arrival=on_arrival)
    wall = time.perf_counter() - start
    fields = summarize(world, traj.first, traj.second)
    row = ResultRow.build("policy", world.name, world.seed, canonical, fields, wall).to_json()
    if world.ask_budget:
        row["asked"] = len(traj.asked)  # questions spent, for the priced score
    if keep_trajectory:
        row["trajectory"] = traj
    return row
