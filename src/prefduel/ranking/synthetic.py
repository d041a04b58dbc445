"""A seeded synthetic Chatbot-Arena log with planted per-user heterogeneity.

Users are drawn from a few *taste clusters*. Cluster 0 holds the plurality and has the "global"
taste. The other clusters come in opposed pairs of *niche* tastes (cluster 1 and cluster 2 are
exact opposites, so are 3 and 4, ...), each pair orthogonal to the global taste and to the other
pairs; with equal shares within a pair, the niches cancel in the aggregate and the global
ranking is cluster 0's. Each user's model strengths are their cluster's taste plus a small
personal offset, and their votes follow Bradley-Terry with ties. Each cluster also has its own
*voice*: what it asks about and how (coders paste code and ask why; storytellers are polite,
dramatic and exclamatory; the math crowd is terse with digits; a fourth voice asks
general-knowledge questions). So:

- users of cluster 0 should correlate highly with the global ranking, the others not (near
  zero on average: their tastes are orthogonal to it);
- topic and style profiles carry the cluster, so a user's scores are predictable from them --
  and not once the features are shuffled across users.

The output is a pandas DataFrame in Arena's format (``model_a, model_b, winner, judge, tstamp,
conversation_a``) and the planted truth.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from prefduel.core.rng import stream
from prefduel.ranking import _deps
from prefduel.ranking.errors import RankingError

_VOICES: tuple[dict[str, Any], ...] = (
    {  # 0: coders
        "words": {
            "lang": ["Python", "JavaScript", "Rust", "SQL", "Go", "C++", "bash"],
            "noun": [
                "function",
                "array",
                "dictionary",
                "database query",
                "API client",
                "regex",
                "class",
                "loop",
                "unit test",
                "docker container",
            ],
            "verb": ["sort", "parse", "debug", "optimize", "refactor", "serialize"],
            "error": ["a TypeError", "a segfault", "an IndexError", "a timeout", "a null pointer"],
        },
        "templates": [
            "How do I {verb} a {noun} in {lang}?\n```\nfor x in items:\n    {verb}(x)\n```",
            "Why does my {lang} {noun} throw {error}? def run(): return {noun}()",
            "{verb} this {lang} {noun}: `x = [i for i in range(10)]`; it throws {error}",
            "What is the fastest way to {verb} a {noun} in {lang}? Code please.",
        ],
    },
    {  # 1: storytellers
        "words": {
            "adj": ["dramatic", "magical", "heartbreaking", "whimsical", "epic", "romantic"],
            "noun": [
                "a dragon",
                "the ocean",
                "a lost castle",
                "first love",
                "a haunted forest",
                "a starship captain",
                "an old lighthouse",
                "a talking cat",
            ],
            "role": ["bard", "pirate queen", "wizard", "Shakespearean actor", "fairy godmother"],
        },
        "templates": [
            "Please write a {adj} poem about {noun}! Thank you so much!!",
            "Imagine you are a {role}. Tell me a {adj} story about {noun}... Make it vivid!",
            "Hello! Could you please write {adj} song lyrics about {noun}? Thanks a lot!",
            "Pretend to be a {role} and describe {noun} in a {adj} way, please!",
        ],
    },
    {  # 2: math, terse
        "words": {
            "a": [str(i) for i in range(2, 20)],
            "b": [str(i) for i in range(3, 40)],
            "n": [str(i) for i in range(2, 9)],
        },
        "templates": [
            "solve {a}x + {b} = {n}",
            "integral of x^{n} * e^({a}x) dx",
            "derivative of sin({a}x) / x^{n}",
            "{a} * {b} mod {n} =",
            "eigenvalues of [[{a}, {n}], [{n}, {b}]]",
        ],
    },
    {  # 3: general knowledge
        "words": {
            "place": ["France", "Japan", "Brazil", "Kenya", "Canada", "Egypt", "Norway"],
            "thing": ["the economy", "the history", "the climate", "the cuisine", "the language"],
        },
        "templates": [
            "What is the capital of {place}?",
            "Tell me about {thing} of {place}.",
            "Which is larger, {place} or {place}? Why?",
            "Summarize {thing} of {place} in three sentences.",
        ],
    },
)


@dataclass(frozen=True)
class SyntheticTruth:
    """What `synthetic_arena` planted.

    Attributes:
        models: ``M`` model names.
        users: ``U`` user ids.
        cluster: ``(U,)`` taste cluster of each user (0 = the global taste).
        taste: ``(C, M)`` cluster tastes (logit strengths).
        strengths: ``(U, M)`` each user's true strengths.
        voice: ``(U,)`` prompt voice of each user (equals the cluster, modulo the voices).
    """

    models: tuple[str, ...]
    users: tuple[str, ...]
    cluster: np.ndarray
    taste: np.ndarray
    strengths: np.ndarray
    voice: np.ndarray


def synthetic_arena(
    n_users: int = 120,
    n_models: int = 10,
    *,
    votes: tuple[int, int] = (30, 60),
    cluster_shares: tuple[float, ...] = (0.5, 0.25, 0.25),
    spread: float = 2.0,
    user_noise: float = 0.3,
    tie_rate: float = 0.08,
    prompt_mix: float = 0.1,
    prompts: bool = True,
    seed: int = 0,
) -> tuple[Any, SyntheticTruth]:
    """Generate an Arena-format battle log with users from taste clusters.

    Args:
        n_users: Users ``U``.
        n_models: Models ``M`` (named ``model-00`` ...).
        votes: Inclusive range of battles per user.
        cluster_shares: Share of users in each cluster (normalized); cluster 0 has the global
            taste, clusters ``2j+1`` and ``2j+2`` a pair of opposed niche tastes orthogonal to
            it (give a pair equal shares for the niches to cancel in the global ranking).
        spread: Strengths of the global taste span ``[-spread, spread]`` logits.
        user_noise: s.d. of each user's personal offsets (logits).
        tie_rate: Probability of a tie (half ``tie``, half ``tie (bothbad)``).
        prompt_mix: Probability that a prompt is written in another cluster's voice.
        prompts: Include ``conversation_a`` (off for fast, large logs).
        seed: Root seed (through `prefduel.core.rng.stream`).

    Returns:
        ``(frame, truth)``: a pandas DataFrame of ``sum(votes)`` battles in time order with
        columns ``model_a, model_b, winner, judge, tstamp`` (and ``conversation_a``), and the
        `SyntheticTruth`.
    """
    _deps.pandas()  # a missing pandas is reported before anything else
    shares = _check_settings(n_users, n_models, votes, cluster_shares)
    rng = stream(seed, "ranking", "synthetic")
    models = tuple(f"model-{i:02d}" for i in range(n_models))
    users = tuple(f"user-{i:05d}" for i in range(n_users))
    taste, cluster, strengths = _users(shares, n_users, n_models, spread, user_noise, rng)
    drawn = _votes(strengths, votes, tie_rate, rng)
    frame = _frame(models, users, drawn)
    voice = cluster % len(_VOICES)
    if prompts:
        texts = _prompts(voice[drawn.user[drawn.order]], rng, prompt_mix)
        names = frame["model_a"].tolist()
        frame["conversation_a"] = [
            [{"role": "user", "content": t}, {"role": "assistant", "content": f"({m} answers)"}]
            for t, m in zip(texts, names, strict=True)
        ]
    truth = SyntheticTruth(
        models=models,
        users=users,
        cluster=cluster,
        taste=taste,
        strengths=strengths,
        voice=voice,
    )
    return frame, truth


#: The settings of the sample vote log shipped as ``examples/battles.csv`` (`sample_battles`).
SAMPLE_SETTINGS: dict[str, Any] = {"n_users": 48, "n_models": 8, "votes": (25, 40), "seed": 0}


def sample_battles() -> Any:
    """The sample vote log shipped as ``examples/battles.csv``, as a pandas DataFrame.

    `synthetic_arena` with `SAMPLE_SETTINGS`: 48 users from three taste clusters, 8 models,
    25-40 votes per user (1,578 battles), in Arena's columns ``model_a, model_b, winner,
    judge, tstamp`` with timestamps in whole seconds, and each battle's prompt as plain text in
    a ``prompt`` column (Arena's ``conversation_a`` turns would triple the file).
    ``write_battles(sample_battles(), "battles.csv")`` writes that file again, byte for byte.

    Returns:
        The battles in time order.
    """
    frame, _ = synthetic_arena(**SAMPLE_SETTINGS)
    frame["tstamp"] = frame["tstamp"].round().astype("int64")
    frame["prompt"] = [turns[0]["content"] for turns in frame.pop("conversation_a")]
    return frame


def _check_settings(
    n_users: int, n_models: int, votes: tuple[int, int], cluster_shares: tuple[float, ...]
) -> np.ndarray:
    """The cluster shares as an array ``(C,)``, after checking every size of the log."""
    if n_users < 1 or n_models < 2 or votes[0] < 1 or votes[1] < votes[0]:
        raise RankingError(
            f"need n_users >= 1, n_models >= 2 and 1 <= votes[0] <= votes[1], got {n_users}, "
            f"{n_models}, {votes}"
        )
    shares = np.asarray(cluster_shares, dtype=float)
    if shares.ndim != 1 or shares.size < 1 or np.any(shares < 0) or shares.sum() <= 0:
        raise RankingError(f"cluster_shares must be non-negative with a positive sum: {shares}")
    return shares


def _users(
    shares: np.ndarray,
    n_users: int,
    n_models: int,
    spread: float,
    user_noise: float,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cluster tastes ``(C, M)``, each user's cluster ``(U,)`` and strengths ``(U, M)``."""
    n_clusters = shares.size
    taste = _tastes(n_clusters, n_models, spread, rng)
    counts = np.floor(shares / shares.sum() * n_users).astype(int)
    counts[: n_users - counts.sum()] += 1
    cluster = rng.permutation(np.repeat(np.arange(n_clusters), counts))
    strengths = taste[cluster] + user_noise * rng.normal(size=(n_users, n_models))
    return taste, cluster, strengths


class _Votes(NamedTuple):
    """The ``n`` drawn battles, in the order drawn (grouped by user).

    Attributes:
        user: ``(n,)`` voter of each battle.
        a: ``(n,)`` first model.
        b: ``(n,)`` second model, never ``a``.
        winner: ``(n,)`` Arena winner labels.
        tstamp: ``(n,)`` sorted timestamps.
        order: ``(n,)`` permutation that interleaves the users in time.
    """

    user: np.ndarray
    a: np.ndarray
    b: np.ndarray
    winner: np.ndarray
    tstamp: np.ndarray
    order: np.ndarray


def _votes(
    strengths: np.ndarray, votes: tuple[int, int], tie_rate: float, rng: np.random.Generator
) -> _Votes:
    """Draw each user's battles from Bradley-Terry on their ``(U, M)`` strengths, with ties."""
    n_users, n_models = strengths.shape
    n_votes = rng.integers(votes[0], votes[1] + 1, size=n_users)
    user = np.repeat(np.arange(n_users), n_votes)
    n = user.size
    a = rng.integers(0, n_models, size=n)
    b = (a + rng.integers(1, n_models, size=n)) % n_models
    p_a = 1.0 / (1.0 + np.exp(-(strengths[user, a] - strengths[user, b])))
    draw = rng.random(n)
    tie = draw < tie_rate
    a_wins = rng.random(n) < p_a
    winner = np.where(a_wins, "model_a", "model_b").astype(object)
    winner[tie] = np.where(rng.random(int(tie.sum())) < 0.5, "tie", "tie (bothbad)")
    tstamp = 1.7e9 + np.sort(rng.uniform(0, 30 * 86400, size=n))
    order = rng.permutation(n)  # interleave users in time
    return _Votes(user, a, b, winner, tstamp, order)


def _frame(models: tuple[str, ...], users: tuple[str, ...], drawn: _Votes) -> Any:
    """The battles as an Arena-format DataFrame, users interleaved in time."""
    pd = _deps.pandas()
    order = drawn.order
    return pd.DataFrame(
        {
            "model_a": np.asarray(models, dtype=object)[drawn.a[order]],
            "model_b": np.asarray(models, dtype=object)[drawn.b[order]],
            "winner": drawn.winner[order],
            "judge": np.asarray(users, dtype=object)[drawn.user[order]],
            "tstamp": drawn.tstamp,
        }
    )


def _tastes(n_clusters: int, n_models: int, spread: float, rng: np.random.Generator) -> np.ndarray:
    """``(C, M)`` tastes: a global one, then opposed pairs orthogonal to it and to each other."""
    base = rng.permutation(np.linspace(-spread, spread, n_models))
    taste = np.empty((n_clusters, n_models))
    taste[0] = base
    basis = [base / np.linalg.norm(base), np.ones(n_models) / np.sqrt(n_models)]
    for c in range(1, n_clusters):
        if c % 2 == 0:
            taste[c] = -taste[c - 1]
            continue
        v = rng.permutation(base)
        for e in basis:
            v = v - (v @ e) * e
        norm = np.linalg.norm(v)
        if norm < 1e-9:  # more pairs than dimensions: fall back to a fresh permutation
            v, norm = rng.permutation(base), np.linalg.norm(base)
        v = v / norm
        basis.append(v)
        taste[c] = v * np.linalg.norm(base)
    return taste


def _prompts(voices: np.ndarray, rng: np.random.Generator, mix: float) -> list[str]:
    """One prompt per battle in the given voice (another voice with probability ``mix``)."""
    other = rng.integers(0, len(_VOICES), size=voices.size)
    use = np.where(rng.random(voices.size) < mix, other, voices)
    picks = rng.random((voices.size, 8))
    out = []
    for i, v in enumerate(use.tolist()):
        spec = _VOICES[v]
        templates = spec["templates"]
        template = templates[int(picks[i, 0] * len(templates))]
        fill = {
            key: words[int(picks[i, 1 + j] * len(words))]
            for j, (key, words) in enumerate(spec["words"].items())
        }
        out.append(template.format(**fill))
    return out
