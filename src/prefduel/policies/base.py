"""The Policy protocol (compatible with the TutorDuel paper's runner) and its helpers.

A policy is any object with these five methods and a ``name``::

    class Policy:
        name = "policy"
        def reset(self, rng, context): ...   # once per run; context: K, d, S, N, beta, b
        def start_student(self): ...         # a new user arrives
        def select(self, Phi) -> tuple[int, int]:  # Phi: K x d features; two distinct indices
        def update(self, outcome): ...       # 1 if the FIRST index won the click, else 0
        def end_student(self): ...           # the user leaves; the session joins the log

The runner never shows a policy utilities, profiles or click probabilities.
"""

from __future__ import annotations

import functools
import numbers
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Protocol, runtime_checkable

import numpy as np
from pydantic import BaseModel, Field, create_model

from prefduel.core.errors import PolicyError
from prefduel.core.rng import stream
from prefduel.core.schema import FORBID_EXTRA, Integer, Real, validate

#: Logits per unit of utility of the benchmark's clicks (the paper's common scale of 8 logits
#: that maps Bradley-Terry scores to utilities in [0, 1]); policies read it as ``beta``.
CLICK_BETA = 8.0
#: Keys of the ``context`` dict given to `Policy.reset`.
CONTEXT_KEYS = ("K", "d", "S", "N", "beta", "b")


@runtime_checkable
class PolicyProtocol(Protocol):
    """Structural type of a policy (see the module docstring)."""

    name: str

    def reset(self, rng: np.random.Generator, context: dict[str, Any]) -> None: ...
    def start_student(self) -> None: ...
    def select(self, Phi: np.ndarray) -> tuple[int, int]: ...
    def update(self, outcome: int) -> None: ...
    def end_student(self) -> None: ...


#: Setting types of policies (with `prefduel.core.schema`'s, for `Policy.SETTINGS`).
Positive = Annotated[Real, Field(gt=0)]
NonNegative = Annotated[Real, Field(ge=0)]
Count = Annotated[Integer, Field(ge=1)]
NonNegativeCount = Annotated[Integer, Field(ge=0)]


class Policy:
    """Convenience base class: stores ``rng`` and ``context`` and does nothing else.

    Subclasses override `select` and usually `update`. Constructors only store
    settings; `reset` builds all state, so one instance can be run many times.

    A policy's settings are declared once, in its class's `SETTINGS` (name -> type with its
    bounds, in `prefduel.core.schema`'s types; scikit-learn's parameter constraints are the
    model), and stored by `configure`, which checks them through the schema layer. A subclass
    adds its own settings to those of its bases.
    """

    name = "policy"
    #: Setting name -> its type and bounds (e.g. ``Annotated[Real, Field(gt=0)]``).
    SETTINGS: ClassVar[dict[str, Any]] = {}

    def configure(self, **values: Any) -> None:
        """Check settings against the class's declarations and store them as attributes.

        Raises:
            ValueError: naming the policy, the setting, what was expected and what arrived
                (the policy loader turns it into a `prefduel.core.errors.SpecError`).
        """
        checked = check_settings(type(self), values)
        for key, value in checked.items():
            setattr(self, key, value)

    def reset(self, rng: np.random.Generator, context: dict[str, Any]) -> None:
        """Start a run: ``context`` has K (personas), d (features), S (rounds per user),
        N (arrivals), beta (logits per unit of utility) and b (= S, questions per session)."""
        self.rng = rng
        self.context = dict(context)
        self.K, self.d = int(context["K"]), int(context["d"])

    def start_student(self) -> None:
        """A new user arrives."""

    def select(self, Phi: np.ndarray) -> tuple[int, int]:
        """Return two distinct persona indices for features ``Phi`` (K x d)."""
        raise NotImplementedError(f"{type(self).__name__}.select is not implemented")

    def update(self, outcome: int) -> None:
        """``outcome`` is 1 if the first index of the last pair won the click, else 0."""

    def end_student(self) -> None:
        """The user leaves."""


def declared_settings(cls: type) -> dict[str, Any]:
    """Every setting a policy class declares, its bases' first (`Policy.SETTINGS`)."""
    merged: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        merged.update(vars(klass).get("SETTINGS", {}))
    return merged


@functools.cache
def _settings_model(cls: type, names: tuple[str, ...]) -> type[BaseModel]:
    declared = declared_settings(cls)
    unknown = [n for n in names if n not in declared]
    if unknown:
        raise TypeError(f"{cls.__name__}: settings {unknown} are not declared in SETTINGS")
    fields = {n: (declared[n], ...) for n in names}
    return create_model(getattr(cls, "name", cls.__name__), __config__=FORBID_EXTRA, **fields)


def check_settings(cls: type, values: dict[str, Any]) -> dict[str, Any]:
    """``values`` checked against ``cls``'s declared settings (`declared_settings`).

    Raises:
        ValueError: ``NAME: SETTING: expected ..., got ...``.
    """
    model = _settings_model(cls, tuple(values))
    checked = validate(model, values, error=ValueError, source=getattr(cls, "name", ""))
    return {name: getattr(checked, name) for name in values}


def validate_pair(pair: Any, k: int) -> tuple[int, int]:
    """Check a policy's answer and return it as two Python ints.

    Raises:
        ValueError: saying what was expected and what arrived.
    """
    try:
        items = tuple(pair)
    except TypeError:
        raise ValueError(f"select() must return two persona indices, got {pair!r}") from None
    if len(items) != 2:
        raise ValueError(f"select() must return exactly two indices, got {len(items)}: {pair!r}")
    out = []
    for item in items:
        if isinstance(item, bool | np.bool_) or not isinstance(item, numbers.Integral):
            raise ValueError(
                f"select() must return integers, got {type(item).__name__} {item!r} in {pair!r}"
            )
        if not 0 <= int(item) < k:
            raise ValueError(f"select() returned index {int(item)} outside 0..{k - 1} in {pair!r}")
        out.append(int(item))
    if out[0] == out[1]:
        raise ValueError(f"select() must return two distinct indices, got {out[0]} twice")
    return out[0], out[1]


def policy_context(n: int, s: int, k: int, d: int) -> dict[str, Any]:
    """The ``context`` dict the runner gives to `Policy.reset`."""
    return {"K": k, "d": d, "S": s, "N": n, "beta": CLICK_BETA, "b": s}


class NondeterministicPolicyError(PolicyError):
    """Two runs of a policy with one seed chose differently (`check_policy`)."""


def check_policy(
    make_policy: Any,
    *,
    n_students: int = 6,
    rounds: int = 24,
    k: int = 6,
    d: int = 7,
    seed: int = 0,
) -> None:
    """Run a policy through the lifecycle contract on a small synthetic problem.

    Checks that the five methods exist, that ``select`` returns two distinct valid indices on
    every round, that ``update`` accepts both outcomes, and that two runs with the same seed
    (after ``reset``, on a fresh instance and on the reused one) make identical choices.

    Args:
        make_policy: A zero-argument callable returning a new policy (or a policy instance,
            which is then reused for both runs).
        n_students: Students (sessions) in the synthetic problem.
        rounds: Rounds per student.
        k: Personas (arms) per round.
        d: Feature dimension.
        seed: Seed of the problem and of the policy's generator.

    Raises:
        PolicyError: describing the first violation, with student and round
            (`NondeterministicPolicyError` when two runs with one seed differ).
    """
    fresh = _instance_maker(make_policy)
    policy = fresh()
    label = getattr(policy, "name", type(policy).__name__)
    _check_methods(policy, label)
    problem = _CheckProblem.draw(n_students, rounds, k, d, seed)
    first = _run_contract(policy, label, problem)
    second = _run_contract(fresh(), label, problem)
    _check_same_choices(first, second, label, seed, rounds)
    third = _run_contract(policy, label, problem)  # reusing an instance
    _check_reset_rebuilds(first, third, label)
    if callable(getattr(policy, "ask", None)):  # the ask track's contract too
        if not callable(getattr(policy, "answer", None)):
            raise PolicyError(f"policy {label!r} has ask() but no callable answer()")
        asked = _run_contract(fresh(), label, problem, budget=CHECK_ASK_BUDGET)
        again = _run_contract(fresh(), label, problem, budget=CHECK_ASK_BUDGET)
        if asked != again:
            raise NondeterministicPolicyError(
                f"policy {label!r} asks or chooses differently in two runs with seed {seed} on "
                "an ask track; draw randomness only from the rng given to reset()"
            )


def _instance_maker(make_policy: Any) -> Callable[[], Any]:
    """A callable giving a new policy (a class or factory) or the same instance each time."""

    def fresh() -> Any:
        return (
            make_policy()
            if isinstance(make_policy, type)
            or (callable(make_policy) and not hasattr(make_policy, "select"))
            else make_policy
        )

    return fresh


def _check_methods(policy: Any, label: str) -> None:
    """The five lifecycle methods exist and are callable."""
    for method in ("reset", "start_student", "select", "update", "end_student"):
        if not callable(getattr(policy, method, None)):
            raise PolicyError(f"policy {label!r} has no callable {method}()")


@dataclass(frozen=True)
class _CheckProblem:
    """The synthetic problem of `check_policy`: ``N`` students x ``S`` rounds x ``K`` arms.

    Attributes:
        phis: ``(N, S, K, d)`` features (persona indicators first when ``d == K + 1``).
        theta: ``(N, d)`` each student's preference.
        clicks_u: ``(N, S)`` uniforms deciding the clicks.
        seed: Seed of the problem and of the policy's generator.
    """

    phis: np.ndarray
    theta: np.ndarray
    clicks_u: np.ndarray
    seed: int

    @classmethod
    def draw(cls, n_students: int, rounds: int, k: int, d: int, seed: int) -> _CheckProblem:
        data_rng = stream(seed, "check_policy", "data")
        phis = data_rng.normal(size=(n_students, rounds, k, d))
        if d == k + 1:  # TutorDuel's layout: persona indicators, then one rater score
            phis[..., :k] = np.eye(k)
        theta = data_rng.normal(size=(n_students, d))
        clicks_u = data_rng.random((n_students, rounds))
        return cls(phis, theta, clicks_u, seed)


def _call(policy: Any, label: str, method: str, *args: Any, at: str = "") -> Any:
    """``policy.method(*args)``, any exception re-raised as a `PolicyError` naming it."""
    try:
        return getattr(policy, method)(*args)
    except (Exception, SystemExit) as exc:  # a policy must not end the checking program
        what = (
            f"called sys.exit({exc.code})"
            if isinstance(exc, SystemExit)
            else f"raised {type(exc).__name__}: {exc}"
        )
        raise PolicyError(f"policy {label!r} {what} in {method}(){at}") from exc


#: Questions per student on the ask track `check_policy` runs a policy with ``ask`` on.
CHECK_ASK_BUDGET = 2


def _run_contract(
    policy: Any, label: str, problem: _CheckProblem, budget: int = 0
) -> list[tuple[int, int]]:
    """One run of the whole lifecycle on ``problem``; the ``N x S`` pairs chosen, in order
    (on an ask track, ``budget > 0``, the questions asked too, as ``(-1, question)``)."""
    n_students, rounds, k, d = problem.phis.shape
    choices: list[tuple[int, int]] = []
    context = policy_context(n_students, rounds, k, d)
    if budget:
        context.update(ask_budget=budget, questions=_check_questions(k))
    _call(policy, label, "reset", stream(problem.seed, "check_policy", "policy"), context)
    for n in range(n_students):
        _call(policy, label, "start_student", at=f" at student {n}")
        remaining = budget
        for s in range(rounds):
            at = f" at student {n}, round {s}"
            while remaining:
                question = _call(policy, label, "ask", at=at)
                if question is None:
                    break
                q = _check_question(question, k * (k - 1) // 2, label, at)
                a, b = _pair_of(q, k)
                util = problem.phis[n, 0] @ problem.theta[n]
                _call(policy, label, "answer", q, int(util[a] > util[b]), at=at)
                choices.append((-1, q))
                remaining -= 1
            phi = problem.phis[n, s].copy()
            phi.setflags(write=False)
            try:
                i, j = validate_pair(_call(policy, label, "select", phi, at=at), k)
            except ValueError as exc:
                raise PolicyError(f"policy {label!r}, student {n}, round {s}: {exc}") from exc
            util = phi @ problem.theta[n]
            outcome = int(problem.clicks_u[n, s] < 1.0 / (1.0 + np.exp(-(util[i] - util[j]))))
            _call(policy, label, "update", outcome, at=at)
            choices.append((i, j))
        _call(policy, label, "end_student", at=f" at student {n}")
    return choices


def _check_questions(k: int) -> list[dict[str, Any]]:
    """The check's question bank: an A-or-B question per persona pair."""
    return [
        {"id": f"pair:{a}-{b}", "kind": "pair", "text": f"{a} or {b}?", "pair": [a, b]}
        for a in range(k)
        for b in range(a + 1, k)
    ]


def _pair_of(q: int, k: int) -> tuple[int, int]:
    pairs = [(a, b) for a in range(k) for b in range(a + 1, k)]
    return pairs[q]


def _check_question(question: Any, count: int, label: str, at: str) -> int:
    """What ``ask()`` returned, checked: None is handled by the caller; else an index."""
    if isinstance(question, bool | np.bool_) or not isinstance(question, numbers.Integral):
        raise PolicyError(
            f"policy {label!r}: ask() must return a question index or None{at}, got {question!r}"
        )
    if not 0 <= int(question) < count:
        raise PolicyError(
            f"policy {label!r}: ask() returned {question}, outside 0..{count - 1}{at}"
        )
    return int(question)


def _check_same_choices(
    first: list[tuple[int, int]], second: list[tuple[int, int]], label: str, seed: int, rounds: int
) -> None:
    """Two fresh runs with one seed choose alike (randomness only from the given rng)."""
    if first != second:
        diff = next(t for t, (a, b) in enumerate(zip(first, second, strict=True)) if a != b)
        raise NondeterministicPolicyError(
            f"policy {label!r} is not deterministic under a seed: two runs with seed {seed} differ "
            f"first at student {diff // rounds}, round {diff % rounds} ({first[diff]} vs "
            f"{second[diff]}); draw randomness only from the rng given to reset()"
        )


def _check_reset_rebuilds(
    first: list[tuple[int, int]], again: list[tuple[int, int]], label: str
) -> None:
    """A run of a reused instance chooses like the first: reset() rebuilt all state."""
    if again != first:
        raise PolicyError(
            f"policy {label!r} gives different choices when reset() is called again on the same "
            "instance; reset() must rebuild all state"
        )
