"""Policies: the protocol, the checker, loading by spec, and the built-in policies."""

from prefduel.policies import (  # noqa: F401  (registers policies)
    asking,
    baselines,
    coduel,
    linear,
    random_pairs,
)
from prefduel.policies.base import Policy, PolicyProtocol, check_policy, validate_pair
from prefduel.policies.loading import (
    POLICIES,
    PolicySpec,
    canonical_spec,
    load_policy,
    resolve_policy,
    resolve_spec,
)

__all__ = [
    "POLICIES",
    "Policy",
    "PolicyProtocol",
    "PolicySpec",
    "canonical_spec",
    "check_policy",
    "load_policy",
    "resolve_policy",
    "resolve_spec",
    "validate_pair",
]
