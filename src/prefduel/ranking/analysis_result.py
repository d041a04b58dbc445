"""What `prefduel.ranking.analysis.analyze` returns, and its settings: `RankConfig`,
`GlobalRatings` and `RankAnalysis` (whose `RankAnalysis.to_dict` is the JSON report).

All three are re-exported by `prefduel.ranking.analysis`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from prefduel import __version__
from prefduel.ranking.battles import Battles
from prefduel.ranking.bt import BT_MODES, DEFAULT_RIDGE, BTFit
from prefduel.ranking.elo import PAPER_K
from prefduel.ranking.errors import RankingError
from prefduel.ranking.personal import DEFAULT_MIN_VOTES, PersonalRatings
from prefduel.ranking.predict import Prediction
from prefduel.ranking.style import REDUCERS, STYLE_BACKENDS, MetaStyles
from prefduel.ranking.topics import TOPIC_BACKENDS, Topics


@dataclass(frozen=True)
class RankConfig:
    """Settings of `analyze` (frozen, JSON-serializable; stored in every report).

    Attributes:
        k: Elo K-factor (paper 32, Arena 4).
        min_votes: Users with fewer battles are left out of the per-user analysis (counted).
        bt_mode: ``"mle"`` (paper-faithful, ridge fallback when the MLE does not exist) or
            ``"ridge"``.
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
    """

    k: float = PAPER_K
    min_votes: int = DEFAULT_MIN_VOTES
    bt_mode: str = "mle"
    ridge: float = DEFAULT_RIDGE
    seed: int = 0
    bootstrap: int = 100
    elo_bootstrap_cells: int = 20_000_000
    features: bool = True
    n_topics: int = 10
    topic_backend: str = "lda"
    style_backend: str = "handcrafted"
    embed_model: str | None = None
    meta_styles: int = 6
    meta_method: str = "pca"
    style_clusters: int = 3
    members: int = 10
    folds: int = 5
    shuffle_control: bool = True

    def __post_init__(self) -> None:
        checks = [
            (self.k > 0, f"k must be > 0, got {self.k}"),
            (self.min_votes >= 1, f"min_votes must be >= 1, got {self.min_votes}"),
            (self.bt_mode in BT_MODES, f"bt_mode must be one of {BT_MODES}, got {self.bt_mode!r}"),
            (self.ridge > 0, f"ridge must be > 0, got {self.ridge}"),
            (self.bootstrap >= 0, f"bootstrap must be >= 0, got {self.bootstrap}"),
            (self.n_topics >= 2, f"n_topics must be >= 2, got {self.n_topics}"),
            (self.topic_backend in TOPIC_BACKENDS, f"topic backend: one of {TOPIC_BACKENDS}"),
            (self.style_backend in STYLE_BACKENDS, f"style backend: one of {STYLE_BACKENDS}"),
            (self.meta_method in REDUCERS, f"meta-style method: one of {REDUCERS}"),
            (self.meta_styles >= 1, f"meta_styles must be >= 1, got {self.meta_styles}"),
            (self.style_clusters >= 1, f"style_clusters must be >= 1, got {self.style_clusters}"),
            (self.members >= 1, f"members must be >= 1, got {self.members}"),
            (self.folds >= 2, f"folds must be >= 2, got {self.folds}"),
        ]
        for ok, message in checks:
            if not ok:
                raise RankingError(message)

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
    """

    elo: np.ndarray
    elo_ci: np.ndarray | None
    bt: np.ndarray
    bt_ci: np.ndarray | None
    bt_fit: BTFit
    battles: np.ndarray
    win_rate: np.ndarray


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
            rows.append(
                {
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
            },
            "correlation": {"elo": self.summary_elo, "bt": self.summary_bt},
            "tests": self.tests,
            "per_user": self.user_table(),
            "predictions": {k: v.to_dict() for k, v in self.predictions.items()},
            "messages": list(self.messages),
            "timings_s": {k: round(v, 3) for k, v in self.timings.items()},
        }
        if self.topics is not None:
            out["topics"] = {
                "backend": self.topics.backend,
                "top_words": self.topics.top_words,
                "distinct_prompts": len(self.topics.texts),
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
