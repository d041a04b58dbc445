"""What `prefduel.ranking.analysis.analyze` returns, and its settings: `RankConfig`,
`GlobalRatings` and `RankAnalysis` (whose `RankAnalysis.to_dict` is the JSON report).

All three are re-exported by `prefduel.ranking.analysis`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field
from scipy import stats

from prefduel import __version__
from prefduel.core.rng import SEED_LIMIT
from prefduel.core.schema import Integer, Real, Text, frozen_dataclass
from prefduel.ranking.battles import Battles
from prefduel.ranking.bt import DEFAULT_RIDGE, BTFit
from prefduel.ranking.elo import MAX_K, PAPER_K
from prefduel.ranking.errors import RankingError
from prefduel.ranking.personal import (
    DEFAULT_MIN_VOTES,
    PERSONAL_BT_MODES,
    RANK_DRAWS,
    PersonalRatings,
    correlation_by_estimate,
)
from prefduel.ranking.predict import Prediction, prediction_verdict
from prefduel.ranking.style import REDUCERS, STYLE_BACKENDS, MetaStyles
from prefduel.ranking.topics import TOPIC_BACKENDS, Topics

#: The per-user BT estimates, and the one each ``bt_mode`` uses when the user's MLE exists.
ESTIMATES: tuple[str, ...] = ("mle", "ridge", "hierarchical")
BT_ESTIMATE = {"mle": "mle", "ridge": "ridge", "hier": "hierarchical"}
#: The largest value of each count setting of `RankConfig`: far more than any analysis
#: needs, and small enough that the arrays they size fit in memory (``elo_orders`` keeps one
#: users x models table per order). ``prefduel rank`` refuses the same values (a test keeps
#: its options equal to these).
MAX_SETTINGS: dict[str, int] = {
    "min_votes": 1_000_000,
    "bootstrap": 10_000,
    "n_topics": 200,
    "meta_styles": 100,
    "style_clusters": 100,
    "members": 200,
    "folds": 100,
    "elo_orders": 100,
    "holdout_folds": 100,
}
#: The largest BT ridge penalty (logits): far beyond it every strength is zero.
MAX_RIDGE = 1000.0


@frozen_dataclass(error=RankingError, path="RankConfig", keys="settings")
class RankConfig:
    """Settings of `analyze` (frozen, JSON-serializable; stored in every report), each
    declared with its type and bounds and checked by the schema layer (`prefduel.core.schema`).

    Attributes:
        k: Elo K-factor (paper 32, Arena 4).
        min_votes: Users with fewer battles are left out of the per-user analysis (counted).
        bt_mode: ``"mle"`` (paper-faithful, ridge fallback when the MLE does not exist),
            ``"ridge"``, or ``"hier"`` (per-user BT = global + a shrunk user deviation,
            `prefduel.ranking.hier`; the global fit is then the MLE).
        ridge: BT ridge penalty (ridge mode and fallbacks).
        seed: Root seed of every random step.
        bootstrap: Replicates of the global intervals (0: none).
        elo_bootstrap_cells: Elo intervals run only while ``replicates x battles`` stays at or
            below this (they cost one vectorized step per battle); otherwise they are skipped
            with a note.
        features: Run the topic, style and prediction steps (needs prompts).
        n_topics: Topics of the topic model.
        topic_backend: ``"lda"`` or ``"fastopic"``.
        style_backend: ``"handcrafted"`` or ``"embedding"``.
        embed_model: Local embedding model of the optional backends.
        meta_styles: Meta-styles kept.
        meta_method: ``"pca"`` or ``"nmf"``.
        style_clusters: k-means clusters of users by style.
        members: Nets in the Elo ensemble predictor (paper: 50).
        folds: Cross-validation folds of the prediction.
        shuffle_control: Also predict from features shuffled across users (should not help).
        elo_orders: 0: online Elo in the battles' (time or file) order; ``N > 0``: Elo averaged
            over ``N`` seeded random orders, with the spread across orders reported.
        holdout_folds: Seeded folds of the held-out-vote log-loss of the global, ridge and
            hierarchical estimates ("which estimate to trust").
    """

    k: Annotated[Real, Field(gt=0, le=MAX_K)] = PAPER_K
    min_votes: Annotated[Integer, Field(ge=1, le=MAX_SETTINGS["min_votes"])] = DEFAULT_MIN_VOTES
    bt_mode: Literal[PERSONAL_BT_MODES] = "mle"  # type: ignore[valid-type]
    ridge: Annotated[Real, Field(gt=0, le=MAX_RIDGE)] = DEFAULT_RIDGE
    seed: Annotated[Integer, Field(ge=0, lt=SEED_LIMIT)] = 0
    bootstrap: Annotated[Integer, Field(ge=0, le=MAX_SETTINGS["bootstrap"])] = 100
    elo_bootstrap_cells: Annotated[Integer, Field(ge=0)] = 20_000_000
    features: bool = True
    n_topics: Annotated[Integer, Field(ge=2, le=MAX_SETTINGS["n_topics"])] = 10
    topic_backend: Literal[TOPIC_BACKENDS] = "lda"  # type: ignore[valid-type]
    style_backend: Literal[STYLE_BACKENDS] = "handcrafted"  # type: ignore[valid-type]
    embed_model: Text | None = None
    meta_styles: Annotated[Integer, Field(ge=1, le=MAX_SETTINGS["meta_styles"])] = 6
    meta_method: Literal[REDUCERS] = "pca"  # type: ignore[valid-type]
    style_clusters: Annotated[Integer, Field(ge=1, le=MAX_SETTINGS["style_clusters"])] = 3
    members: Annotated[Integer, Field(ge=1, le=MAX_SETTINGS["members"])] = 10
    folds: Annotated[Integer, Field(ge=2, le=MAX_SETTINGS["folds"])] = 5
    shuffle_control: bool = True
    elo_orders: Annotated[Integer, Field(ge=0, le=MAX_SETTINGS["elo_orders"])] = 0
    holdout_folds: Annotated[Integer, Field(ge=2, le=MAX_SETTINGS["holdout_folds"])] = 5

    def to_dict(self) -> dict[str, Any]:
        """Settings as a JSON-serializable dict."""
        return asdict(self)


@dataclass
class GlobalRatings:
    """Global scores of the ``M`` models with 95% bootstrap intervals.

    Attributes:
        elo: ``(M,)`` online Elo.
        elo_ci: ``(M, 2)`` or ``None`` when skipped.
        bt: ``(M,)`` Bradley-Terry on the Elo scale.
        bt_ci: ``(M, 2)`` or ``None``.
        bt_fit: The global `BTFit` (leading dimension 1).
        battles: ``(M,)`` battles per model.
        win_rate: ``(M,)`` wins (ties as halves) over battles.
        rank: ``(M,)`` rank by BT (1 = best).
        rank_ci: ``(M, 2)`` best and worst rank a model can take given the BT intervals: a
            model ranks below only the models whose interval lies wholly above its own, and
            above only those wholly below (Arena-style); ``None`` without intervals.
        elo_order_sd: ``(M,)`` s.d. of Elo across the random orders, or ``None`` (Elo in the
            battles' order).
        elo_in_order: ``(M,)`` Elo in the battles' order when ``elo`` is an average over random
            orders, else ``None``.
    """

    elo: np.ndarray
    elo_ci: np.ndarray | None
    bt: np.ndarray
    bt_ci: np.ndarray | None
    bt_fit: BTFit
    battles: np.ndarray
    win_rate: np.ndarray
    rank: np.ndarray | None = None
    rank_ci: np.ndarray | None = None
    elo_order_sd: np.ndarray | None = None
    elo_in_order: np.ndarray | None = None


@dataclass
class RankAnalysis:
    """Everything `analyze` found; `to_dict` gives the JSON report."""

    config: RankConfig
    battles: Battles
    global_ratings: GlobalRatings
    personal: PersonalRatings
    rho_elo: np.ndarray
    rho_bt: np.ndarray
    summary_elo: dict[str, Any]
    summary_bt: dict[str, Any]
    tests: dict[str, Any]
    topics: Topics | None = None
    user_topics: np.ndarray | None = None
    user_style: np.ndarray | None = None
    style_names: list[str] | None = None
    styles: MetaStyles | None = None
    feature_users: np.ndarray | None = None
    predictions: dict[str, Prediction] = field(default_factory=dict)
    holdout: dict[str, Any] | None = None
    feature_check: dict[str, Any] | None = None
    user_counts: dict[str, int] = field(default_factory=dict)
    messages: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)

    def user_table(self) -> list[dict[str, Any]]:
        """One row per analysed user: id, votes, models seen, correlations, flags, cluster."""
        rows = []
        cluster = np.full(self.personal.users.size, -1)
        dominant = np.full(self.personal.users.size, -1)
        if self.feature_users is not None and self.styles is not None:
            cluster[self.feature_users] = self.styles.clusters
        if self.feature_users is not None and self.user_topics is not None:
            dominant[self.feature_users] = np.argmax(self.user_topics, axis=1)
        for i, u in enumerate(self.personal.users.tolist()):
            rows.append(
                {
                    "user": self.battles.users[u],
                    "votes": int(self.personal.votes[i]),
                    "models_seen": int(self.personal.seen[i].sum()),
                    "rho_elo": _num(self.rho_elo[i]),
                    "rho_bt": _num(self.rho_bt[i]),
                    "bt_fallback": bool(self.personal.bt_fallback[i]),
                    "bt_mle_exists": bool(self.personal.bt_mle_exists[i]),
                    "style_cluster": int(cluster[i]) if cluster[i] >= 0 else None,
                    "dominant_topic": int(dominant[i]) if dominant[i] >= 0 else None,
                }
            )
        return rows

    def model_table(self) -> list[dict[str, Any]]:
        """One row per model, sorted by global BT: scores, intervals, battles, win rate."""
        g = self.global_ratings
        fit = g.bt_fit
        rows = []
        for m in np.argsort(-g.bt, kind="stable").tolist():
            row = {
                "model": self.battles.models[m],
                "bt": _num(g.bt[m]),
                "bt_lo": _num(g.bt_ci[m, 0]) if g.bt_ci is not None else None,
                "bt_hi": _num(g.bt_ci[m, 1]) if g.bt_ci is not None else None,
                "elo": _num(g.elo[m]),
                "elo_lo": _num(g.elo_ci[m, 0]) if g.elo_ci is not None else None,
                "elo_hi": _num(g.elo_ci[m, 1]) if g.elo_ci is not None else None,
                "battles": int(g.battles[m]),
                "win_rate": _num(g.win_rate[m]),
                "never_won": bool(fit.never_won[0, m]),
                "never_lost": bool(fit.never_lost[0, m]),
                "rank": int(g.rank[m]) if g.rank is not None else None,
                "rank_lo": int(g.rank_ci[m, 0]) if g.rank_ci is not None else None,
                "rank_hi": int(g.rank_ci[m, 1]) if g.rank_ci is not None else None,
            }
            if g.elo_order_sd is not None and g.elo_in_order is not None:
                row["elo_order_sd"] = _num(g.elo_order_sd[m])
                row["elo_in_order"] = _num(g.elo_in_order[m])
            rows.append(row)
        return rows

    def user_model_columns(self) -> dict[str, list[Any]]:
        """The per-user leaderboards as one long table, column by column.

        One row per analysed user and model the user evaluated, users in ``battles.users``
        order and each user's models by rank: ``user, model, battles`` (of that user with that
        model), ``elo``, ``bt`` with its 95% interval ``bt_lo, bt_hi``, ``rank`` with its 95%
        interval ``rank_lo, rank_hi``, and ``estimate`` (``mle``, ``ridge`` or
        ``hierarchical``: the BT estimate used for that user).
        """
        p = self.personal
        seen_users, seen_models = np.nonzero(p.seen)
        order = np.lexsort((p.rank[seen_users, seen_models], seen_users))
        i, m = seen_users[order], seen_models[order]
        users = np.asarray(self.battles.users, dtype=object)[p.users[i]]
        models = np.asarray(self.battles.models, dtype=object)[m]
        return {
            "user": users.tolist(),
            "model": models.tolist(),
            "battles": p.battles_with[i, m].tolist(),
            "elo": _nums(p.elo[i, m]),
            "bt": _nums(p.bt[i, m]),
            "bt_lo": _nums(p.bt_lo[i, m]),
            "bt_hi": _nums(p.bt_hi[i, m]),
            "rank": p.rank[i, m].tolist(),
            "rank_lo": p.rank_lo[i, m].tolist(),
            "rank_hi": p.rank_hi[i, m].tolist(),
            "estimate": p.bt_estimate[i].tolist(),
        }

    def user_leaderboard(self, user: int) -> list[dict[str, Any]]:
        """One user's leaderboard beside the global one, by the user's rank.

        Args:
            user: Index into ``battles.users`` of an analysed user.

        Returns:
            One row per model the user evaluated: the user's ``battles, elo, bt, bt_lo, bt_hi,
            rank, rank_lo, rank_hi`` and the global ``global_bt, global_bt_lo, global_bt_hi,
            global_rank, global_rank_lo, global_rank_hi``.

        Raises:
            RankingError: the user is not among the analysed users.
        """
        p, g = self.personal, self.global_ratings
        where = np.flatnonzero(p.users == user)
        if where.size == 0:
            raise RankingError(f"user index {user} is not among the analysed users")
        i = int(where[0])
        rows = []
        for m in np.flatnonzero(p.seen[i])[np.argsort(p.rank[i, p.seen[i]], kind="stable")]:
            rows.append(
                {
                    "model": self.battles.models[m],
                    "battles": int(p.battles_with[i, m]),
                    "elo": _num(p.elo[i, m]),
                    "bt": _num(p.bt[i, m]),
                    "bt_lo": _num(p.bt_lo[i, m]),
                    "bt_hi": _num(p.bt_hi[i, m]),
                    "rank": int(p.rank[i, m]),
                    "rank_lo": int(p.rank_lo[i, m]),
                    "rank_hi": int(p.rank_hi[i, m]),
                    "global_bt": _num(g.bt[m]),
                    "global_bt_lo": _num(g.bt_ci[m, 0]) if g.bt_ci is not None else None,
                    "global_bt_hi": _num(g.bt_ci[m, 1]) if g.bt_ci is not None else None,
                    "global_rank": int(g.rank[m]) if g.rank is not None else None,
                    "global_rank_lo": int(g.rank_ci[m, 0]) if g.rank_ci is not None else None,
                    "global_rank_hi": int(g.rank_ci[m, 1]) if g.rank_ci is not None else None,
                }
            )
        return rows

    def to_dict(self) -> dict[str, Any]:
        """The JSON report: settings, input counts, every skip, tables, tests, predictions."""
        fit = self.global_ratings.bt_fit
        out: dict[str, Any] = {
            "prefduel_version": __version__,
            "config": self.config.to_dict(),
            "schema": self.battles.schema.to_dict(),
            "input": self.battles.summary(),
            "users": self.user_counts,
            "global": {
                "bt_mode": fit.mode,
                "bt_mle_exists": bool(fit.mle_exists[0]),
                "bt_fallback_to_ridge": bool(fit.fallback[0]),
                "bt_converged": bool(fit.converged[0]),
                "models": self.model_table(),
                "elo_order": self._elo_order(),
            },
            "correlation": {
                "elo": self.summary_elo,
                "bt": self.summary_bt,
                "by_bt_estimate": self._correlation_by_estimate(),
            },
            "per_user_bt": self._per_user_bt(),
            "holdout": self.holdout,
            "tests": self.tests,
            "per_user": self.user_table(),
            "predictions": {k: v.to_dict() for k, v in self.predictions.items()},
            "prediction_verdicts": self.prediction_verdicts(),
            "messages": list(self.messages),
            "timings_s": {k: round(v, 3) for k, v in self.timings.items()},
        }
        if self.feature_check is not None:
            out["features"] = self.feature_check
        if self.topics is not None:
            out["topics"] = {
                "backend": self.topics.backend,
                "top_words": self.topics.top_words,
                "distinct_prompts": len(self.topics.texts),
                "users": 0 if self.user_topics is None else int(self.user_topics.shape[0]),
            }
        if self.styles is not None:
            s = self.styles
            out["styles"] = {
                "backend": self.config.style_backend,
                "method": s.method,
                "meta_styles": s.names,
                "explained_variance": None if s.explained is None else s.explained.tolist(),
                "cluster_sizes": np.bincount(s.clusters, minlength=len(s.centers)).tolist(),
                "cluster_mean_rho_bt": self._cluster_means(self.rho_bt),
                "cluster_mean_rho_elo": self._cluster_means(self.rho_elo),
            }
        return out

    def prediction_verdicts(self) -> dict[str, dict[str, Any]]:
        """Per predicted target (``elo``, ``bt``), whether the features helped against the
        mean predictor and the shuffled-features control (`prediction_verdict`)."""
        out = {}
        for name, pred in self.predictions.items():
            if pred.shuffled:
                continue
            control = self.predictions.get(f"{name}_shuffled")
            out[name] = prediction_verdict(
                pred.to_dict(), None if control is None else control.to_dict()
            )
        return out

    def _elo_order(self) -> dict[str, Any]:
        """How the online Elo was ordered, and how much the order mattered when averaged."""
        g = self.global_ratings
        out: dict[str, Any] = {
            "timestamps": self.battles.time is not None,
            "orders": self.config.elo_orders,
        }
        if g.elo_order_sd is not None and g.elo_in_order is not None:
            out["order_sd_mean"] = float(np.mean(g.elo_order_sd))
            out["order_sd_max"] = float(np.max(g.elo_order_sd))
            rho = stats.spearmanr(g.elo_in_order, g.elo).statistic
            out["spearman_in_order_vs_mean"] = _num(rho)
        return out

    def _correlation_by_estimate(self) -> dict[str, Any]:
        """The correlation summaries of users with and without a BT MLE, with the estimate
        each group's BT uses."""
        split = correlation_by_estimate(self.rho_elo, self.rho_bt, self.personal.bt_mle_exists)
        mode = self.config.bt_mode
        split["mle_exists"]["bt_estimate"] = BT_ESTIMATE[mode]
        split["no_mle"]["bt_estimate"] = "hierarchical" if mode == "hier" else "ridge"
        return split

    def _per_user_bt(self) -> dict[str, Any]:
        """Which per-user BT estimates were used, and how their intervals were made."""
        p = self.personal
        return {
            "mode": self.config.bt_mode,
            "users": int(p.users.size),
            "mle_exists": int(p.bt_mle_exists.sum()),
            "estimates": {name: int(np.sum(p.bt_estimate == name)) for name in ESTIMATES},
            "tau": p.tau,
            "intervals": (
                "hierarchical posterior"
                if self.config.bt_mode == "hier"
                else "Laplace (inverse Fisher information)"
            ),
            "rank_draws": RANK_DRAWS,
        }

    def _cluster_means(self, rho: np.ndarray) -> list[float | None]:
        if self.styles is None or self.feature_users is None:
            return []
        values = rho[self.feature_users]
        out = []
        for c in range(len(self.styles.centers)):
            sel = values[(self.styles.clusters == c) & np.isfinite(values)]
            out.append(float(sel.mean()) if sel.size else None)
        return out


def _num(x: float) -> float | None:
    return float(x) if np.isfinite(x) else None


def _nums(x: np.ndarray) -> list[float | None]:
    """``x`` as a list of floats, non-finite values as ``None``."""
    return [v if np.isfinite(v) else None for v in np.asarray(x, dtype=float).tolist()]
