"""Errors of the ranking subpackage. Every message says what was expected, what arrived, where."""

from __future__ import annotations

from prefduel.core.errors import PrefduelError


class BattleFormatError(PrefduelError, ValueError):
    """A battle log is unreadable or not in the expected shape (columns, labels, encoding).

    The message names the file, the column or row, and the option that would change the outcome
    (``--user-col``, ``--winner-labels``, ``--encoding-errors`` ...).
    """


class MissingDependencyError(PrefduelError, ImportError):
    """An optional package needed by the requested feature is not installed."""


class RankingError(PrefduelError, ValueError):
    """An analysis step cannot run on the data it was given (too few users, no prompts ...)."""
