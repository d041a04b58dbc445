"""Core: errors, seeded random streams, registries, Bradley-Terry and regret math, the
one-click Laplace step of every Bayesian learner (`prefduel.core.laplace`) and the optional
numba switch of compiled kernels (`prefduel.core.jit`).

This subpackage imports nothing else of prefduel.
"""

from prefduel.core.errors import (
    LockedRosterError,
    PolicyError,
    PrefduelError,
    ResultsFileError,
    SpecError,
    UnknownIdError,
    WorldFormatError,
)
from prefduel.core.registry import Registry, Spec, parse_spec
from prefduel.core.rng import stable_key, stream

__all__ = [
    "LockedRosterError",
    "PolicyError",
    "PrefduelError",
    "Registry",
    "ResultsFileError",
    "Spec",
    "SpecError",
    "UnknownIdError",
    "WorldFormatError",
    "parse_spec",
    "stable_key",
    "stream",
]
