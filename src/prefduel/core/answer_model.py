"""The published answer model of preference questions, as probabilities of each answer.

One model serves both sides: worlds draw their stored answers from it
(`prefduel.worlds.asking.answer_bank`) and policies read answers through it. Every function
takes *latents* already in logits, i.e. the student's utilities times the judge's ``beta`` and
divided by the answer noise:

- ``level``: an ordered logit, 5 answers (0 strongly not .. 4 strongly yes): the answer is the
  number of `LEVEL_CUTS` below ``latent + logistic noise``;
- ``pair`` (a, b): 2 answers, 1 (a) with probability ``sigmoid(latent)``, latent the utility gap
  ``a - b``;
- ``least``: K answers, persona ``p`` with probability ``softmax(-latent)_p``, latent the
  utilities of the K personas.
"""

from __future__ import annotations

import numpy as np

from prefduel.core.btl import sigmoid

#: Cut points of the ordered logit of a ``level`` answer (5 levels).
LEVEL_CUTS = (-1.5, -0.5, 0.5, 1.5)
#: The answer noise of the published default: the noise of one click.
DEFAULT_ANSWER_NOISE = 1.0


def level_probabilities(latent: np.ndarray) -> np.ndarray:
    """``(..., 5)`` probability of each ``level`` answer given ``latent`` ``(...)``."""
    latent = np.asarray(latent, dtype=float)
    below = sigmoid(np.asarray(LEVEL_CUTS) - latent[..., None])  # P(answer <= j), j < 4
    shape = (*latent.shape, 1)
    cumulative = np.concatenate([np.zeros(shape), below, np.ones(shape)], axis=-1)
    return np.diff(cumulative, axis=-1)


def pair_probabilities(latent: np.ndarray) -> np.ndarray:
    """``(..., 2)`` probability of answer 0 (the second tutor) and 1 (the first)."""
    first = sigmoid(np.asarray(latent, dtype=float))
    return np.stack([1.0 - first, first], axis=-1)


def least_probabilities(latent: np.ndarray) -> np.ndarray:
    """``(..., K)`` probability that each persona is named least wanted, given the
    utilities ``latent`` ``(..., K)``."""
    logits = -np.asarray(latent, dtype=float)
    logits = logits - logits.max(axis=-1, keepdims=True)
    weights = np.exp(logits)
    return weights / weights.sum(axis=-1, keepdims=True)


def level_direction(loadings: np.ndarray) -> np.ndarray:
    """``range(l) (l - mean l) / |l - mean l|^2`` (K,) for a ``level`` question's loadings
    ``l``: its product with the personas' utilities is the answer model's gap, the least-squares
    slope of the utilities on ``l`` times the range of ``l`` (what the most over the least
    ``l``-styled persona is worth)."""
    loadings = np.asarray(loadings, dtype=float)
    centred = loadings - loadings.mean()
    norm = float(centred @ centred)
    if norm == 0.0:
        return np.zeros_like(loadings)
    return centred * float(loadings.max() - loadings.min()) / norm


def answer_entropy(probs: np.ndarray) -> np.ndarray:
    """``(...)`` entropy in nats of each answer distribution ``probs`` ``(..., answers)``."""
    return -(probs * np.log(np.maximum(probs, 1e-300))).sum(axis=-1)
