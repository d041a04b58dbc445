"""What asking is worth: the numbers of the ask tracks, from result rows.

A results file may hold one world on several ask tracks: ``dev`` (B = 0, the benchmark
without questions), ``dev+ask1``, ``dev+ask2``, ... (`prefduel.worlds.spec.split_ask_track`).
A row of a track records ``asked``, the questions its policy spent over all arrivals. From the
rows alone (pure functions, no world is built):

* `budget_curves`: each policy's score against the budget B, mean ± s.e. over seeds, with the
  questions it asked per arrival;
* `clicks_equivalent`: how many clicks of the policy's own within-session learning curve one
  question is worth (`ClicksEquivalent` gives the exact definition and when it is undefined);
* `priced_scores`: the score minus a price ``lam`` per question, in units of one round of
  uniformly random pairs (`price_unit`), over ``lam`` in ``[0, lam_max]``, and the break-even
  price above which asking no longer pays.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from prefduel.core.errors import SpecError
from prefduel.runner.rows import curve_problem
from prefduel.worlds.spec import split_ask_track

#: Largest price per question the priced-score curves go to, in rounds of random pairs.
LAM_MAX = 2.0
#: Prices per question of the priced-score tables (the figures draw the whole curve).
LAM_TABLE = (0.5, 1.0, 2.0)


def track_of(world: str) -> tuple[str, int]:
    """``(base world, budget)`` of a row's world label: ``("dev", 2)`` for ``dev+ask2``,
    ``(world, 0)`` for a world without a track (or a label that does not parse as one)."""
    try:
        return split_ask_track(world)
    except SpecError:
        return world, 0


def order_worlds(worlds: Iterable[str]) -> list[str]:
    """Worlds in order of first appearance, the tracks of one world together by budget.

    ``[dev+ask2, ctl, dev, dev+ask1]`` -> ``[dev, dev+ask1, dev+ask2, ctl]``.
    """
    worlds = list(dict.fromkeys(worlds))
    first: dict[str, int] = {}
    for index, world in enumerate(worlds):
        first.setdefault(track_of(world)[0], index)
    return sorted(worlds, key=lambda w: (first[track_of(w)[0]], track_of(w)[1], w))


def asked_per_arrival(row: dict[str, Any]) -> float | None:
    """Questions the row's policy asked per arrival: ``asked`` over the arrivals; 0 for a row
    of a world without a track; None when the row cannot say (no ``asked``, or no arrivals)."""
    if "asked" not in row:
        return 0.0 if track_of(str(row.get("world", "")))[1] == 0 else None
    arrivals = row.get("excess_per_arrival")
    if not isinstance(arrivals, list) or not arrivals:
        return None
    return float(row["asked"]) / len(arrivals)


def price_unit(rounds: int) -> float:
    """Score points of one round of uniformly random pairs: ``100 / S``.

    The score is ``100 (R_rand - R) / (R_rand - G)``; one round of a session whose excess
    over the floor is that of random pairs (the world's average round) costs ``100 / (N S)``
    points per arrival it happens to, so one such round for every arrival costs ``100 / S``.
    A price ``lam`` per question asked, with ``q`` questions per arrival, is then
    ``lam * q * 100 / S`` score points.
    """
    return 100.0 / rounds


def _mean_se(values: Sequence[float]) -> tuple[float, float | None]:
    arr = np.asarray(values, dtype=float)
    se = float(arr.std(ddof=1) / np.sqrt(arr.size)) if arr.size > 1 else None
    return float(arr.mean()), se


def _asking_policies(rows: Sequence[dict[str, Any]]) -> set[tuple[str, str]]:
    """``(base world, policy)`` pairs whose policy asked at least one question on a track."""
    return {
        (track_of(r["world"])[0], r["policy"])
        for r in rows
        if r.get("asked") and not r.get("undefined")
    }


def _cells(rows: Sequence[dict[str, Any]]) -> dict[tuple[str, str, int], dict[int, dict]]:
    """``{(base, policy, budget): {seed: row}}`` of the policies that ask, on worlds that
    have a track; rows marked ``undefined`` are left out."""
    asking = _asking_policies(rows)
    cells: dict[tuple[str, str, int], dict[int, dict]] = defaultdict(dict)
    for row in rows:
        base, budget = track_of(row["world"])
        if (base, row["policy"]) in asking and not row.get("undefined"):
            cells[(base, row["policy"], budget)][int(row["seed"])] = row
    return cells


def never_asked(rows: Sequence[dict[str, Any]]) -> dict[str, list[str]]:
    """``{base world: policies}`` of the policies that ran on a track but asked nothing."""
    asking = _asking_policies(rows)
    out: dict[str, set[str]] = defaultdict(set)
    for row in rows:
        base, budget = track_of(row["world"])
        if budget and row.get("kind") == "policy" and (base, row["policy"]) not in asking:
            out[base].add(row["policy"])
    return {base: sorted(names) for base, names in out.items()}


def budget_curves(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Score against the ask budget of every policy that asked a question on some track.

    Args:
        rows: Result rows (any worlds; those without a track in the file are left out).

    Returns:
        Entries ``{world (the base world), track (the row's world), policy, budget, n, seeds,
        score_mean, score_se, asked_mean, asked_se}`` (``*_se`` None for one seed;
        ``asked_*`` questions per arrival, None when a row cannot say), ordered by world,
        then policy, then budget. The plain world is budget 0.
    """
    out = []
    for (base, policy, budget), by_seed in _cells(rows).items():
        seeds = sorted(by_seed)
        scores = [float(by_seed[s]["score"]) for s in seeds]
        asked = [asked_per_arrival(by_seed[s]) for s in seeds]
        mean, se = _mean_se(scores)
        known = [a for a in asked if a is not None]
        asked_mean, asked_se = _mean_se(known) if known else (None, None)
        out.append(
            {
                "world": base,
                "track": by_seed[seeds[0]]["world"],
                "policy": policy,
                "budget": budget,
                "n": len(seeds),
                "seeds": seeds,
                "score_mean": mean,
                "score_se": se,
                "asked_mean": asked_mean,
                "asked_se": asked_se,
            }
        )
    order = _base_order(rows)
    return sorted(out, key=lambda e: (order[e["world"]], e["policy"], e["budget"]))


def _base_order(rows: Sequence[dict[str, Any]]) -> dict[str, int]:
    """``{base world: rank}`` in order of first appearance of any of its tracks."""
    bases = dict.fromkeys(track_of(r["world"])[0] for r in rows)
    return {base: i for i, base in enumerate(bases)}


def decreasing_fit(values: Sequence[float]) -> np.ndarray:
    """The non-increasing sequence closest to ``values`` in least squares (pool adjacent
    violators): a learning curve without the ups of noise."""
    blocks: list[list[float]] = []  # [sum, count]
    for v in np.asarray(values, dtype=float):
        blocks.append([float(v), 1.0])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] < blocks[-1][0] / blocks[-1][1]:
            total, count = blocks.pop()
            blocks[-1][0] += total
            blocks[-1][1] += count
    return np.concatenate([np.full(int(c), s / c) for s, c in blocks])


def first_round(fit: np.ndarray, level: float) -> float | None:
    """The first round (1-based, linear between rounds) at which ``fit`` (non-increasing) is
    at or below ``level``; None when it never is."""
    below = np.nonzero(fit <= level + 1e-12)[0]
    if below.size == 0:
        return None
    t = int(below[0])
    if t == 0:
        return 1.0
    drop = fit[t - 1] - fit[t]
    return t + float((fit[t - 1] - level) / drop)


@dataclass(frozen=True)
class ClicksEquivalent:
    """How many clicks one question is worth to a policy, read from its per-round curves.

    With ``c_0`` and ``c_B`` the policy's mean excess regret per round (over arrivals, then
    over the seeds both tracks have) without questions and with budget B, and ``f_0``,
    ``f_B`` their non-increasing least-squares fits (`decreasing_fit`): the level is
    ``L = f_0(S)``, what clicks alone reach by the last round S; ``r(f)`` is the first round
    (linear between rounds) at which ``f <= L``. Then ``rounds_saved = r(f_0) - r(f_B)`` and
    ``per_question = rounds_saved / q``, with ``q`` the questions the policy asked per arrival
    on the track (B when it spends its budget): one question is worth that many clicks.

    Attributes:
        world: Base world.
        policy: Policy.
        budget: B.
        seeds: Seeds both tracks have (with usable curves).
        asked: ``q``, questions per arrival (mean over those seeds).
        level: ``L``.
        rounds_saved: ``r(f_0) - r(f_B)`` (negative: asking made it slower), or None.
        per_question: ``rounds_saved / q``, or None.
        at_least: True when ``f_B`` is already at ``L`` in round 1, so the rounds saved are a
            lower bound (the curve cannot say how much earlier it got there).
        undefined: Why there is no value (no B = 0 rows, no shared seeds, no question asked,
            a flat B = 0 curve, or ``f_B`` never reaching ``L``), else None.
    """

    world: str
    policy: str
    budget: int
    seeds: int
    asked: float | None
    level: float | None
    rounds_saved: float | None
    per_question: float | None
    at_least: bool = False
    undefined: str | None = None


def clicks_equivalent(rows: Sequence[dict[str, Any]]) -> list[ClicksEquivalent]:
    """`ClicksEquivalent` of every asking policy on every track B > 0 of every world."""
    cells = _cells(rows)
    out = []
    for (base, policy, budget), by_seed in cells.items():
        if budget:
            out.append(_equivalent(base, policy, budget, by_seed, cells.get((base, policy, 0))))
    order = _base_order(rows)
    return sorted(out, key=lambda e: (order[e.world], e.policy, e.budget))


def _equivalent(
    base: str, policy: str, budget: int, track: dict[int, dict], plain: dict[int, dict] | None
) -> ClicksEquivalent:
    def undefined(why: str, seeds: int = 0, asked: float | None = None) -> ClicksEquivalent:
        return ClicksEquivalent(base, policy, budget, seeds, asked, None, None, None, False, why)

    if not plain:
        return undefined(f"no rows of {policy} on {base} without questions (B = 0)")
    usable = [
        s
        for s in sorted(set(track) & set(plain))
        if curve_problem(track[s]) is None and curve_problem(plain[s]) is None
    ]
    if not usable:
        return undefined("no seed with usable per-round curves on both tracks")
    asked = [a for s in usable if (a := asked_per_arrival(track[s])) is not None]
    q = float(np.mean(asked)) if asked else None
    if not q:
        return undefined("it asked no question on this track", len(usable), q)
    f_0 = decreasing_fit(np.mean([plain[s]["excess_per_round"] for s in usable], axis=0))
    f_b = decreasing_fit(np.mean([track[s]["excess_per_round"] for s in usable], axis=0))
    level = float(f_0[-1])
    if f_0[0] <= level + 1e-12:
        why = "its per-round curve without questions does not fall (clicks teach it nothing)"
        return undefined(why, len(usable), q)
    r_b = first_round(f_b, level)
    if r_b is None:
        why = "with questions it does not reach, within a session, the level clicks alone reach"
        return undefined(why, len(usable), q)
    r_0 = first_round(f_0, level)
    assert r_0 is not None  # f_0 reaches its own last value
    saved = r_0 - r_b
    return ClicksEquivalent(
        base, policy, budget, len(usable), q, level, saved, saved / q, at_least=r_b == 1.0
    )


def priced_scores(
    rows: Sequence[dict[str, Any]], lam_max: float = LAM_MAX, points: int = 41
) -> list[dict[str, Any]]:
    """Score minus a price per question asked, over prices ``lam`` in ``[0, lam_max]``.

    Per seed, ``priced = score - lam * q * price_unit(S)``, with ``q`` the questions asked per
    arrival and ``S`` the rounds of a session: a question priced at ``lam = 1`` costs as much
    as one round of uniformly random pairs. Asking is never free by construction: at any
    ``lam > 0`` a question has to buy more than it costs.

    Returns:
        Entries ``{world, track, policy, budget, n, scores, asked (per seed), asked_mean,
        unit, break_even, lam (list), mean (list), se (list or None)}`` of every asking
        policy on every budget
        (including B = 0, flat); ``break_even`` is the price at which the mean priced score
        falls to the policy's mean score without questions (None without B = 0 rows or when
        it asked nothing; 0.0 when asking did not raise the score).
    """
    lams = np.linspace(0.0, lam_max, points)
    cells = _cells(rows)
    plain_mean = {
        (base, policy): float(np.mean([r["score"] for r in by_seed.values()]))
        for (base, policy, budget), by_seed in cells.items()
        if budget == 0
    }
    out = []
    for curve in budget_curves(rows):
        entry = _priced(curve, cells[(curve["world"], curve["policy"], curve["budget"])])
        if entry is None:
            continue
        base_score = plain_mean.get((curve["world"], curve["policy"]))
        if base_score is not None and entry["asked_mean"] > 0:
            gain = float(np.mean(entry["scores"])) - base_score
            entry["break_even"] = max(gain, 0.0) / (entry["asked_mean"] * entry["unit"])
        entry["lam"] = lams.tolist()
        entry["mean"], entry["se"] = zip(*(priced_at(entry, lam) for lam in lams), strict=True)
        entry["se"] = None if entry["n"] < 2 else list(entry["se"])
        entry["mean"] = list(entry["mean"])
        out.append(entry)
    return out


def _priced(curve: dict[str, Any], by_seed: dict[int, dict]) -> dict[str, Any] | None:
    """The seeds' scores and questions per arrival of one `budget_curves` entry, or None
    when no seed says how many questions it asked or how many rounds a session has."""
    seeds = [s for s in sorted(by_seed) if asked_per_arrival(by_seed[s]) is not None]
    rounds = len(by_seed[seeds[0]].get("excess_per_round") or []) if seeds else 0
    if not rounds:
        return None
    asked = [float(asked_per_arrival(by_seed[s]) or 0.0) for s in seeds]
    return {key: curve[key] for key in ("world", "track", "policy", "budget")} | {
        "n": len(seeds),
        "scores": [float(by_seed[s]["score"]) for s in seeds],
        "asked": asked,
        "asked_mean": float(np.mean(asked)),
        "unit": price_unit(rounds),
        "break_even": None,
    }


def priced_at(entry: dict[str, Any], lam: float) -> tuple[float, float | None]:
    """Mean and s.e. over seeds of the priced score of a `priced_scores` entry at ``lam``."""
    unit = entry["unit"]
    values = [s - lam * q * unit for s, q in zip(entry["scores"], entry["asked"], strict=True)]
    return _mean_se(values)
