"""Optional compilation with numba: the one switch every compiled kernel of prefduel reads.

`ENABLED` is True when numba is installed (``pip install prefduel[fast]``) and the environment
does not set ``PREFDUEL_NUMBA=0``. Kernels are plain Python functions decorated with
`compiled`: with numba they are compiled (with numba's on-disk cache), without it they stay as
written, so that every module still imports; callers then take their numpy path instead
(`ENABLED` is read at call time, so a test may switch it).
"""

from __future__ import annotations

import os
from collections.abc import Callable
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
