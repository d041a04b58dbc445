"""Predicting a user's model-score vector from their topic and style profile.

Each user ``u`` has features ``x_u = [topic profile; style profile]`` and a score vector
``y_u`` over the ``M`` models (per-user Elo or BT). Features and targets are standardized on the
training fold (targets per model, over the users who saw that model); a scikit-learn MLP is
fitted -- an ensemble of nets with early stopping for Elo, one strongly L2-regularized net for
BT (scikit-learn has no dropout; weight decay plays its part) -- and compared by k-fold
cross-validation with the *global-mean predictor* (the training-fold mean of each model's
score). Errors are mean absolute errors in standardized units over the models each test user
actually evaluated; intervals come from a seeded bootstrap over users.

References:
    Personalized Benchmarking (ACL Findings 2026): 50-MLP ensemble for Elo, one MLP with dropout
    for BT; MAE 0.45 vs 0.69 (Elo) and 0.45 vs 0.51 (BT) for the mean predictor.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from prefduel.core.rng import stream
from prefduel.ranking import _deps
from prefduel.ranking.errors import RankingError

KINDS: tuple[str, ...] = ("ensemble", "single")


@dataclass(frozen=True)
class PredictorSpec:
    """Settings of the MLP predictor (JSON-serializable).

    Attributes:
        kind: ``"ensemble"`` (mean of ``members`` nets, early stopping; the paper's Elo
            predictor) or ``"single"`` (one net with L2 ``alpha_single``; the paper's BT one).
        members: Nets in the ensemble (the paper uses 50).
        hidden: Hidden layer sizes.
        alpha_ensemble: L2 penalty of ensemble members.
        alpha_single: L2 penalty of the single net.
        folds: Cross-validation folds.
        max_iter: Training epochs at most.
    """

    kind: str = "ensemble"
    members: int = 10
    hidden: tuple[int, ...] = (64,)
    alpha_ensemble: float = 1e-3
    alpha_single: float = 1.0
    folds: int = 5
    max_iter: int = 400

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise RankingError(f"predictor kind must be one of {KINDS}, got {self.kind!r}")
        if self.members < 1 or self.folds < 2:
            raise RankingError(
                f"need members >= 1 and folds >= 2, got {self.members} and {self.folds}"
            )


@dataclass(frozen=True)
class Prediction:
    """Cross-validated prediction of ``U`` users' score vectors over ``M`` models.

    Attributes:
        target: What was predicted (e.g. ``"elo"``, ``"bt"``).
        spec: The predictor settings.
        shuffled: Features were permuted across users first (a control without signal).
        mae_model: Mean over users of the per-user MAE of the MLP (standardized units).
        mae_mean: Same for the global-mean predictor.
        ci_model: 95% bootstrap interval of ``mae_model`` (over users).
        ci_mean: 95% bootstrap interval of ``mae_mean``.
        gain: Relative reduction ``1 - mae_model / mae_mean``.
        ci_gain: 95% bootstrap interval of ``gain``.
        p_value: Two-sided paired Wilcoxon p of per-user MAEs (MLP vs mean), or ``None``.
        per_user_model: ``(U,)`` per-user MAE of the MLP.
        per_user_mean: ``(U,)`` per-user MAE of the mean predictor.
        predicted: ``(U, M)`` out-of-fold predictions (standardized).
        actual: ``(U, M)`` standardized targets (NaN where unseen).
    """

    target: str
    spec: PredictorSpec
    shuffled: bool
    mae_model: float
    mae_mean: float
    ci_model: tuple[float, float]
    ci_mean: tuple[float, float]
    gain: float
    ci_gain: tuple[float, float]
    p_value: float | None
    per_user_model: np.ndarray = field(repr=False)
    per_user_mean: np.ndarray = field(repr=False)
    predicted: np.ndarray = field(repr=False)
    actual: np.ndarray = field(repr=False)

    def to_dict(self) -> dict[str, Any]:
        """Summary numbers (no per-user arrays), JSON-serializable."""
        return {
            "target": self.target,
            "predictor": {**self.spec.__dict__, "hidden": list(self.spec.hidden)},
            "shuffled_features": self.shuffled,
            "users": int(self.per_user_model.size),
            "mae_model": self.mae_model,
            "mae_mean_predictor": self.mae_mean,
            "ci_model": list(self.ci_model),
            "ci_mean_predictor": list(self.ci_mean),
            "relative_reduction": self.gain,
            "ci_relative_reduction": list(self.ci_gain),
            "wilcoxon_p": self.p_value,
        }


def predict_scores(
    features: np.ndarray,
    scores: np.ndarray,
    spec: PredictorSpec | None = None,
    *,
    target: str = "scores",
    seed: int = 0,
    shuffle_features: bool = False,
    n_boot: int = 1000,
    on_fit: Callable[[], None] | None = None,
) -> Prediction:
    """Cross-validated MLP prediction of score vectors vs the global-mean predictor.

    Args:
        features: ``(U, F)`` user features (finite).
        scores: ``(U, M)`` user score vectors; NaN marks models a user did not evaluate (they
            are imputed with the training mean for fitting and left out of every error).
        spec: Predictor settings (default: a 10-net ensemble, 5 folds).
        target: Name used in reports.
        seed: Seed of folds, nets, the shuffle and the bootstrap.
        shuffle_features: Permute the feature rows first (a control: no signal left).
        n_boot: Bootstrap replicates of the intervals.
        on_fit: Called after each fitted net (``folds x members`` calls for an ensemble,
            ``folds`` for a single net), so a caller can show progress.

    Returns:
        A `Prediction`.

    Raises:
        RankingError: shapes disagree, non-finite features, or fewer users than folds.
        MissingDependencyError: scikit-learn is not installed.
    """
    spec = spec or PredictorSpec()
    features = np.asarray(features, dtype=float)
    scores = np.asarray(scores, dtype=float)
    _check_inputs(features, scores, spec)
    n_users = features.shape[0]
    rng = stream(seed, "ranking", "predict", target)
    if shuffle_features:
        features = features[rng.permutation(n_users)]
    predicted, actual = _cross_validate(features, scores, spec, rng, on_fit or (lambda: None))
    return _scored(
        predicted, actual, rng, n_boot, target=target, spec=spec, shuffled=shuffle_features
    )


def _scored(
    predicted: np.ndarray,
    actual: np.ndarray,
    rng: np.random.Generator,
    n_boot: int,
    *,
    target: str,
    spec: PredictorSpec,
    shuffled: bool,
) -> Prediction:
    """The `Prediction` of cross-validated ``predicted`` vs ``actual`` score vectors: the MAEs
    of the model and of the mean predictor with bootstrap intervals over users, the relative
    gain and the paired Wilcoxon p (over the users whose two errors differ)."""
    per_model, per_mean = _per_user_errors(predicted, actual)
    bm, bb = _bootstrap_means(per_model, per_mean, rng, n_boot)
    gains = 1.0 - bm / np.maximum(bb, 1e-12)
    diff = per_model - per_mean
    p = float(stats.wilcoxon(diff[diff != 0]).pvalue) if np.count_nonzero(diff) >= 2 else None
    mae_model, mae_mean = float(per_model.mean()), float(per_mean.mean())
    return Prediction(
        target=target,
        spec=spec,
        shuffled=shuffled,
        mae_model=mae_model,
        mae_mean=mae_mean,
        ci_model=_interval(bm),
        ci_mean=_interval(bb),
        gain=1.0 - mae_model / max(mae_mean, 1e-12),
        ci_gain=_interval(gains),
        p_value=p,
        per_user_model=per_model,
        per_user_mean=per_mean,
        predicted=predicted,
        actual=actual,
    )


def prediction_verdict(real: dict[str, Any], control: dict[str, Any] | None) -> dict[str, Any]:
    """Whether the features helped, said plainly.

    The features helped when the relative error reduction's 95% interval lies above 0 (they
    beat the global-mean predictor) and above the interval of the same predictor on shuffled
    features (they beat the control, which has the features' distribution but no link to the
    users); otherwise there is no gain, and the sentence says which comparison failed.

    Args:
        real: `Prediction.to_dict` with the real features.
        control: The same with shuffled features, or ``None`` when no control was run.

    Returns:
        ``{"gain": bool, "text": str}``, the text starting ``features helped:`` or
        ``no gain:`` and giving the reductions with their intervals.
    """
    low, high = real["ci_relative_reduction"]
    beats_mean = low > 0
    beats_control = control is None or low > control["ci_relative_reduction"][1]
    reduction = _percent(real["relative_reduction"], low, high)
    shuffled = "no shuffled control was run"
    if control is not None:
        control_low, control_high = control["ci_relative_reduction"]
        shuffled = "shuffled features: " + _percent(
            control["relative_reduction"], control_low, control_high
        )
    if beats_mean and beats_control:
        text = (
            f"features helped: {100 * real['relative_reduction']:.1f}% lower error than the "
            f"mean predictor, 95% [{100 * low:.1f}, {100 * high:.1f}] ({shuffled})"
        )
    elif not beats_control:
        nor = "" if beats_mean else ", nor the mean predictor"
        text = (
            f"no gain: features did not beat the shuffled control{nor} (error reduction "
            f"{reduction}; {shuffled})"
        )
    else:
        text = (
            f"no gain: features did not beat the mean predictor (error reduction {reduction}; "
            f"{shuffled})"
        )
    return {"gain": beats_mean and beats_control, "text": text}


def _percent(value: float, low: float, high: float) -> str:
    """A relative reduction and its interval as signed percentages, ``+1.0% [-0.5, +2.5]``."""
    return f"{100 * value:+.1f}% [{100 * low:+.1f}, {100 * high:+.1f}]"


def _check_inputs(features: np.ndarray, scores: np.ndarray, spec: PredictorSpec) -> None:
    """Features ``(U, F)`` finite, scores ``(U, M)``, and enough users for the folds."""
    if features.ndim != 2 or scores.ndim != 2 or features.shape[0] != scores.shape[0]:
        raise RankingError(
            f"features (U, F) and scores (U, M) must have the same U, got {features.shape} and "
            f"{scores.shape}"
        )
    if not np.all(np.isfinite(features)):
        raise RankingError("features must be finite (drop users without prompts first)")
    n_users = features.shape[0]
    if n_users < max(spec.folds, 4):
        raise RankingError(f"prediction needs at least {max(spec.folds, 4)} users, got {n_users}")


def _per_user_errors(predicted: np.ndarray, actual: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-user MAE of the MLP and of the mean predictor over the models each user saw.

    Args:
        predicted: ``(U, M)`` out-of-fold predictions (standardized).
        actual: ``(U, M)`` standardized targets, NaN where unseen.

    Returns:
        ``(mlp, mean predictor)``, each ``(U',)`` over the ``U'`` users who saw a model.
    """
    seen = np.isfinite(actual)
    err_model = np.where(seen, np.abs(predicted - actual), 0.0)
    err_mean = np.where(seen, np.abs(actual), 0.0)  # the mean predictor is 0 in z units
    n_seen = np.maximum(seen.sum(axis=1), 1)
    per_model = err_model.sum(axis=1) / n_seen
    per_mean = err_mean.sum(axis=1) / n_seen
    ok = seen.any(axis=1)
    return per_model[ok], per_mean[ok]


def _bootstrap_means(
    per_model: np.ndarray, per_mean: np.ndarray, rng: np.random.Generator, n_boot: int
) -> tuple[np.ndarray, np.ndarray]:
    """Mean MAE of each predictor in ``n_boot`` resamples of the ``(U',)`` users (the same
    resamples for both), each ``(n_boot,)``."""
    boot = rng.integers(0, per_model.size, size=(n_boot, per_model.size))
    return per_model[boot].mean(axis=1), per_mean[boot].mean(axis=1)


def _interval(x: np.ndarray) -> tuple[float, float]:
    lo, hi = np.quantile(x, [0.025, 0.975])
    return float(lo), float(hi)


def _cross_validate(
    x: np.ndarray,
    y: np.ndarray,
    spec: PredictorSpec,
    rng: np.random.Generator,
    on_fit: Callable[[], None],
) -> tuple[np.ndarray, np.ndarray]:
    """Out-of-fold standardized predictions and standardized targets, both ``(U, M)``."""
    model_selection = _deps.require("sklearn.model_selection", "score prediction")
    n_users = x.shape[0]
    folds = model_selection.KFold(
        n_splits=min(spec.folds, n_users), shuffle=True, random_state=int(rng.integers(2**31 - 1))
    )
    predicted = np.zeros_like(y)
    actual = np.full_like(y, np.nan)
    for train, test in folds.split(x):
        x_mu, x_sd = x[train].mean(axis=0), x[train].std(axis=0)
        x_sd = np.where(x_sd > 0, x_sd, 1.0)
        xt, xv = (x[train] - x_mu) / x_sd, (x[test] - x_mu) / x_sd
        y_mu, y_sd = _column_stats(y[train])
        zt = np.nan_to_num((y[train] - y_mu) / y_sd, nan=0.0)  # unseen: imputed at the mean
        actual[test] = (y[test] - y_mu) / y_sd
        predicted[test] = _fit_predict(xt, zt, xv, spec, rng, on_fit)
    return predicted, actual


def _column_stats(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-model mean and s.d. over the users who saw the model (0 and 1 when none did)."""
    seen = np.isfinite(y)
    n = seen.sum(axis=0)
    mu = np.where(n > 0, np.nansum(y, axis=0) / np.maximum(n, 1), 0.0)
    var = np.where(n > 1, np.nansum((y - mu) ** 2, axis=0) / np.maximum(n - 1, 1), 1.0)
    sd = np.sqrt(var)
    return mu, np.where(sd > 1e-12, sd, 1.0)


def _fit_predict(
    xt: np.ndarray,
    zt: np.ndarray,
    xv: np.ndarray,
    spec: PredictorSpec,
    rng: np.random.Generator,
    on_fit: Callable[[], None],
) -> np.ndarray:
    neural = _deps.require("sklearn.neural_network", "score prediction")
    exceptions = _deps.require("sklearn.exceptions", "score prediction")
    members = spec.members if spec.kind == "ensemble" else 1
    alpha = spec.alpha_ensemble if spec.kind == "ensemble" else spec.alpha_single
    early = xt.shape[0] >= 20
    out = np.zeros((xv.shape[0], zt.shape[1]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", exceptions.ConvergenceWarning)
        for _ in range(members):
            net = neural.MLPRegressor(
                hidden_layer_sizes=spec.hidden,
                alpha=alpha,
                early_stopping=early,
                validation_fraction=0.15,
                n_iter_no_change=20,
                max_iter=spec.max_iter,
                random_state=int(rng.integers(2**31 - 1)),
            )
            net.fit(xt, zt)
            out += net.predict(xv).reshape(xv.shape[0], -1)
            on_fit()
    return out / members
