"""The whole personalized-ranking analysis of a battle log, as one call.

`analyze` runs, in order: global Elo and Bradley-Terry with bootstrap intervals; per-user
Elo and BT for users with enough votes; Spearman correlations with the global ranking over each
user's models, their summary and Wilcoxon tests; topic and style profiles; style meta-styles and
clusters; and the cross-validated MLP prediction of per-user score vectors against the
global-mean predictor (with a shuffled-features control). Every count of what was left out, and
why, travels with the result.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from prefduel import __version__
from prefduel.core.rng import stream
from prefduel.ranking.battles import Battles
from prefduel.ranking.bt import BT_MODES, DEFAULT_RIDGE, BTFit, bt_bootstrap, bt_ratings
from prefduel.ranking.elo import PAPER_K, elo_bootstrap, elo_ratings
from prefduel.ranking.errors import RankingError
from prefduel.ranking.personal import (
    DEFAULT_MIN_VOTES,
    PersonalRatings,
    correlation_summary,
    correlation_tests,
    personal_ratings,
    spearman_to_global,
)
from prefduel.ranking.predict import Prediction, PredictorSpec, predict_scores
from prefduel.ranking.style import (
    REDUCERS,
    STYLE_BACKENDS,
    MetaStyles,
    meta_styles,
    style_features,
)
from prefduel.ranking.topics import TOPIC_BACKENDS, Topics, fit_topics, user_profiles


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


def analyze(
    battles: Battles,
    config: RankConfig | None = None,
    *,
    on_stage: Callable[[str], None] | None = None,
) -> RankAnalysis:
    """Run the personalized-ranking analysis.

    Args:
        battles: Validated battles (see `read_battles`).
        config: Settings (default `RankConfig`).
        on_stage: Called with a stage's name as it starts (``global ratings``, ``per-user
            ratings``, ``topics``, ``style features``, ``meta-styles``, ``prediction``), so a
            caller can show progress through the long steps.

    Returns:
        A `RankAnalysis`.

    Raises:
        RankingError: no user reaches ``min_votes``, or a setting is invalid.
    """
    config = config or RankConfig()
    timings: dict[str, float] = {}
    messages: list[str] = []
    stage = on_stage or (lambda name: None)
    clock = time.perf_counter()

    stage("global ratings")
    glob = _global(battles, config, messages)
    timings["global"] = time.perf_counter() - clock

    clock = time.perf_counter()
    stage("per-user ratings")
    personal = personal_ratings(
        battles, config.min_votes, k=config.k, bt_mode=config.bt_mode, ridge=config.ridge
    )
    rho_elo = spearman_to_global(personal.elo, glob.elo)
    rho_bt = spearman_to_global(personal.bt, glob.bt)
    timings["per_user"] = time.perf_counter() - clock
    user_counts = {
        "users": battles.n_users,
        "analysed": int(personal.users.size),
        "below_min_votes": personal.below_min_users,
        "battles_of_users_below_min_votes": personal.below_min_battles,
        "bt_fallback_to_ridge": int(personal.bt_fallback.sum()),
        "undefined_rho_elo": int(np.sum(~np.isfinite(rho_elo))),
        "undefined_rho_bt": int(np.sum(~np.isfinite(rho_bt))),
    }
    if config.bt_mode == "mle" and personal.bt_fallback.any():
        messages.append(
            f"{int(personal.bt_fallback.sum())} of {personal.users.size} users' BT maximum "
            "likelihood does not exist (a model they never saw win or never saw lose, or "
            f"separated groups); their BT scores use ridge {config.ridge} instead"
        )
    result = RankAnalysis(
        config=config,
        battles=battles,
        global_ratings=glob,
        personal=personal,
        rho_elo=rho_elo,
        rho_bt=rho_bt,
        summary_elo=correlation_summary(rho_elo),
        summary_bt=correlation_summary(rho_bt),
        tests=correlation_tests(rho_elo, rho_bt),
        user_counts=user_counts,
        messages=messages,
        timings=timings,
    )
    if config.features:
        _features(result, stage)
    else:
        messages.append("topic, style and prediction steps were not run (features off)")
    return result


def _global(battles: Battles, config: RankConfig, messages: list[str]) -> GlobalRatings:
    m = battles.n_models
    fit = bt_ratings(battles, config.bt_mode, config.ridge)
    if fit.fallback[0]:
        never_won = [battles.models[i] for i in np.flatnonzero(fit.never_won[0])]
        never_lost = [battles.models[i] for i in np.flatnonzero(fit.never_lost[0])]
        messages.append(
            "the global BT maximum likelihood does not exist (never won: "
            f"{never_won or 'none'}; never lost: {never_lost or 'none'}; or separated groups); "
            f"global BT uses ridge {config.ridge} instead"
        )
    elo = elo_ratings(battles, config.k)
    bt_ci = elo_ci = None
    if config.bootstrap > 0:
        boot = bt_bootstrap(
            battles,
            stream(config.seed, "ranking", "bootstrap", "bt"),
            config.bootstrap,
            config.bt_mode,
            config.ridge,
        )
        bt_ci = np.nanquantile(boot.scores, [0.025, 0.975], axis=0).T
        if config.bootstrap * battles.n <= config.elo_bootstrap_cells:
            reps = elo_bootstrap(
                battles,
                stream(config.seed, "ranking", "bootstrap", "elo"),
                config.bootstrap,
                config.k,
            )
            elo_ci = np.quantile(reps, [0.025, 0.975], axis=0).T
        else:
            messages.append(
                f"Elo intervals skipped: {config.bootstrap} replicates x {battles.n} battles "
                f"exceeds {config.elo_bootstrap_cells} steps (raise elo_bootstrap_cells or "
                "lower bootstrap); BT intervals are exact multinomial resamples and were run"
            )
    played = np.bincount(battles.a, minlength=m) + np.bincount(battles.b, minlength=m)
    wins = np.bincount(battles.a, weights=battles.outcome, minlength=m) + np.bincount(
        battles.b, weights=1.0 - battles.outcome, minlength=m
    )
    return GlobalRatings(
        elo=elo,
        elo_ci=elo_ci,
        bt=fit.scores[0],
        bt_ci=bt_ci,
        bt_fit=fit,
        battles=played,
        win_rate=wins / np.maximum(played, 1),
    )


def _features(result: RankAnalysis, stage: Callable[[str], None]) -> None:
    """Topic and style profiles, meta-styles, clusters and predictions, in place."""
    battles, config, personal = result.battles, result.config, result.personal
    messages, timings = result.messages, result.timings
    if battles.prompts is None:
        messages.append(
            "no prompt column (conversation_a or prompt; set --prompt-col), so topic, style "
            "and prediction steps were skipped"
        )
        return
    clock = time.perf_counter()
    stage("topics")
    prompts = battles.prompts
    has_text = np.asarray([bool(t) for t in prompts.tolist()], dtype=bool)
    topics = None
    try:
        topics = fit_topics(
            prompts[has_text].tolist(),
            config.n_topics,
            backend=config.topic_backend,
            seed=config.seed,
            embed_model=config.embed_model,
        )
    except RankingError as exc:  # e.g. prompts that are ids, with no words
        messages.append(f"topic model skipped ({exc}); predictions use style features only")
    result.topics = topics
    timings["topics"] = time.perf_counter() - clock

    # Profiles of analysed users: mean over their battles' prompts.
    clock = time.perf_counter()
    stage("style features")
    slot = np.full(battles.n_users, -1, dtype=np.int64)
    slot[personal.users] = np.arange(personal.users.size)
    rows = np.flatnonzero(has_text & (slot[battles.user] >= 0))
    texts = prompts[rows]
    owner = slot[battles.user[rows]]
    if topics is not None:
        row_text = {t: i for i, t in enumerate(topics.texts)}
        doc_topics = topics.doc_topics[[row_text[t] for t in texts.tolist()]]
    else:
        doc_topics = np.zeros((rows.size, 0))
    user_topics, n_docs = user_profiles(doc_topics, owner, personal.users.size)
    distinct, inverse = np.unique(texts.astype(str), return_inverse=True)
    feats, names = style_features(
        distinct.tolist(), backend=config.style_backend, embed_model=config.embed_model
    )
    user_style, _ = user_profiles(feats[inverse], owner, personal.users.size)
    keep = np.flatnonzero(n_docs > 0)
    result.user_counts["analysed_without_prompts"] = int(personal.users.size - keep.size)
    timings["style"] = time.perf_counter() - clock
    if keep.size < 4:
        messages.append(
            f"only {keep.size} analysed users have prompts; style clusters and predictions "
            "need at least 4 and were skipped"
        )
        return
    result.feature_users = keep
    result.user_topics = user_topics[keep] if topics is not None else None
    result.user_style = user_style[keep]
    result.style_names = names
    clock = time.perf_counter()
    stage("meta-styles")
    try:
        result.styles = meta_styles(
            user_style[keep],
            names,
            n_components=config.meta_styles,
            method=config.meta_method,
            n_clusters=config.style_clusters,
            seed=config.seed,
        )
    except RankingError as exc:
        messages.append(f"meta-styles and style clusters skipped: {exc}")
    timings["meta_styles"] = time.perf_counter() - clock

    clock = time.perf_counter()
    stage("prediction")
    x = np.hstack([user_topics[keep], user_style[keep]])
    folds = min(config.folds, keep.size)
    if keep.size < max(folds, 4) or folds < 2:
        messages.append(f"too few users with prompts ({keep.size}) for the prediction")
        return
    specs = {
        "elo": PredictorSpec(kind="ensemble", members=config.members, folds=folds),
        "bt": PredictorSpec(kind="single", folds=folds),
    }
    targets = {"elo": personal.elo[keep], "bt": personal.bt[keep]}
    for name, spec in specs.items():
        result.predictions[name] = predict_scores(
            x, targets[name], spec, target=name, seed=config.seed
        )
        if config.shuffle_control:
            result.predictions[f"{name}_shuffled"] = predict_scores(
                x, targets[name], spec, target=name, seed=config.seed, shuffle_features=True
            )
    timings["prediction"] = time.perf_counter() - clock
