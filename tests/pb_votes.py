"""Small vote logs drawn from the model a world from a vote log fits (the truth is known).

Importable as ``pb_votes`` (``tests/`` is on ``sys.path``). Voter ``u`` votes on a prompt of
category ``c`` by Bradley-Terry on ``beta + gamma_c + delta_u`` with ``delta_u ~ N(0, tau^2)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class Planted:
    """The truth of `planted_log`: strengths per model, per category, per voter."""

    models: list[str]
    categories: list[str]
    voters: list[str]
    beta: np.ndarray
    gamma: np.ndarray
    delta: np.ndarray


def planted_log(
    *,
    voters: int = 120,
    models: int = 6,
    categories: int = 1,
    tau: float = 1.0,
    category_sd: float = 0.8,
    votes: tuple[int, int] = (20, 40),
    extra_models: int = 0,
    seed: int = 0,
) -> tuple[pd.DataFrame, Planted]:
    """An Arena-format log (``model_a, model_b, winner, judge, prompt`` and, with more than one
    category, ``category``) and its truth.

    ``extra_models`` rarely voted models are added (each in about 2% of the battles), so that
    the ``models`` planted ones are the most voted.
    """
    rng = np.random.default_rng(seed)
    k = models + extra_models
    names = [f"model-{i}" for i in range(k)]
    beta = np.linspace(-1.5, 1.5, k)
    gamma = rng.normal(scale=category_sd, size=(categories, k)) if categories > 1 else np.zeros(
        (1, k)
    )
    delta = rng.normal(scale=tau, size=(voters, k))
    count = rng.integers(votes[0], votes[1] + 1, size=voters)
    user = np.repeat(np.arange(voters), count)
    n = user.size
    weights = np.r_[np.ones(models), np.full(extra_models, 0.02 * models)]
    weights = weights / weights.sum()
    a = rng.choice(k, size=n, p=weights)
    b = (a + rng.integers(1, k, size=n)) % k
    c = rng.integers(0, categories, size=n)
    theta = beta + gamma[c] + delta[user]
    rows = np.arange(n)
    p_a = 1.0 / (1.0 + np.exp(-(theta[rows, a] - theta[rows, b])))
    winner = np.where(rng.random(n) < p_a, "model_a", "model_b")
    frame = pd.DataFrame({
        "model_a": np.array(names)[a],
        "model_b": np.array(names)[b],
        "winner": winner,
        "judge": [f"voter-{u:04d}" for u in user],
        "prompt": [f"prompt {i} (category {x})" for i, x in zip(rows, c, strict=True)],
    })
    if categories > 1:
        frame["category"] = [f"cat-{x}" for x in c]
    truth = Planted(
        models=names,
        categories=[f"cat-{x}" for x in range(categories)],
        voters=[f"voter-{u:04d}" for u in range(voters)],
        beta=beta,
        gamma=gamma,
        delta=delta,
    )
    return frame, truth


def write_log(path: Path, **settings) -> tuple[Path, Planted]:
    """`planted_log` written as CSV to ``path``."""
    frame, truth = planted_log(**settings)
    frame.to_csv(path, index=False)
    return path, truth
