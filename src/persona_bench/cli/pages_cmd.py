"""``persona-bench play`` and ``persona-bench replay``: placeholder until the pages land."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any


def register(sub: Any) -> dict[str, Callable[[argparse.Namespace, Any], int]]:
    """Add this module's subcommands to ``sub``; return ``{name: handler}``."""
    return {}
