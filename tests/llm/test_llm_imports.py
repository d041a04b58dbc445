"""``llm`` depends on ``core`` only, and loads the ``openai`` SDK only when a backend needs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import prefduel.llm

LLM = Path(prefduel.llm.__file__).parent


def test_importing_the_layer_and_the_cache_command_does_not_load_openai():
    code = (
        "import json, sys\n"
        "import prefduel.llm, prefduel.llm.testserver, prefduel.cli.cache_cmd\n"
        "print(json.dumps(sorted(m for m in ('openai', 'httpx2') if m in sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []
