"""PrefDisco metrics as pure functions: PrefAlign, NormAlign (with bootstrap), recall, trends.

* `pref_align`: ``PrefAlign(r, P) = Σ_j w_j g_j(r, v_j)`` with judge scores
  ``g_j ∈ {1..5}`` and weights summing to 1; a missing score is an error, never a 1.
* `norm_align`: ``NormAlign = 100 (disc - base) / (oracle - base)`` for PrefAlign values
  (or their means over a group). Undefined (None) when the oracle does not beat the baseline by
  at least ``min_gap``: a ratio over a near-zero gap is noise, and a negative gap would flip
  its sign.
* `norm_align_ci`: NormAlign of group means with a paired percentile bootstrap over
  instances (each instance keeps its three conditions together). Replicates whose gap falls
  under ``min_gap`` are dropped and counted; the interval is reported only when at least
  ``min_valid`` of them are usable.
* `discovery_recall`: share of the hidden attributes the model asked about.
* `trend`: Pearson r, least-squares slope and a two-sided p-value (questions asked vs
  alignment gain).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from prefduel.core.rng import stream
from prefduel.prefdisco.errors import ScoringError

SCORE_RANGE = (1, 5)
DEFAULT_MIN_GAP = 0.1


def pref_align(scores: Mapping[str, int | None], weights: Mapping[str, float]) -> float:
    """``Σ_j w_j score_j`` over the attributes of a profile.

    Args:
        scores: Attribute id -> judge score 1-5 (None: missing).
        weights: Attribute id -> weight; must sum to 1 (to 1e-6).

    Returns:
        PrefAlign in [1, 5].

    Raises:
        ScoringError: A weighted attribute has no score, a score is not an integer 1-5, or the
            weights do not sum to 1.
    """
    if not weights:
        raise ScoringError("pref_align: no weights")
    total = math.fsum(weights.values())
    if abs(total - 1.0) > 1e-6 or any(not w > 0 for w in weights.values()):
        raise ScoringError(f"pref_align: weights must be > 0 and sum to 1, got sum {total!r}")
    missing = [a for a in weights if scores.get(a) is None]
    if missing:
        raise ScoringError(f"pref_align: no score for {missing} (a missing score is not a 1)")
    bad = {
        a: scores[a]
        for a in weights
        if isinstance(scores[a], bool)
        or not isinstance(scores[a], int)
        or not SCORE_RANGE[0] <= scores[a] <= SCORE_RANGE[1]  # type: ignore[operator]
    }
    if bad:
        raise ScoringError(f"pref_align: scores must be integers 1-5, got {bad}")
    return math.fsum(w * scores[a] for a, w in weights.items())  # type: ignore[operator]


def norm_align(
    discovery: float, baseline: float, oracle: float, *, min_gap: float = DEFAULT_MIN_GAP
) -> float | None:
    """``100 (discovery - baseline) / (oracle - baseline)``, or None if the gap is too small.

    Args:
        discovery: PrefAlign (or mean PrefAlign) of the discovery condition.
        baseline: ... of the baseline condition.
        oracle: ... of the oracle condition.
        min_gap: Smallest ``oracle - baseline`` for which the ratio is defined (> 0).

    Returns:
        NormAlign (0 = baseline, 100 = oracle, negative = worse than baseline), or None when
        ``oracle - baseline < min_gap`` (the oracle does not beat the baseline clearly).

    Raises:
        ValueError: A non-finite input or ``min_gap <= 0``.
    """
    if not min_gap > 0:
        raise ValueError(f"min_gap: expected > 0, got {min_gap!r}")
    for name, x in (("discovery", discovery), ("baseline", baseline), ("oracle", oracle)):
        if not isinstance(x, int | float) or not math.isfinite(x):
            raise ValueError(f"{name}: expected a finite number, got {x!r}")
    gap = oracle - baseline
    if gap < min_gap:
        return None
    return 100.0 * (discovery - baseline) / gap


@dataclass(frozen=True)
class NormAlignSummary:
    """NormAlign of a group of instances, with a bootstrap interval.

    Attributes:
        n: Instances (each with all three conditions scored).
        baseline: Mean PrefAlign, baseline.
        discovery: Mean PrefAlign, discovery.
        oracle: Mean PrefAlign, oracle.
        value: NormAlign of the means (None when guarded).
        lo: Lower end of the interval (None if not available).
        hi: Upper end.
        valid_share: Share of bootstrap replicates with a usable gap.
        reason: Why ``value`` or the interval is missing, if they are.
    """

    n: int
    baseline: float | None
    discovery: float | None
    oracle: float | None
    value: float | None
    lo: float | None
    hi: float | None
    valid_share: float
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready ``dict``."""
        return dict(self.__dict__)


def norm_align_ci(
    discovery: Sequence[float],
    baseline: Sequence[float],
    oracle: Sequence[float],
    *,
    min_gap: float = DEFAULT_MIN_GAP,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int = 0,
    label: str = "",
    min_valid: float = 0.9,
) -> NormAlignSummary:
    """NormAlign of the group means with a paired percentile bootstrap.

    Args:
        discovery: PrefAlign per instance, discovery (length n).
        baseline: ... baseline (same instances, same order).
        oracle: ... oracle.
        min_gap: See `norm_align`.
        n_boot: Bootstrap replicates (0: no interval).
        level: Interval coverage.
        seed: Root seed; the resampling stream is ``stream(seed, "bootstrap", label)``.
        label: Names the group (a different stream per group).
        min_valid: Smallest share of usable replicates for an interval to be reported.

    Returns:
        The summary; an empty group gives ``n = 0`` and no value.

    Raises:
        ValueError: Lengths differ, a value is not finite, or bad settings.
    """
    d, b, o = (np.asarray(x, dtype=float) for x in (discovery, baseline, oracle))
    if not d.shape == b.shape == o.shape or d.ndim != 1:
        raise ValueError(
            f"discovery, baseline and oracle must be 1-d of equal length, got "
            f"{d.shape}, {b.shape}, {o.shape}"
        )
    if not (np.isfinite(d).all() and np.isfinite(b).all() and np.isfinite(o).all()):
        raise ValueError("PrefAlign values must be finite (drop unscored instances first)")
    if not 0 < level < 1 or isinstance(n_boot, bool) or n_boot < 0 or not min_gap > 0:
        raise ValueError(f"bad settings: level={level}, n_boot={n_boot}, min_gap={min_gap}")
    return _norm_align_ci(d, b, o, min_gap, n_boot, level, seed, label, min_valid)


def _norm_align_ci(
    d: np.ndarray,
    b: np.ndarray,
    o: np.ndarray,
    min_gap: float,
    n_boot: int,
    level: float,
    seed: int,
    label: str,
    min_valid: float,
) -> NormAlignSummary:
    n = len(d)
    if n == 0:
        return NormAlignSummary(0, None, None, None, None, None, None, 0.0, "no instances")
    md, mb, mo = float(d.mean()), float(b.mean()), float(o.mean())
    value = norm_align(md, mb, mo, min_gap=min_gap)
    reason = None
    if value is None:
        reason = f"oracle - baseline = {mo - mb:.3f} < min_gap {min_gap:g}"
    if n_boot == 0 or n < 2:
        why = reason or ("a single instance" if n < 2 else "no bootstrap")
        return NormAlignSummary(n, mb, md, mo, value, None, None, 0.0, why)
    rng = stream(seed, "bootstrap", label)
    idx = rng.integers(0, n, size=(n_boot, n))
    bd, bb, bo = d[idx].mean(axis=1), b[idx].mean(axis=1), o[idx].mean(axis=1)
    gap = bo - bb
    ok = gap >= min_gap
    valid = float(ok.mean())
    lo = hi = None
    if valid >= min_valid and value is not None:
        ratios = 100.0 * (bd[ok] - bb[ok]) / gap[ok]
        alpha = (1 - level) / 2
        lo, hi = (float(x) for x in np.quantile(ratios, [alpha, 1 - alpha]))
    elif value is not None:
        reason = f"only {valid:.0%} of bootstrap replicates have oracle - baseline >= {min_gap:g}"
    return NormAlignSummary(n, mb, md, mo, value, lo, hi, valid, reason)


def discovery_recall(hidden: Sequence[str], asked: Sequence[str]) -> float:
    """Share of the hidden attributes the model asked about (0 if it asked about none).

    Raises:
        ValueError: ``hidden`` is empty.
    """
    hidden_set = set(hidden)
    if not hidden_set:
        raise ValueError("discovery_recall: the profile has no attributes")
    return len(hidden_set & set(asked)) / len(hidden_set)


@dataclass(frozen=True)
class Trend:
    """A linear trend of y on x.

    Attributes:
        n: Points.
        r: Pearson correlation (None if x or y is constant or n < 3).
        slope: Least-squares slope of y on x (None if x is constant).
        p: Two-sided p-value of r (None when r is).
    """

    n: int
    r: float | None
    slope: float | None
    p: float | None

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready ``dict``."""
        return dict(self.__dict__)


def trend(x: Sequence[float], y: Sequence[float]) -> Trend:
    """Pearson r, slope and p-value of ``y`` against ``x`` (guards for constant inputs)."""
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if xs.shape != ys.shape:
        raise ValueError(f"x and y must have equal length, got {xs.shape} and {ys.shape}")
    n = len(xs)
    if n < 2 or np.ptp(xs) == 0:
        return Trend(n, None, None, None)
    slope = float(np.polyfit(xs, ys, 1)[0])
    if n < 3 or np.ptp(ys) == 0:
        return Trend(n, None, slope, None)
    result = stats.pearsonr(xs, ys)
    return Trend(n, float(result.statistic), slope, float(result.pvalue))


def mean_se(values: Sequence[float]) -> tuple[float | None, float | None]:
    """Mean and standard error (None for no values; s.e. None for one value)."""
    xs = np.asarray([v for v in values if v is not None], dtype=float)
    if len(xs) == 0:
        return None, None
    if len(xs) == 1:
        return float(xs[0]), None
    return float(xs.mean()), float(xs.std(ddof=1) / math.sqrt(len(xs)))
