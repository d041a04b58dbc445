"""``prefduel.core`` imports nothing else of prefduel (docs/design.md, section 1)."""

from __future__ import annotations

import ast
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import prefduel
import prefduel.core

SRC = Path(prefduel.__file__).parent


def _core_modules() -> list[str]:
    return sorted(
        f"prefduel.core.{m.name}" for m in pkgutil.iter_modules(prefduel.core.__path__)
    )


def test_importing_core_loads_no_other_subpackage():
    code = (
        "import importlib, json, sys\n"
        "for name in json.loads(sys.argv[1]):\n"
        "    importlib.import_module(name)\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('prefduel'))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, json.dumps(["prefduel.core", *_core_modules()])],
        capture_output=True,
        text=True,
        check=True,
    )
    loaded = json.loads(out.stdout)
    assert "prefduel.core.btl" in loaded  # the import really happened
    assert [m for m in loaded if not m.startswith("prefduel.core")] == ["prefduel"]


def _imported_modules(path: Path) -> set[str]:
    """Every module named by an import statement anywhere in a file (also inside functions)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
        elif isinstance(node, ast.ImportFrom) and node.level > 0:
            names.add("<relative>")
    return names


@pytest.mark.parametrize(
    ("package", "allowed"),
    [
        ("core", {"core"}),
        ("worlds", {"core", "worlds"}),
        ("policies", {"core", "policies"}),
    ],
)
def test_import_direction_in_source(package, allowed):
    """Static check, so that imports inside functions count too."""
    offenders = []
    for path in sorted((SRC / package).rglob("*.py")):
        for mod in _imported_modules(path):
            if mod == "<relative>":
                offenders.append(f"{path.name}: relative import")
            elif mod.startswith("prefduel."):
                sub = mod.split(".")[1]
                if sub not in allowed:
                    offenders.append(f"{path.name}: {mod}")
            elif mod == "prefduel" and package == "core":
                offenders.append(f"{path.name}: prefduel")
    assert offenders == []
