"""Paired comparisons and learning curves from result rows (pure functions).

Common random numbers make seeds natural pairs: for a seed, two policies saw the same users,
questions and uniform draws, so their difference is measured without the world's noise.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from scipy import stats

from prefduel.core.rng import stream


def _policy_rows(rows: Iterable[dict[str, Any]]) -> dict[tuple[str, str], dict[int, dict]]:
    """Rows by ``(world, policy)`` then seed (references included, keyed by their name)."""
    grouped: dict[tuple[str, str], dict[int, dict]] = defaultdict(dict)
    for row in rows:
        grouped[(row["world"], row["policy"])][int(row["seed"])] = row
    return grouped


def t_interval(values: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """Two-sided Student-t interval of the mean of ``values (n,)``; nan for n < 2."""
    n = values.size
    if n < 2:
        return float("nan"), float("nan")
    half = stats.t.ppf(0.5 + level / 2, n - 1) * values.std(ddof=1) / np.sqrt(n)
    return float(values.mean() - half), float(values.mean() + half)


def bootstrap_interval(
    values: np.ndarray, level: float = 0.95, n_boot: int = 4000, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``values (n,)`` (seeded); nan for n < 2."""
    if values.size < 2:
        return float("nan"), float("nan")
    rng = stream(seed, "stats", "bootstrap")
    means = values[rng.integers(0, values.size, size=(n_boot, values.size))].mean(axis=1)
    lo, hi = np.quantile(means, [0.5 - level / 2, 0.5 + level / 2])
    return float(lo), float(hi)


def paired_gains(
    rows: Iterable[dict[str, Any]], competitor: str = "random", level: float = 0.95
) -> list[dict[str, Any]]:
    """Relative change in excess regret of every policy vs ``competitor``, paired by seed.

    For each world and policy, ``change_s = 100 (excess_policy_s / excess_competitor_s - 1)``
    over the seeds both have; negative means less regret than the competitor.

    Returns:
        Entries ``{world, policy, competitor, n, change_mean, t_lo, t_hi, boot_lo, boot_hi}``
        (percent), for every policy of a world where the competitor has rows.

    Raises:
        ValueError: if the competitor has no rows at all (naming what is there).
    """
    grouped = _policy_rows(rows)
    worlds = {w for w, p in grouped if p == competitor}
    if not worlds:
        known = sorted({p for _, p in grouped})
        raise ValueError(f"competitor {competitor!r} has no rows; policies present: {known}")
    out = []
    for (world, policy), cells in grouped.items():
        if world not in worlds or policy == competitor:
            continue
        base = grouped[(world, competitor)]
        seeds = sorted(set(cells) & set(base))
        if not seeds or any(base[s]["excess"] <= 0 for s in seeds):
            continue
        change = np.array([cells[s]["excess"] / base[s]["excess"] - 1 for s in seeds]) * 100
        t_lo, t_hi = t_interval(change, level)
        b_lo, b_hi = bootstrap_interval(change, level)
        out.append(
            {
                "world": world,
                "policy": policy,
                "competitor": competitor,
                "n": len(seeds),
                "change_mean": float(change.mean()),
                "t_lo": t_lo,
                "t_hi": t_hi,
                "boot_lo": b_lo,
                "boot_hi": b_hi,
            }
        )
    out.sort(key=lambda e: (e["world"], e["change_mean"]))
    return out


def centered_moving_mean(values: np.ndarray, window: int = 25) -> np.ndarray:
    """Centered moving mean along the last axis; windows shrink at the edges.

    Args:
        values: ``(..., N)``.
        window: Window length (odd lengths are centered exactly).

    Returns:
        ``(..., N)``: entry a is the mean of ``values[..., a - window//2 : a + window//2 + 1]``
        clipped to the array.
    """
    n = values.shape[-1]
    half = window // 2
    csum = np.concatenate([np.zeros((*values.shape[:-1], 1)), np.cumsum(values, axis=-1)], -1)
    lo = np.clip(np.arange(n) - half, 0, n)
    hi = np.clip(np.arange(n) + half + 1, 0, n)
    return (csum[..., hi] - csum[..., lo]) / (hi - lo)


def learning_curve(
    rows: Iterable[dict[str, Any]], world: str, policy: str, window: int = 25, level: float = 0.95
) -> dict[str, np.ndarray]:
    """Excess regret per arrival, centered moving means, mean over seeds with a t band.

    Returns:
        ``{"arrival" (N,), "mean" (N,), "lo" (N,), "hi" (N,), "n": seeds}``.

    Raises:
        ValueError: if the world/policy has no rows.
    """
    cells = _policy_rows(rows).get((world, policy))
    if not cells:
        raise ValueError(f"no rows for world {world!r} and policy {policy!r}")
    curves = np.array([cells[s]["excess_per_arrival"] for s in sorted(cells)], dtype=float)
    smooth = centered_moving_mean(curves, window)
    mean = smooth.mean(axis=0)
    if smooth.shape[0] > 1:
        half = stats.t.ppf(0.5 + level / 2, smooth.shape[0] - 1) * smooth.std(axis=0, ddof=1)
        half = half / np.sqrt(smooth.shape[0])
    else:
        half = np.full_like(mean, np.nan)
    return {
        "arrival": np.arange(mean.size),
        "mean": mean,
        "lo": mean - half,
        "hi": mean + half,
        "n": smooth.shape[0],
    }


def round_curve(rows: Sequence[dict[str, Any]], level: float = 0.95) -> dict[str, Any]:
    """Mean excess regret per round over seeds, with a Student-t band.

    Args:
        rows: Rows of one world and policy (one per seed), each with ``excess_per_round (S,)``.
        level: Confidence level of the band.

    Returns:
        ``{"round" (S,) 1-based, "mean" (S,), "lo" (S,), "hi" (S,), "n": seeds}`` (the band is
        nan for a single seed).
    """
    values = np.array([r["excess_per_round"] for r in rows], dtype=float)  # (n, S)
    mean = values.mean(axis=0)
    n = values.shape[0]
    if n > 1:
        half = stats.t.ppf(0.5 + level / 2, n - 1) * values.std(axis=0, ddof=1) / np.sqrt(n)
    else:
        half = np.full_like(mean, np.nan)
    return {
        "round": np.arange(1, mean.size + 1),
        "mean": mean,
        "lo": mean - half,
        "hi": mean + half,
        "n": n,
    }


def profile_breakdown(
    rows: Iterable[dict[str, Any]], world: Any, policy: str
) -> list[dict[str, Any]]:
    """Excess regret per arrival of ``policy``, grouped by the students' hidden profile.

    Args:
        rows: Result rows.
        world: A callable ``seed -> World`` (e.g. ``lambda s: get_world("dev", s)``) giving the
            world of each seed, whose ``students`` carry the ``profile`` of every arrival.
        policy: Canonical policy spec.

    Returns:
        Entries ``{profile, arrivals, excess_mean, excess_se}`` (excess regret per arrival,
        pooled over seeds), worst served first.

    Raises:
        ValueError: if the policy has no rows.
    """
    per_profile: dict[str, list[float]] = defaultdict(list)
    found = False
    for row in rows:
        if row["policy"] != policy or row.get("kind", "policy") != "policy":
            continue
        found = True
        w = world(int(row["seed"]))
        for arrival, excess in enumerate(row["excess_per_arrival"]):
            student = w.students[int(w.student_index[arrival])] if w.students else {}
            per_profile[str(student.get("profile", "unknown"))].append(float(excess))
    if not found:
        raise ValueError(f"no rows for policy {policy!r}")
    out = []
    for profile, values in per_profile.items():
        arr = np.asarray(values)
        se = float(arr.std(ddof=1) / np.sqrt(arr.size)) if arr.size > 1 else float("nan")
        out.append(
            {
                "profile": profile,
                "arrivals": arr.size,
                "excess_mean": float(arr.mean()),
                "excess_se": se,
            }
        )
    out.sort(key=lambda e: -e["excess_mean"])
    return out
