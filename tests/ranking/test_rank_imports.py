"""``persona_bench.ranking`` depends only on ``core`` (DESIGN section 1) and imports its optional
packages lazily, so ``import persona_bench.ranking`` works on a base install."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import persona_bench.ranking

SRC = Path(persona_bench.ranking.__file__).parent


def test_ranking_imports_only_core_and_itself():
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = ["<relative>" if node.level else (node.module or "")]
            for name in names:
                if name == "<relative>" or (
                    name.startswith("persona_bench.")
                    and name.split(".")[1] not in ("core", "ranking")
                ):
                    offenders.append(f"{path.name}: {name}")
    assert offenders == []


def test_optional_packages_are_imported_lazily():
    code = (
        "import json, sys, persona_bench.ranking\n"
        "heavy = ('pandas', 'sklearn', 'matplotlib', 'pyarrow')\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in heavy)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []
