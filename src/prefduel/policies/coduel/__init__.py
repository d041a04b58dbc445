"""CODuel: the paper's method (see ``policy.py``), its components, and ``coduel-seed``."""

from prefduel.policies.coduel.policy import CODuel
from prefduel.policies.coduel.seed import CODuelSeed

__all__ = ["CODuel", "CODuelSeed"]
