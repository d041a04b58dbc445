"""CODuel: the paper's method (see ``policy.py``), its components, ``coduel-seed``,
``coduel-restarts`` and ``coduel-ask``."""

from prefduel.policies.coduel.ask import CODuelAsk
from prefduel.policies.coduel.policy import CODuel
from prefduel.policies.coduel.restarted import CODuelRestarts
from prefduel.policies.coduel.seed import CODuelSeed

__all__ = ["CODuel", "CODuelAsk", "CODuelRestarts", "CODuelSeed"]
