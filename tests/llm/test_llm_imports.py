"""``llm`` depends on ``core`` only, and loads the ``openai`` SDK only when a backend needs it."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import persona_bench.llm

LLM = Path(persona_bench.llm.__file__).parent


def test_llm_imports_only_core_and_itself():
    offenders = []
    for path in sorted(LLM.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = ["<relative>"] if node.level else [node.module or ""]
            for name in names:
                top = name.split(".")
                if name == "<relative>" or (
                    top[0] == "persona_bench" and (len(top) < 2 or top[1] not in ("core", "llm"))
                ):
                    offenders.append(f"{path.name}: {name}")
    assert offenders == []


def test_importing_the_layer_and_the_cache_command_does_not_load_openai():
    code = (
        "import json, sys\n"
        "import persona_bench.llm, persona_bench.llm.testserver, persona_bench.cli.cache_cmd\n"
        "print(json.dumps(sorted(m for m in ('openai', 'httpx2') if m in sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []
