"""The CLI stays a thin layer: parse arguments, build a config, call one library function, print.

Checked statically on every module of ``prefduel.cli``: no function is longer than
`MAX_FUNCTION_LINES`, and no module does the numerical work itself (no numpy, pandas & co.) or
re-runs cells on its own (`prefduel.runner.trajectories` does that for ``rank --from-run`` and
``replay``).
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

#: The house limit on a function's length, docstring and decorators included.
MAX_FUNCTION_LINES = 60

#: Imports that mean a command computes instead of calling the library.
LIBRARY_ONLY = (
    "numpy",
    "pandas",
    "scipy",
    "sklearn",
    "matplotlib",
    "prefduel.runner.cell",
    "prefduel.runner.trajectories.replay_trajectory",
)

CLI_ROOT = Path(importlib.import_module("prefduel.cli").__file__).parent
CLI_FILES = sorted(CLI_ROOT.glob("*.py"))


def long_functions(source: str, limit: int = MAX_FUNCTION_LINES) -> list[str]:
    """``name (lines)`` of every function or method in ``source`` longer than ``limit`` lines."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            lines = node.end_lineno - first + 1
            if lines > limit:
                found.append(f"{node.name} ({lines} lines)")
    return found


def computing_imports(source: str) -> list[str]:
    """Imports of ``source`` (module-level or inside functions) that are `LIBRARY_ONLY`."""
    names = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names += [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
    return [
        n for n in names if any(n == bad or n.startswith(bad + ".") for bad in LIBRARY_ONLY)
    ]


def test_the_cli_package_has_modules_to_check():
    assert {"main.py", "rank_cmd.py", "pages_cmd.py"} <= {p.name for p in CLI_FILES}


@pytest.mark.parametrize("path", CLI_FILES, ids=lambda p: p.name)
def test_no_cli_function_is_longer_than_the_limit(path: Path):
    assert long_functions(path.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("path", CLI_FILES, ids=lambda p: p.name)
def test_cli_modules_leave_the_computing_to_the_library(path: Path):
    assert computing_imports(path.read_text(encoding="utf-8")) == []


def test_the_checks_catch_a_long_function_and_a_computing_import():
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    source = f"import numpy as np\nfrom prefduel.runner.cell import run_cell\ndef f():\n{body}\n"
    assert long_functions(source) == [f"f ({MAX_FUNCTION_LINES + 1} lines)"]
    assert long_functions(source, limit=MAX_FUNCTION_LINES + 1) == []
    assert computing_imports(source) == [
        "numpy",
        "prefduel.runner.cell",
        "prefduel.runner.cell.run_cell",
    ]
    assert computing_imports("from prefduel.runner.trajectories import replay_cell\n") == []
