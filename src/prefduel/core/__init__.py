"""Core: errors, seeded random streams, registries, Bradley-Terry and regret math.

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
