"""CODuel: the paper's method (see ``policy.py``) and its components."""

from prefduel.policies.coduel.policy import CODuel

__all__ = ["CODuel"]
