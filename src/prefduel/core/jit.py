"""Optional compilation with numba: the one switch every compiled kernel of prefduel reads.

`ENABLED` is True when numba is installed (``pip install prefduel[fast]``) and the environment
does not set ``PREFDUEL_NUMBA=0``. Kernels are plain Python functions decorated with
`compiled`: with numba they are compiled (with numba's on-disk cache), without it they stay as
written, so that every module still imports; callers then take their numpy path instead
(`ENABLED` is read at call time, so a test may switch it).

numba's on-disk cache knows only the file of each function: a cached kernel that calls a
compiled function of another file keeps the old callee after that file changes (a checkout's
``core/laplace.py`` edited under ``policies/coduel/kernels.py``), which fails at run time
(``NRT_adapt_ndarray_to_python: descr is NULL``) or computes with old code. So the package's
cache files are cleared whenever any file of compiled code changes (`clear_stale_caches`,
run once at import).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

try:  # optional extra
    if os.environ.get("PREFDUEL_NUMBA", "1") == "0":
        raise ImportError("disabled by PREFDUEL_NUMBA=0")
    from numba import njit
except ImportError:  # the numpy paths are used
    ENABLED = False
    njit = None
else:
    ENABLED = True


def compiled(**options: Any) -> Callable[[Callable], Callable]:
    """Decorator: ``numba.njit(cache=True, **options)`` when numba is enabled, else identity.

    Where numba cannot keep an on-disk cache (a read-only install with an unwritable home
    folder), the function is compiled in memory instead, once per process.

    Args:
        **options: Options of ``numba.njit`` (e.g. ``inline="always"``, ``fastmath``).
    """

    def wrap(fn: Callable) -> Callable:
        if njit is None:
            return fn
        try:
            return njit(cache=True, **options)(fn)
        except RuntimeError:  # "cannot cache function ...: no locator available"
            return njit(cache=False, **options)(fn)

    return wrap


#: The stamp of the compiled sources that the package's numba caches were made from.
STAMP_NAME = "prefduel-compiled-sources.sha256"


def compiled_sources(root: Path) -> list[Path]:
    """The files whose code numba compiles: every module that imports this one, and ``core``
    (whose scalar helpers, such as ``btl.sigmoid_scalar``, are compiled where they are used)."""
    found = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        if path.parent.name == "core" or "prefduel.core.jit" in text or "core import jit" in text:
            found.append(path)
    return found


def clear_stale_caches(root: Path) -> bool:
    """Remove the numba cache files under ``root`` when its compiled sources changed since
    they were made (see the module docstring); returns whether any were removed.

    Args:
        root: The package folder (``prefduel/``).
    """
    sources = compiled_sources(root)
    digest = hashlib.sha256()
    for path in sources:
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    stamp = root / "core" / "__pycache__" / STAMP_NAME
    with contextlib.suppress(OSError):
        if stamp.read_text() == digest.hexdigest():
            return False
    removed = False
    for folder in {path.parent / "__pycache__" for path in sources}:
        for cached in (*folder.glob("*.nbi"), *folder.glob("*.nbc")):
            with contextlib.suppress(OSError):  # another process may be clearing too
                cached.unlink()
                removed = True
    with contextlib.suppress(OSError):  # a read-only install: numba caches elsewhere
        stamp.parent.mkdir(exist_ok=True)
        stamp.write_text(digest.hexdigest())
    return removed


if ENABLED:
    with contextlib.suppress(OSError):
        clear_stale_caches(Path(__file__).resolve().parents[1])
