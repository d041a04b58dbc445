"""Errors of the datagen subpackage. Every message says what was expected, what arrived, where."""

from __future__ import annotations

from prefduel.core.errors import PrefduelError


class DatagenError(PrefduelError):
    """Base class of the errors datagen raises on purpose."""


class DatagenConfigError(DatagenError, ValueError):
    """A datagen config is invalid; the message names the file and the field."""


__all__ = ["DatagenConfigError", "DatagenError"]
