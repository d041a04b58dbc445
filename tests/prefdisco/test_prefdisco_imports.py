"""``prefdisco`` depends on ``core`` and ``llm`` only, and loads no ``openai`` SDK by itself."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import persona_bench.prefdisco

PACKAGE = Path(persona_bench.prefdisco.__file__).parent


def test_prefdisco_imports_only_core_llm_and_itself():
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = ["<relative>"] if node.level else [node.module or ""]
            for name in names:
                parts = name.split(".")
                if name == "<relative>" or (
                    parts[0] == "persona_bench"
                    and len(parts) > 1
                    and parts[1] not in ("core", "llm", "prefdisco")
                ):
                    offenders.append(f"{path.name}: {name}")
    assert offenders == []


def test_importing_prefdisco_and_its_command_does_not_load_openai():
    code = (
        "import json, sys\n"
        "import persona_bench.prefdisco, persona_bench.cli.prefdisco_cmd\n"
        "print(json.dumps(sorted(m for m in ('openai', 'httpx2') if m in sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []
