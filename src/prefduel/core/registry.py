"""Registries by id, with settings parsed from spec strings.

A spec string names a registered entry and optional keyword settings::

    coduel                     -> Spec("coduel", {})
    coduel:gate=off,bank=16    -> Spec("coduel", {"gate": "off", "bank": 16})
    notransfer:rule=ts         -> Spec("notransfer", {"rule": "ts"})

Values are parsed as int, then float, then kept as strings; ``true``/``false`` become bools.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from prefduel.core.errors import SpecError, UnknownIdError

T = TypeVar("T")

_ID_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")
_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _parse_value(text: str) -> Any:
    low = text.lower()
    if low == "true":
        return True
    if low == "false":
        return False
    try:
        return int(text)
    except ValueError:
        pass
    try:
        number = float(text)
    except ValueError:
        return text
    return number if math.isfinite(number) else text


def _format_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass(frozen=True)
class Spec:
    """A parsed spec: an id and its keyword settings."""

    id: str
    settings: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        """Canonical form: settings sorted by key, so equal specs print identically."""
        if not self.settings:
            return self.id
        body = ",".join(f"{k}={_format_value(v)}" for k, v in sorted(self.settings.items()))
        return f"{self.id}:{body}"


def parse_settings(text: str, *, where: str = "") -> dict[str, Any]:
    """Parse ``key=value,key=value`` into a dict (values typed as in `parse_spec`)."""
    settings: dict[str, Any] = {}
    context = f" in {where!r}" if where else ""
    if not text.strip():
        raise SpecError(f"empty settings after ':'{context}; expected key=value[,key=value...]")
    for part in text.split(","):
        if "=" not in part:
            raise SpecError(f"setting {part!r}{context} is not of the form key=value")
        key, value = (s.strip() for s in part.split("=", 1))
        if not _KEY_RE.match(key):
            raise SpecError(f"setting name {key!r}{context} is not a valid name")
        if value == "":
            raise SpecError(f"setting {key!r}{context} has no value")
        if key in settings:
            raise SpecError(f"setting {key!r}{context} is given twice")
        settings[key] = _parse_value(value)
    return settings


def parse_spec(text: str) -> Spec:
    """Parse ``id[:key=value,...]`` into a `Spec`.

    Raises:
        SpecError: if the id or a setting is malformed (the message quotes the culprit).
    """
    text = text.strip()
    ident, sep, rest = text.partition(":")
    ident = ident.strip()
    if not _ID_RE.match(ident):
        raise SpecError(f"malformed spec {text!r}: {ident!r} is not a valid id")
    settings = parse_settings(rest, where=text) if sep else {}
    return Spec(ident, settings)


def split_specs(text: str) -> list[str]:
    """Split a comma-separated list of specs whose settings also use commas.

    ``"random,coduel:gate=off,bank=16,notransfer"`` -> ``["random", "coduel:gate=off,bank=16",
    "notransfer"]``: a piece of the form ``key=value`` (no ``:`` before the ``=``) continues
    the previous spec, so values may contain ``:``.
    """
    specs: list[str] = []
    for piece in (p.strip() for p in text.split(",")):
        if not piece:
            continue
        if "=" in piece and ":" not in piece.split("=", 1)[0] and specs:
            specs[-1] = f"{specs[-1]},{piece}"
        else:
            specs.append(piece)
    return specs


class Registry(Generic[T]):
    """Named factories, looked up by id; ``make(spec)`` builds one with its settings."""

    def __init__(self, kind: str, plural: str | None = None) -> None:
        self.kind = kind
        self.plural = plural or f"{kind}s"
        self._entries: dict[str, Callable[..., T]] = {}

    def register(self, ident: str, factory: Callable[..., T] | None = None):
        """Register ``factory`` under ``ident``; usable as a decorator."""

        def _add(obj: Callable[..., T]) -> Callable[..., T]:
            if not _ID_RE.match(ident):
                raise SpecError(f"{ident!r} is not a valid {self.kind} id")
            if ident in self._entries and self._entries[ident] is not obj:
                raise SpecError(f"{self.kind} id {ident!r} is already registered")
            self._entries[ident] = obj
            return obj

        return _add(factory) if factory is not None else _add

    def __contains__(self, ident: object) -> bool:
        return ident in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._entries))

    def ids(self) -> list[str]:
        """Registered ids, sorted."""
        return sorted(self._entries)

    def get(self, ident: str) -> Callable[..., T]:
        """Return the factory registered under ``ident``.

        Raises:
            UnknownIdError: listing the known ids and the closest match.
        """
        try:
            return self._entries[ident]
        except KeyError:
            close = difflib.get_close_matches(ident, self._entries, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            known = ", ".join(self.ids())
            raise UnknownIdError(
                f"unknown {self.kind} {ident!r}. Known {self.plural}: {known}.{hint}"
            ) from None

    def make(self, spec: str | Spec, **extra: Any) -> T:
        """Build the entry named by ``spec`` with its settings (and ``extra`` keywords)."""
        parsed = parse_spec(spec) if isinstance(spec, str) else spec
        factory = self.get(parsed.id)
        try:
            return factory(**parsed.settings, **extra)
        except TypeError as exc:
            raise SpecError(f"cannot build {self.kind} {str(parsed)!r}: {exc}") from exc
