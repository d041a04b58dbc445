"""Subpackages import only the layers below them (docs/design.md, section 1): a layering test
per subpackage, from each module's import statements (relative imports are refused too, so every
dependency is spelled out)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

#: subpackage -> the prefduel subpackages it may import (besides itself)
ALLOWED = {
    "llm": {"core"},
    "ranking": {"core"},
    "prefdisco": {"core", "llm"},
}


def persona_imports(package: str) -> list[tuple[str, str]]:
    """``(file name, imported module)`` for every prefduel or relative import in a
    subpackage."""
    root = Path(importlib.import_module(f"prefduel.{package}").__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = ["<relative>" if node.level else (node.module or "")]
            else:
                continue
            found += [
                (path.name, n) for n in names if n == "<relative>" or n.startswith("prefduel")
            ]
    return found


def offenders(package: str, allowed: set[str]) -> list[str]:
    """Imports of ``package`` outside ``allowed`` (the package root itself is always allowed)."""
    bad = []
    for name, module in persona_imports(package):
        parts = module.split(".")
        if module == "<relative>" or (len(parts) > 1 and parts[1] not in allowed | {package}):
            bad.append(f"{name}: {module}")
    return bad


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_subpackage_imports_only_the_layers_below_it(package):
    assert offenders(package, ALLOWED[package]) == []


def test_a_forbidden_layer_is_reported():
    assert any(": prefduel.core" in o for o in offenders("llm", set()))
