"""Core: errors, seeded random streams, registries, Bradley-Terry and regret math.

This subpackage imports nothing else of persona_bench.
"""

from persona_bench.core.errors import (
    LockedRosterError,
    PersonaBenchError,
    PolicyError,
    ResultsFileError,
    SpecError,
    UnknownIdError,
    WorldFormatError,
)
from persona_bench.core.registry import Registry, Spec, parse_spec
from persona_bench.core.rng import stable_key, stream

__all__ = [
    "LockedRosterError",
    "PersonaBenchError",
    "PolicyError",
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
