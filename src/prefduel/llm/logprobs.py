"""Choice probabilities from token log-probabilities (``logprobs`` / ``top_logprobs``).

A judge that answers one label (``A`` or ``B``) can be asked once with ``logprobs=True,
top_logprobs=N`` instead of k times at temperature 1: at the position where the label is
generated, the endpoint returns the most likely tokens with their log-probabilities, and the
mass on the label tokens, renormalised, is the pick probability (no sampling noise, k times fewer
calls). `choice_probabilities` finds that position (the first generated token that is a label
once quotes, spaces and markdown are stripped, so ``{"pick": "A"}`` of a structured answer works
too) and sums the alternatives that spell each label (``"A"``, ``" A"``, ``"a"``, ...).

It returns None when the reply carries no logprobs, no label position, or no mass on any label;
callers then fall back to sampling (`prefduel.datagen` does, per call).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from prefduel.llm.request import LLMResponse, TokenLogprob

#: Request parameters that ask for log-probabilities of ``n`` alternatives per position.
LOGPROB_PARAMS = ("logprobs", "top_logprobs")


def logprob_params(top: int = 5) -> dict[str, object]:
    """``{"logprobs": True, "top_logprobs": top}`` (OpenAI allows 0-20 alternatives)."""
    if isinstance(top, bool) or not isinstance(top, int) or not 1 <= top <= 20:
        raise ValueError(f"top_logprobs: expected an int in 1..20, got {top!r}")
    return {"logprobs": True, "top_logprobs": top}


def _label(token: str, labels: dict[str, str]) -> str | None:
    """The label a token spells (case-insensitive, without quotes, spaces or markdown)."""
    core = token.strip().strip("\"'*`_()[]{}.:,").strip()
    return labels.get(core.upper())


def choice_probabilities(
    logprobs: Sequence[TokenLogprob] | None, labels: Sequence[str]
) -> dict[str, float] | None:
    """Each label's probability at the first position that generated a label, renormalised
    over the labels.

    Args:
        logprobs: A response's ``logprobs`` (None: the endpoint returned none).
        labels: The labels (e.g. ``("A", "B")``), distinct ignoring case.

    Returns:
        ``{label: probability}`` summing to 1, or None (no logprobs, no label generated, no
        ``top_logprobs`` at its position, or no mass on any label). A label outside the top
        alternatives counts 0.
    """
    if not logprobs:
        return None
    by_upper = {str(label).upper(): str(label) for label in labels}
    for position in logprobs:
        if _label(position.token, by_upper) is None:
            continue
        if not position.top:
            return None  # only the drawn token is known: no distribution to read
        mass = dict.fromkeys(by_upper.values(), 0.0)
        seen = set()
        for token, logprob in position.top:
            label = _label(token, by_upper)
            if label is not None and token not in seen and math.isfinite(logprob):
                seen.add(token)
                mass[label] += math.exp(logprob)
        total = sum(mass.values())
        if total <= 0:
            return None
        return {label: m / total for label, m in mass.items()}
    return None


def response_choice(response: LLMResponse, labels: Sequence[str]) -> dict[str, float] | None:
    """`choice_probabilities` of an answered response (None for a failure)."""
    return choice_probabilities(response.logprobs, labels) if response.ok else None


__all__ = ["LOGPROB_PARAMS", "choice_probabilities", "logprob_params", "response_choice"]
