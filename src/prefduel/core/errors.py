"""Error types. Every message says what was expected, what arrived, and where."""


class PrefduelError(Exception):
    """Base class of every error prefduel raises on purpose."""


class SpecError(PrefduelError, ValueError):
    """A spec string such as ``coduel:gate=off,bank=16`` could not be parsed or applied."""


class UnknownIdError(PrefduelError, KeyError):
    """An id (roster, policy, ...) is not registered; the message lists the known ids."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class PolicyError(PrefduelError, RuntimeError):
    """A policy broke the protocol or raised; names policy, world, seed, arrival and round."""


class WorldFormatError(PrefduelError, ValueError):
    """A stored world is missing, corrupt, or not in the documented format."""


class LockedRosterError(PrefduelError, PermissionError):
    """A held-out (``test-*``) roster was requested without ``allow_test=True``."""


class ResultsFileError(PrefduelError, ValueError):
    """A results file has a corrupt row that cannot be repaired automatically."""
