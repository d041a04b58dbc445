"""Errors of the PrefDisco subpackage. Every message says what was expected, what arrived, where."""

from __future__ import annotations

from prefduel.core.errors import PrefduelError


class PrefDiscoError(PrefduelError):
    """Base class of the errors `prefduel.prefdisco` raises on purpose."""


class TaxonomyError(PrefDiscoError, ValueError):
    """The attribute taxonomy is malformed, or an attribute id / value is not in it."""


class TaskFormatError(PrefDiscoError, ValueError):
    """A task file is missing or a line is not in the expected shape (names file and line)."""


class ConfigError(PrefDiscoError, ValueError):
    """A PrefDisco config (YAML or flags) has an unknown key or a bad value (names the key)."""


class DatasetError(PrefDiscoError, ValueError):
    """A generated dataset or run folder is incomplete or inconsistent (names the file)."""


class DatasetWarning(UserWarning):
    """A dataset or run file had something harmless to drop: a row repeated exactly (counted
    once), a field named twice with one value, or a last line cut by an interrupted write."""


class ScoringError(PrefDiscoError, ValueError):
    """A metric got inputs it cannot score (missing scores, weights not summing to 1, ...)."""


class EpisodeError(PrefDiscoError, RuntimeError):
    """An episode could not finish because an LLM call failed after its retries.

    Nothing is stored for the episode, so running the same command again retries it.
    """
