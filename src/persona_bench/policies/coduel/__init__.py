"""CODuel: the paper's method (see ``policy.py``) and its components."""

from persona_bench.policies.coduel.policy import CODuel

__all__ = ["CODuel"]
