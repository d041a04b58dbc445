"""CODuel: the paper's method (see ``policy.py``), its components, ``coduel-seed`` and
``coduel-ask``."""

from prefduel.policies.coduel.ask import CODuelAsk
from prefduel.policies.coduel.policy import CODuel
from prefduel.policies.coduel.seed import CODuelSeed

__all__ = ["CODuel", "CODuelAsk", "CODuelSeed"]
