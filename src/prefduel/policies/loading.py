"""Build a policy from a spec: a registered id, a user file, or a module.

Accepted forms (each may end with ``:key=value,...`` settings passed to the constructor)::

    notransfer                     registered id
    notransfer:rule=ts             registered id with settings
    path/to/my_policy.py:MyPolicy  class in a Python file
    my_package.policies:MyPolicy   class in an importable module

The spec (canonical, settings sorted) is a policy's identity in result rows and filters;
`display_name` and `display_names` give the short label the report and the pages print.
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import importlib
import importlib.util
import inspect
import os
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prefduel.core.errors import SpecError
from prefduel.core.registry import Registry, Spec, parse_settings, parse_spec

#: Registry of built-in policies.
POLICIES: Registry[Any] = Registry("policy", "policies")

_CLASS_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def split_external(text: str) -> tuple[str, str, dict[str, Any]] | None:
    """``file.py:Class[:settings]`` or ``module:Class[:settings]`` -> (target, class, settings)."""
    parts = text.split(":", 2)
    if len(parts) < 2 or not _CLASS_RE.match(parts[1].strip()) or "=" in parts[1]:
        return None
    target, cls = parts[0].strip(), parts[1].strip()
    if target in POLICIES:
        return None
    settings = parse_settings(parts[2], where=text) if len(parts) == 3 else {}
    return target, cls, settings


def _load_file_module(path: Path, spec_text: str):
    if not path.is_file():
        raise SpecError(f"policy {spec_text!r}: file {path} does not exist")
    resolved = path.resolve()
    mod_name = "prefduel_user_" + hashlib.sha1(str(resolved).encode()).hexdigest()[:12]
    if mod_name in sys.modules:
        return sys.modules[mod_name]
    spec = importlib.util.spec_from_file_location(mod_name, resolved)
    if spec is None or spec.loader is None:
        raise SpecError(f"policy {spec_text!r}: cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[mod_name]
        raise SpecError(
            f"policy {spec_text!r}: importing {path} failed: {type(exc).__name__}: {exc}"
        ) from exc
    return module


def resolve_policy(text: str) -> tuple[Any, dict[str, Any], str]:
    """Resolve a spec to ``(factory, settings, canonical spec string)``.

    Raises:
        SpecError: malformed spec, missing file or class, or a failing import.
        UnknownIdError: unknown registered id (the message lists the known ones).
    """
    text = text.strip()
    if not text:
        raise SpecError("empty policy spec")
    external = split_external(text)
    if external is not None:
        target, cls_name, settings = external
        if _is_file_target(target):
            module = _load_file_module(Path(target), text)
        else:
            try:
                module = importlib.import_module(target)
            except ImportError as exc:
                if target in POLICIES or not any(c in target for c in "./"):
                    # looks like a (misspelt) registered id, not a module
                    POLICIES.get(target)
                raise SpecError(
                    f"policy {text!r}: cannot import module {target!r} ({exc})"
                ) from exc
        factory = getattr(module, cls_name, None)
        if factory is None:
            raise SpecError(f"policy {text!r}: {target} has no attribute {cls_name!r}")
        if _is_file_target(target):
            target = os.path.normpath(target)  # ./my.py and my.py name the same policy
        canonical = f"{target}:{cls_name}"
        if settings:
            canonical += ":" + str(Spec("x", settings)).split(":", 1)[1]
        return factory, settings, canonical
    parsed = parse_spec(text)
    return POLICIES.get(parsed.id), parsed.settings, str(parsed)


@dataclass(frozen=True)
class PolicySpec:
    """A policy spec resolved once: its canonical name and how to build it.

    Pickles as its canonical spec and is resolved again where it is unpickled (a worker
    process), since a class from a user file cannot travel by itself.

    Attributes:
        canonical: The canonical spec (settings sorted): the policy's name in result rows.
        factory: The class (or callable) that builds the policy.
        settings: Keyword settings passed to ``factory``.
    """

    canonical: str
    factory: Any = field(compare=False, repr=False)
    settings: dict[str, Any] = field(compare=False, default_factory=dict)

    def build(self) -> Any:
        """A new policy instance.

        Raises:
            SpecError: the constructor rejects the settings, or the object has no ``select``.
        """
        self._check_settings()
        try:
            policy = self.factory(**self.settings)
        except (TypeError, ValueError) as exc:
            raise SpecError(f"cannot build policy {self.canonical!r}: {exc}") from exc
        if not callable(getattr(policy, "select", None)):
            raise SpecError(
                f"policy {self.canonical!r}: {type(policy).__name__} has no select() method"
            )
        return policy

    def _check_settings(self) -> None:
        """Refuse settings the constructor does not take, listing those it does."""
        try:
            params = inspect.signature(self.factory).parameters.values()
        except (TypeError, ValueError):  # not introspectable: let the call decide
            return
        if any(p.kind is p.VAR_KEYWORD for p in params):
            return
        named = [p for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        known = [p.name for p in named]
        unknown = [k for k in self.settings if k not in known]
        if not unknown:
            return
        listed = ", ".join(
            p.name if p.default is p.empty else f"{p.name}={p.default!r}" for p in named
        )
        close = difflib.get_close_matches(unknown[0], known, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise SpecError(
            f"policy {self.canonical!r}: unknown setting {unknown[0]!r}{hint}; "
            f"its settings: {listed or 'none'}"
        )

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return resolve_spec, (self.canonical,)


def resolve_spec(spec: str | PolicySpec) -> PolicySpec:
    """Resolve a spec string (see the module docstring for the forms) once.

    Raises:
        SpecError: malformed spec, missing file or class, or a failing import.
        UnknownIdError: unknown registered id (the message lists the known ones).
    """
    if isinstance(spec, PolicySpec):
        return spec
    factory, settings, canonical = resolve_policy(spec)
    return PolicySpec(canonical, factory, settings)


def canonical_spec(text: str) -> str:
    """The canonical form of a policy spec (settings sorted), used as its key in results."""
    return resolve_spec(text).canonical


def load_policy(text: str) -> Any:
    """Instantiate the policy named by ``text`` (see the module docstring for the forms).

    Raises:
        SpecError, UnknownIdError: with the culprit named.
    """
    return resolve_spec(text).build()


#: Result rows of references are named ``ref:<id>``; they are no user policies.
_REFERENCE_PREFIX = "ref:"


def _is_file_target(target: str) -> bool:
    return target.endswith(".py") or "/" in target or "\\" in target


def _source_path(target: str) -> Path | None:
    """The source file of a policy's file or module target, found without running it."""
    if _is_file_target(target):
        return Path(target)
    try:
        found = importlib.util.find_spec(target)  # may import parent packages, not the module
    except (ImportError, ValueError, AttributeError):
        return None
    if found is None or not found.origin or not found.origin.endswith(".py"):
        return None
    return Path(found.origin)


def _declared_name(target: str, cls_name: str) -> str | None:
    """The string assigned to ``name`` in the body of class ``cls_name`` of ``target``.

    Read from the source (the user's file is never run for a label), so a name that is computed
    or inherited is not seen and the caller falls back to the class name.
    """
    path = _source_path(target)
    if path is None:
        return None
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return None
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls_name]
    if not classes:
        return None
    name = None
    for item in classes[-1].body:  # a later definition of the class replaces an earlier one
        if isinstance(item, ast.Assign):
            targets = item.targets
        elif isinstance(item, ast.AnnAssign):
            targets = [item.target]
        else:
            continue
        if any(isinstance(t, ast.Name) and t.id == "name" for t in targets):
            value = item.value
            literal = isinstance(value, ast.Constant) and isinstance(value.value, str)
            name = " ".join(value.value.split()) if literal else None
    return name or None


def _external_parts(spec: str) -> tuple[str, str, dict[str, Any]] | None:
    """``(target, class, settings)`` of a user policy's spec; None for built-ins and references."""
    if spec.startswith(_REFERENCE_PREFIX):
        return None
    try:
        return split_external(spec)
    except SpecError:
        return None


def _settings_suffix(settings: dict[str, Any]) -> str:
    return ":" + str(Spec("x", settings)).split(":", 1)[1] if settings else ""


def display_name(spec: str) -> str:
    """The short label of a policy: a user class's ``name`` with its settings, else the spec.

    ``examples/my_policy.py:RaterWithWins:weight=3`` -> ``rater-with-wins:weight=3`` (the class
    declares ``name = "rater-with-wins"``); a class without a literal ``name``, or a file that
    cannot be read, gives the class name (``RaterWithWins:weight=3``). Built-in policies and
    references are labelled by their spec. Never raises and never runs the user's code. Two
    policies may get one label: use `display_names` to label several at once.
    """
    spec = spec.strip()
    parts = _external_parts(spec)
    if parts is None:
        return spec
    target, cls_name, settings = parts
    return (_declared_name(target, cls_name) or cls_name) + _settings_suffix(settings)


def _qualified(spec: str, label: str, full: bool) -> str:
    """``label (file name)``, or with the whole path or module when ``full``."""
    parts = _external_parts(spec)
    if parts is None:
        return spec
    target = parts[0]
    where = target if full or not _is_file_target(target) else Path(target).name
    return f"{label} ({where})"


def _clashing(labels: dict[str, str]) -> set[str]:
    """Specs whose label is shared with another spec, or is another spec's identity."""
    owners: dict[str, list[str]] = {}
    for spec, label in labels.items():
        owners.setdefault(label, []).append(spec)
    clash = {s for specs in owners.values() if len(specs) > 1 for s in specs}
    clash |= {s for s, label in labels.items() if label != s and label in labels}
    return {s for s in clash if labels[s] != s}  # a policy labelled by its spec keeps it


def display_names(specs: Iterable[str]) -> dict[str, str]:
    """A distinct label for each spec (`display_name`, qualified where two would be confused).

    A label shared by several user policies, or equal to another policy's spec, gets the file
    name (``same (b.py)``), then the whole path or module, and as a last resort the spec itself;
    built-in policies and references keep their spec. So a table or a figure never shows two
    policies under one label.

    Returns:
        ``{spec: label}`` for every spec given (as given).
    """
    labels = {spec: display_name(spec) for spec in dict.fromkeys(specs)}
    short = dict(labels)
    for full in (False, True):
        for spec in _clashing(labels):
            labels[spec] = _qualified(spec, short[spec], full)
    for spec in _clashing(labels):
        labels[spec] = spec
    while clash := _clashing(labels):  # only pathological names get here (label == a spec)
        labels.update({spec: spec for spec in clash})
    return labels
