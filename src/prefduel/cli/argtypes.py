"""Argument types shared by the ``prefduel`` subcommands (argparse ``type=`` callables).

Each raises `argparse.ArgumentTypeError`, which argparse turns into a usage error naming
the option and the value.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

from prefduel.core.rng import SEED_LIMIT


def int_at_least(low: int, high: int | None = None) -> Callable[[str], int]:
    """An integer type accepting values ``>= low`` (and ``<= high`` when given)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"expected an integer >= {low}, got {value}")
        if high is not None and value > high:
            raise argparse.ArgumentTypeError(f"expected an integer <= {high:,}, got {value:,}")
        return value

    parse.__name__ = f"int_at_least_{low}"
    return parse


#: A positive integer (``>= 1``).
positive_int = int_at_least(1)
#: A non-negative integer (``>= 0``).
non_negative_int = int_at_least(0)
#: A seed: random streams take 32-bit seeds, ``0 <= seed < 2**32``.
seed_int = int_at_least(0, SEED_LIMIT - 1)


def positive_float(text: str) -> float:
    """A finite number ``> 0``."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}") from None
    if not value > 0 or not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number > 0, got {text!r}")
    return value
