"""``coduel-seed``: CODuel with every setting as the seed paper states it.

The default ``coduel`` keeps our faster schedule (incremental EM, refits every
``max(10, ceil(0.1 n))`` sessions, A fitted on the last 1,000 users and rescaled to keep the
s.d. of g). The paper states: after each session the mixture is refitted (``em=full``); A is
fitted by logistic regression on *all* choices of the completed sessions (``recal_window=0``),
first after 20 sessions and refitted every 10 (``recal_first=20``, ``recal_every=10``,
``recal_growth=0``), and used as fitted (``recal_scale=off``: the rescale is ours); the pair
rule is the knowledge gradient for strong regret (``pair=kg``); alpha = 20, at most 16 learned
components, z = 0.5 after nmin = 8 sessions, a bank of 16 questions, a ridge of 10 on A'.
Settings the paper does not state keep CODuel's defaults (``prior_var``, ``em_iters``,
``recal_prior``), and the moves it does not describe stay off (``split=off``,
``birth_margin=0``, the seed's birth rule).

``coduel-seed`` is a registration of `CODuel` with these defaults: every setting can still be
changed in a spec (``coduel-seed:gate=off``), and each is checked by CODuel's declarations.
"""

from __future__ import annotations

import inspect
from typing import Any

from prefduel.policies.base import check_settings
from prefduel.policies.coduel.policy import CODuel
from prefduel.policies.loading import POLICIES

#: The settings the seed paper states (see the module docstring), by CODuel's setting names.
SEED_SETTINGS: dict[str, Any] = {
    "population": "on",
    "recal": "on",
    "pair": "kg",
    "gate": "on",
    "alpha": 20.0,
    "components": 16,
    "z": 0.5,
    "nmin": 8,
    "bank": 16,
    "ridge": 10.0,
    "recal_first": 20,
    "recal_every": 10,
    "recal_growth": 0.0,
    "recal_window": 0,
    "recal_scale": "off",
    "em": "full",
    "split": "off",
    "birth_margin": 0.0,
}
check_settings(CODuel, SEED_SETTINGS)  # every name declared and every value valid


def _signature_with_defaults(defaults: dict[str, Any]) -> inspect.Signature:
    """`CODuel`'s constructor signature with ``defaults`` in place of its own (so a spec's
    unknown setting is refused with the list of settings and these defaults)."""
    signature = inspect.signature(CODuel.__init__)
    params = [
        p.replace(default=defaults[p.name]) if p.name in defaults else p
        for p in signature.parameters.values()
    ]
    return signature.replace(parameters=params)


@POLICIES.register("coduel-seed")
class CODuelSeed(CODuel):
    """CODuel with the seed paper's settings (`SEED_SETTINGS`; the module docstring says
    which they are and which CODuel defaults it keeps). Takes every setting of `CODuel`."""

    name = "coduel-seed"

    def __init__(self, **settings: Any) -> None:
        super().__init__(**{**SEED_SETTINGS, **settings})

    __init__.__signature__ = _signature_with_defaults(SEED_SETTINGS)  # type: ignore[attr-defined]
