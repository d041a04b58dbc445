"""Bounds and field types shared by the sections of a PrefDisco study config."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field, Strict

from prefduel.core.rng import SEED_LIMIT
from prefduel.core.schema import Integer, Number


def _named(value: str) -> str:
    if not value:
        raise ValueError("expected a model name, got ''")
    return value


#: Upper bounds of the sizes a config can ask for, checked before anything is allocated or
#: any call made. Each is far above what a study uses and far below what exhausts a machine.
MAX_PERSONAS = 10_000
MAX_INSTANCES = 100_000
MAX_TASK_ITEMS = 1_000_000
MAX_TURNS = 100
MAX_ATTEMPTS = 20
MAX_ATTRIBUTES = 100
MAX_TOKEN_LIMIT = 1_000_000
MAX_IN_FLIGHT = 10_000
MAX_BOOTSTRAP = 100_000

Seed = Annotated[Integer, Field(ge=0, le=SEED_LIMIT - 1)]
Attempts = Annotated[Integer, Field(ge=1, le=MAX_ATTEMPTS)]
Attributes = Annotated[Integer, Field(ge=1, le=MAX_ATTRIBUTES)]
Tokens = Annotated[Integer, Field(ge=1, le=MAX_TOKEN_LIMIT)]
NonNegative = Annotated[Number, Field(ge=0)]
ModelName = Annotated[str, Strict(), AfterValidator(_named)]
Flag = Annotated[bool, Strict()]
