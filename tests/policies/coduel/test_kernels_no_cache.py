"""CODuel's compiled kernels where numba can keep no on-disk cache (a read-only install with
an unwritable home folder): compiled in memory instead of failing at import."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("numba")

SCRIPT = """
import prefduel.policies.coduel.kernels
from pb_toys import make_world
from prefduel.core import jit
from prefduel.runner.cell import run_cell

assert jit.ENABLED
print(round(run_cell(make_world(0), "coduel")["score"], 6))
"""


def test_no_cache_location_falls_back_to_compiling_in_memory():
    tests = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {
        **os.environ,
        # numba's own locator for NUMBA_CACHE_DIR, pointed where nothing can be written: no
        # locator is usable, as in a read-only install with an unwritable home folder
        "NUMBA_CACHE_LOCATOR_CLASSES": "UserProvidedCacheLocator",
        "NUMBA_CACHE_DIR": "/proc/prefduel-no-cache",
        "PYTHONPATH": tests + os.pathsep + os.environ.get("PYTHONPATH", ""),
    }
    env.pop("PREFDUEL_NUMBA", None)
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "cannot cache" not in done.stderr
    float(done.stdout.strip())
