"""The whole personalized-ranking analysis of a battle log, as one call.

`analyze` runs, in order: global Elo and Bradley-Terry with bootstrap intervals and Arena-style
rank intervals; per-user Elo and BT (MLE, ridge or hierarchical) with intervals for users with
enough votes; Spearman correlations with the global ranking over each user's models, their
summary (overall and split by whether the user's BT MLE exists) and Wilcoxon tests; the
held-out-vote log-loss of the global, ridge and hierarchical estimates; topic and style
profiles, checked for degenerate features; style meta-styles and clusters; and the
cross-validated MLP prediction of per-user score vectors against the global-mean predictor (with
a shuffled-features control). Every count of what was left out, and why, travels with the
result.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from prefduel.core.rng import stream
from prefduel.ranking.analysis_result import GlobalRatings, RankAnalysis, RankConfig
from prefduel.ranking.battles import Battles
from prefduel.ranking.bt import bt_bootstrap, bt_ratings
from prefduel.ranking.elo import elo_bootstrap, elo_orders, elo_ratings
from prefduel.ranking.errors import RankingError
from prefduel.ranking.hier import holdout_logloss
from prefduel.ranking.personal import (
    PersonalRatings,
    correlation_summary,
    correlation_tests,
    personal_ratings,
    spearman_to_global,
)
from prefduel.ranking.predict import PredictorSpec, predict_scores
from prefduel.ranking.style import feature_check, meta_styles, style_features
from prefduel.ranking.topics import Topics, fit_topics, user_profiles

__all__ = ["MAX_MODELS", "GlobalRatings", "RankAnalysis", "RankConfig", "analyze"]

#: The most models one analysis ranks (Chatbot Arena has ranked a few hundred): its fits hold
#: models x models matrices for each user and replicate, so a log of tens of thousands of
#: distinct names would need more memory than any machine has.
MAX_MODELS = 1_000


def analyze(
    battles: Battles,
    config: RankConfig | None = None,
    *,
    on_stage: Callable[[str], None] | None = None,
    on_progress: Callable[[str, int, int], None] | None = None,
) -> RankAnalysis:
    """Run the personalized-ranking analysis.

    Args:
        battles: Validated battles (see `read_battles`).
        config: Settings (default `RankConfig`).
        on_stage: Called with a stage's name as it starts (``global ratings``, ``per-user
            ratings``, ``held-out log-loss``, ``topics``, ``style features``, ``meta-styles``,
            ``prediction``), so a caller can show progress through the long steps.
        on_progress: Called as ``(stage, done, total)`` inside a long stage after each of its
            ``total`` steps (``prediction``: each fitted net), so a caller can show how far
            it has got.

    Returns:
        A `RankAnalysis`.

    Raises:
        RankingError: no user reaches ``min_votes``, more than `MAX_MODELS` models, or a
            setting is invalid.
    """
    config = config or RankConfig()
    _check_size(battles)
    stage = on_stage or (lambda name: None)
    result = _ratings(battles, config, stage)
    _holdout_step(result, stage)
    if config.features:
        _features(result, stage, on_progress or (lambda name, done, total: None))
    else:
        result.messages.append("topic, style and prediction steps were not run (features off)")
    return result


def _check_size(battles: Battles) -> None:
    """Raise `RankingError` when the log has more models than the analysis ranks."""
    if battles.n_models > MAX_MODELS:
        raise RankingError(
            f"{battles.source}: {battles.n_models:,} models; the analysis ranks at most "
            f"{MAX_MODELS:,} (--min-model-battles excludes models with few battles)"
        )


def _ratings(battles: Battles, config: RankConfig, stage: Callable[[str], None]) -> RankAnalysis:
    """The global and per-user ratings, the users' correlations with the global ranking and
    their tests, timed (the ``global ratings`` and ``per-user ratings`` stages)."""
    timings: dict[str, float] = {}
    messages: list[str] = []
    clock = time.perf_counter()

    stage("global ratings")
    glob = _global(battles, config, messages)
    timings["global"] = time.perf_counter() - clock

    clock = time.perf_counter()
    stage("per-user ratings")
    personal, rho_elo, rho_bt = _personal(battles, config, glob, messages)
    timings["per_user"] = time.perf_counter() - clock
    return RankAnalysis(
        config=config,
        battles=battles,
        global_ratings=glob,
        personal=personal,
        rho_elo=rho_elo,
        rho_bt=rho_bt,
        summary_elo=correlation_summary(rho_elo),
        summary_bt=correlation_summary(rho_bt),
        tests=correlation_tests(rho_elo, rho_bt),
        user_counts=_user_counts(battles, personal, rho_elo, rho_bt),
        messages=messages,
        timings=timings,
    )


def _personal(
    battles: Battles, config: RankConfig, glob: GlobalRatings, messages: list[str]
) -> tuple[PersonalRatings, np.ndarray, np.ndarray]:
    """Per-user Elo and BT of the ``U'`` users with enough votes, and their Spearman
    correlations with the global ranking, ``rho_elo`` and ``rho_bt`` ``(U',)``."""
    personal = personal_ratings(
        battles,
        config.min_votes,
        k=config.k,
        bt_mode=config.bt_mode,
        ridge=config.ridge,
        seed=config.seed,
        elo_order_count=config.elo_orders,
    )
    rho_elo = spearman_to_global(personal.elo, glob.elo)
    rho_bt = spearman_to_global(personal.bt, glob.bt)
    if config.bt_mode == "mle" and personal.bt_fallback.any():
        messages.append(
            f"{int(personal.bt_fallback.sum())} of {personal.users.size} users' BT maximum "
            "likelihood does not exist (a model they never saw win or never saw lose, or "
            f"separated groups); their BT scores use ridge {config.ridge} instead"
        )
    return personal, rho_elo, rho_bt


def _user_counts(
    battles: Battles, personal: PersonalRatings, rho_elo: np.ndarray, rho_bt: np.ndarray
) -> dict[str, int]:
    """How many users were analysed, and how many were left out or flagged, and why."""
    return {
        "users": battles.n_users,
        "analysed": int(personal.users.size),
        "below_min_votes": personal.below_min_users,
        "battles_of_users_below_min_votes": personal.below_min_battles,
        "bt_fallback_to_ridge": int(personal.bt_fallback.sum()),
        "bt_no_mle": int(np.sum(~personal.bt_mle_exists)),
        "undefined_rho_elo": int(np.sum(~np.isfinite(rho_elo))),
        "undefined_rho_bt": int(np.sum(~np.isfinite(rho_bt))),
    }


def _global(battles: Battles, config: RankConfig, messages: list[str]) -> GlobalRatings:
    m = battles.n_models
    mode = "mle" if config.bt_mode == "hier" else config.bt_mode  # hier shrinks to the MLE
    fit = bt_ratings(battles, mode, config.ridge)
    if fit.fallback[0]:
        never_won = [battles.models[i] for i in np.flatnonzero(fit.never_won[0])]
        never_lost = [battles.models[i] for i in np.flatnonzero(fit.never_lost[0])]
        messages.append(
            "the global BT maximum likelihood does not exist (never won: "
            f"{never_won or 'none'}; never lost: {never_lost or 'none'}; or separated groups); "
            f"global BT uses ridge {config.ridge} instead"
        )
    elo, order_sd, in_order = _global_elo(battles, config, messages)
    bt_ci = elo_ci = None
    if config.bootstrap > 0:
        boot = bt_bootstrap(
            battles,
            stream(config.seed, "ranking", "bootstrap", "bt"),
            config.bootstrap,
            mode,
            config.ridge,
        )
        bt_ci = np.nanquantile(boot.scores, [0.025, 0.975], axis=0).T
        elo_ci = _elo_intervals(battles, config, messages)
    played = np.bincount(battles.a, minlength=m) + np.bincount(battles.b, minlength=m)
    wins = np.bincount(battles.a, weights=battles.outcome, minlength=m) + np.bincount(
        battles.b, weights=1.0 - battles.outcome, minlength=m
    )
    bt = fit.scores[0]
    rank = _point_ranks(bt)
    return GlobalRatings(
        elo=elo,
        elo_ci=elo_ci,
        bt=bt,
        bt_ci=bt_ci,
        bt_fit=fit,
        battles=played,
        win_rate=wins / np.maximum(played, 1),
        rank=rank,
        rank_ci=None if bt_ci is None else overlap_rank_intervals(rank, bt_ci),
        elo_order_sd=order_sd,
        elo_in_order=in_order,
    )


def _global_elo(
    battles: Battles, config: RankConfig, messages: list[str]
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """Global online Elo ``(M,)``: in the battles' order, or averaged over
    ``config.elo_orders`` seeded random orders; then also its s.d. across orders and the Elo in
    the battles' order (else ``None`` for both). Warns when the order is the file's."""
    in_order = elo_ratings(battles, config.k)
    if config.elo_orders == 0:
        if battles.time is None:
            messages.append(
                "no timestamps (--time-col): online Elo follows the file order, which is "
                "arbitrary, and another order can move models by several ranks; "
                "--elo-orders N averages Elo over N seeded random orders and shows the spread"
            )
        return in_order, None, None
    reps = elo_orders(
        battles, stream(config.seed, "ranking", "elo_orders"), config.elo_orders, config.k
    )
    return reps.mean(axis=0), reps.std(axis=0), in_order


def _elo_intervals(
    battles: Battles, config: RankConfig, messages: list[str]
) -> np.ndarray | None:
    """``(M, 2)`` bootstrap intervals of the global Elo (resamples replayed in random order
    when Elo is averaged over orders), or ``None`` with a note when too costly."""
    if config.bootstrap * battles.n > config.elo_bootstrap_cells:
        messages.append(
            f"Elo intervals skipped: {config.bootstrap} replicates x {battles.n} battles "
            f"exceeds {config.elo_bootstrap_cells} steps (raise elo_bootstrap_cells or "
            "lower bootstrap); BT intervals are exact multinomial resamples and were run"
        )
        return None
    reps = elo_bootstrap(
        battles,
        stream(config.seed, "ranking", "bootstrap", "elo"),
        config.bootstrap,
        config.k,
        keep_order=config.elo_orders == 0,
    )
    return np.quantile(reps, [0.025, 0.975], axis=0).T


def _point_ranks(scores: np.ndarray) -> np.ndarray:
    """``(M,)`` ranks by ``scores`` (1 = best; ties in model order, as in the tables)."""
    rank = np.empty(scores.size, dtype=np.int64)
    rank[np.argsort(-scores, kind="stable")] = np.arange(1, scores.size + 1)
    return rank


def overlap_rank_intervals(rank: np.ndarray, ci: np.ndarray) -> np.ndarray:
    """Arena-style rank intervals from score intervals.

    A model cannot be separated from the models whose intervals overlap its own: its best rank
    is 1 + the number of models whose interval lies wholly above its own, its worst rank is
    ``M`` - the number wholly below. The point rank is kept inside (a percentile interval
    need not hold its point estimate).

    Args:
        rank: ``(M,)`` point ranks (1 = best).
        ci: ``(M, 2)`` score intervals.

    Returns:
        ``(M, 2)`` integer ``[best, worst]`` ranks.
    """
    lo, hi = ci[:, 0], ci[:, 1]
    above = np.sum(lo[None, :] > hi[:, None], axis=1)  # models surely better than each
    below = np.sum(hi[None, :] < lo[:, None], axis=1)  # models surely worse
    best = np.minimum(1 + above, rank)
    worst = np.maximum(rank.size - below, rank)
    return np.column_stack([best, worst]).astype(np.int64)


def _holdout_step(result: RankAnalysis, stage: Callable[[str], None]) -> None:
    """Held-out-vote log-loss of the global, ridge and hierarchical estimates, in place."""
    config = result.config
    clock = time.perf_counter()
    stage("held-out log-loss")
    try:
        loss = holdout_logloss(
            result.battles,
            result.personal.users,
            folds=config.holdout_folds,
            seed=config.seed,
            ridge=config.ridge,
        )
    except RankingError as exc:
        result.messages.append(f"held-out log-loss skipped: {exc}")
        return
    result.holdout = {
        **loss,
        "folds": config.holdout_folds,
        "seed": config.seed,
        "users": int(result.personal.users.size),
        "best": min(("global", "ridge", "hierarchical"), key=lambda name: loss[name]),
    }
    result.timings["holdout"] = time.perf_counter() - clock


def _features(
    result: RankAnalysis,
    stage: Callable[[str], None],
    progress: Callable[[str, int, int], None],
) -> None:
    """Topic and style profiles, meta-styles, clusters and predictions, in place."""
    if result.battles.prompts is None:
        result.messages.append(
            "no prompt column (conversation_a or prompt; set --prompt-col), so topic, style "
            "and prediction steps were skipped"
        )
        return
    has_text = np.asarray([bool(t) for t in result.battles.prompts.tolist()], dtype=bool)
    result.topics = _topic_step(result, has_text, stage)
    user_topics, user_style, names, keep = _profile_step(result, has_text, stage)
    if keep.size < 4:
        result.messages.append(
            f"only {keep.size} analysed users have prompts; style clusters and predictions "
            "need at least 4 and were skipped"
        )
        return
    result.feature_users = keep
    result.user_topics = user_topics[keep] if result.topics is not None else None
    result.user_style = user_style[keep]
    result.style_names = names
    x = np.hstack([user_topics[keep], user_style[keep]])
    if _degenerate_features(result, x, has_text):
        return
    _meta_style_step(result, user_style[keep], names, stage)
    _prediction_step(result, x, keep, stage, progress)


def _degenerate_features(result: RankAnalysis, x: np.ndarray, has_text: np.ndarray) -> bool:
    """Check the users' ``(U'', T + F)`` features (`feature_check`), record the check, and
    say whether they are degenerate (then meta-styles and prediction are skipped, with a
    message)."""
    prompts = np.unique(result.battles.prompts[has_text].astype(str)).tolist()
    check = feature_check(x, prompts)
    result.feature_check = check
    if check["degenerate"]:
        result.messages.append(
            f"the topic and style features are degenerate ({'; '.join(check['reasons'])}), so "
            "meta-styles, style clusters and the prediction were skipped: a difference from "
            "the mean predictor would be noise, not a finding"
        )
    return bool(check["degenerate"])


def _topic_step(
    result: RankAnalysis, has_text: np.ndarray, stage: Callable[[str], None]
) -> Topics | None:
    """The topic model of the ``n`` battles' non-empty prompts (``has_text``: ``(n,)``), or
    ``None`` (with a message) when the prompts have no words to model."""
    config = result.config
    clock = time.perf_counter()
    stage("topics")
    topics = None
    try:
        topics = fit_topics(
            result.battles.prompts[has_text].tolist(),
            config.n_topics,
            backend=config.topic_backend,
            seed=config.seed,
            embed_model=config.embed_model,
        )
    except RankingError as exc:  # e.g. prompts that are ids, with no words
        result.messages.append(f"topic model skipped ({exc}); predictions use style features only")
    result.timings["topics"] = time.perf_counter() - clock
    return topics


def _profile_step(
    result: RankAnalysis, has_text: np.ndarray, stage: Callable[[str], None]
) -> tuple[np.ndarray, np.ndarray, list[str], np.ndarray]:
    """Topic and style profiles of the ``U'`` analysed users: means over their battles' prompts.

    Returns:
        ``(user_topics (U', T), user_style (U', F), style names (F), keep)``: ``keep`` indexes
        the analysed users with at least one prompt (``T = 0`` without a topic model).
    """
    battles, config, personal, topics = result.battles, result.config, result.personal, (
        result.topics
    )
    clock = time.perf_counter()
    stage("style features")
    slot = np.full(battles.n_users, -1, dtype=np.int64)
    slot[personal.users] = np.arange(personal.users.size)
    rows = np.flatnonzero(has_text & (slot[battles.user] >= 0))
    texts = battles.prompts[rows]
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
    result.timings["style"] = time.perf_counter() - clock
    return user_topics, user_style, names, keep


def _meta_style_step(
    result: RankAnalysis, profiles: np.ndarray, names: list[str], stage: Callable[[str], None]
) -> None:
    """Meta-styles and style clusters of the ``(U'', F)`` style ``profiles``, in place."""
    config = result.config
    clock = time.perf_counter()
    stage("meta-styles")
    try:
        result.styles = meta_styles(
            profiles,
            names,
            n_components=config.meta_styles,
            method=config.meta_method,
            n_clusters=config.style_clusters,
            seed=config.seed,
        )
    except RankingError as exc:
        result.messages.append(f"meta-styles and style clusters skipped: {exc}")
    result.timings["meta_styles"] = time.perf_counter() - clock


def _prediction_step(
    result: RankAnalysis,
    x: np.ndarray,
    keep: np.ndarray,
    stage: Callable[[str], None],
    progress: Callable[[str, int, int], None],
) -> None:
    """Predict the per-user Elo and BT vectors of users ``keep`` from features ``x``
    ``(U'', T + F)``, with the shuffled-features controls, in place; ``progress`` hears of
    each fitted net."""
    config, personal = result.config, result.personal
    clock = time.perf_counter()
    stage("prediction")
    folds = min(config.folds, keep.size)
    if keep.size < max(folds, 4) or folds < 2:
        result.messages.append(f"too few users with prompts ({keep.size}) for the prediction")
        return
    specs = {
        "elo": PredictorSpec(kind="ensemble", members=config.members, folds=folds),
        "bt": PredictorSpec(kind="single", folds=folds),
    }
    targets = {"elo": personal.elo[keep], "bt": personal.bt[keep]}
    runs = 2 if config.shuffle_control else 1
    total = runs * folds * (config.members + 1)  # the Elo ensemble, then one BT net
    done = 0

    def fitted() -> None:
        nonlocal done
        done += 1
        progress("prediction", done, total)

    for name, spec in specs.items():
        result.predictions[name] = predict_scores(
            x, targets[name], spec, target=name, seed=config.seed, on_fit=fitted
        )
        if config.shuffle_control:
            result.predictions[f"{name}_shuffled"] = predict_scores(
                x,
                targets[name],
                spec,
                target=name,
                seed=config.seed,
                shuffle_features=True,
                on_fit=fitted,
            )
    result.timings["prediction"] = time.perf_counter() - clock
