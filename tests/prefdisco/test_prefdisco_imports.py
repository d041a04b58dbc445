"""``prefdisco`` depends on ``core`` and ``llm`` only, and loads no ``openai`` SDK by itself."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import prefduel.prefdisco

PACKAGE = Path(prefduel.prefdisco.__file__).parent


def test_importing_prefdisco_and_its_command_does_not_load_openai():
    code = (
        "import json, sys\n"
        "import prefduel.prefdisco, prefduel.cli.prefdisco_cmd\n"
        "print(json.dumps(sorted(m for m in ('openai', 'httpx2') if m in sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []
