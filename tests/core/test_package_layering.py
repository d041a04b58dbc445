"""Subpackages import only the layers below them (docs/design.md, section 1): a layering test
for every subpackage, from each module's import statements, function-level imports included
(relative imports are refused too, so every dependency is spelled out)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

#: subpackage -> the prefduel subpackages it may import (besides itself and the root package,
#: which holds only ``__version__``): core at the bottom, policies never see worlds, results
#: (stats) are read above the runner, and nothing but the CLI imports the CLI.
ALLOWED = {
    "core": set(),
    "worlds": {"core"},
    "policies": {"core"},
    "llm": {"core"},
    "ranking": {"core"},
    "runner": {"core", "worlds", "policies"},
    "stats": {"core", "worlds", "policies", "runner"},
    "prefdisco": {"core", "llm"},
    "datagen": {"core", "llm", "worlds"},
    # a fitted model of a vote log (ranking) becomes a world (worlds) here, and nowhere else
    "voteworlds": {"core", "worlds", "ranking"},
    "pages": {"core", "worlds", "policies", "runner", "stats"},
    "report": {"core", "worlds", "policies", "runner", "stats", "pages"},
    "cli": {
        "core", "worlds", "policies", "llm", "ranking", "runner", "stats", "prefdisco",
        "datagen", "pages", "report", "voteworlds",
    },
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


def test_the_table_covers_every_subpackage_and_is_acyclic():
    root = Path(importlib.import_module("prefduel").__file__).parent
    packages = {p.name for p in root.iterdir() if (p / "__init__.py").is_file()}
    assert set(ALLOWED) == packages, "add the new subpackage to ALLOWED with its layer"
    order: list[str] = []
    while len(order) < len(ALLOWED):  # peel off packages whose allowed imports are all placed
        ready = [p for p in ALLOWED if p not in order and ALLOWED[p] <= set(order)]
        assert ready, f"cycle among {sorted(set(ALLOWED) - set(order))}"
        order += sorted(ready)


def test_the_root_package_imports_no_subpackage():
    init = Path(importlib.import_module("prefduel").__file__)
    tree = ast.parse(init.read_text(encoding="utf-8"))
    imports = [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]
    assert not [n for n in imports if "prefduel" in ast.dump(n)]


def test_a_forbidden_layer_is_reported():
    assert any(": prefduel.core" in o for o in offenders("llm", set()))
