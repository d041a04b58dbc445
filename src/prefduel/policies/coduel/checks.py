"""Validation of CODuel's settings: each bad value raises ValueError naming the setting (the
policy loader turns it into a `prefduel.core.errors.SpecError` naming the spec)."""

from __future__ import annotations

from typing import Any


def _switch(name: str, value: Any) -> bool:
    if value is True or value == "on":
        return True
    if value is False or value == "off":
        return False
    raise ValueError(f"{name} must be on or off, got {value!r}")


def _choice(name: str, value: Any, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)}, got {value!r}")
    return value


def _positive(name: str, value: Any, *, integer: bool = False, allow_zero: bool = False) -> Any:
    kinds = (int,) if integer else (int, float)
    ok = isinstance(value, kinds) and not isinstance(value, bool)
    if ok and (value > 0 or (allow_zero and value == 0)):
        return value
    what = "an integer" if integer else "a number"
    bound = ">= 0" if allow_zero else "> 0"
    raise ValueError(f"{name} must be {what} {bound}, got {value!r}")
