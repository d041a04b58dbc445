"""Errors of the datagen subpackage. Every message says what was expected, what arrived, where."""

from __future__ import annotations

from typing import Any

from prefduel.core.errors import PrefduelError


class DatagenError(PrefduelError):
    """Base class of the errors datagen raises on purpose."""


class DatagenConfigError(DatagenError, ValueError):
    """A datagen config is invalid; the message names the file and the field."""


class WorldRefusedError(DatagenError):
    """Every call was answered, but the answers cannot make a world (too few valid judge picks,
    too few usable questions). The answers stay cached; ``result`` is the run's
    `prefduel.datagen.results.DatagenResult` (its summary says what was collected)."""

    def __init__(self, message: str, result: Any = None) -> None:
        super().__init__(message)
        self.result = result


__all__ = ["DatagenConfigError", "DatagenError", "WorldRefusedError"]
