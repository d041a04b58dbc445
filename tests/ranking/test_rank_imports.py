"""``prefduel.ranking`` depends only on ``core`` (docs/design.md, section 1) and imports its
optional packages lazily, so ``import prefduel.ranking`` works on a base install."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import prefduel.ranking

SRC = Path(prefduel.ranking.__file__).parent


def test_optional_packages_are_imported_lazily():
    code = (
        "import json, sys, prefduel.ranking\n"
        "heavy = ('pandas', 'sklearn', 'matplotlib', 'pyarrow')\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in heavy)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []
