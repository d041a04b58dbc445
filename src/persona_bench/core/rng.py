"""Seeded random streams.

Every random number in persona-bench comes from a ``numpy.random.Generator`` built from
``SeedSequence([root, *keys])``. String keys are mapped to integers with CRC-32, which is
stable across processes and Python versions (unlike the built-in ``hash``).
"""

from __future__ import annotations

import zlib

import numpy as np


def stable_key(key: int | str) -> int:
    """Map a stream key to a non-negative integer that is the same in every process.

    Args:
        key: A non-negative integer (used as is) or a string (CRC-32 of its UTF-8 bytes).

    Returns:
        A non-negative integer suitable as a ``SeedSequence`` entropy word.
    """
    if isinstance(key, bool):
        raise TypeError(f"stream keys must be int or str, got bool {key!r}")
    if isinstance(key, int | np.integer):
        if key < 0:
            raise ValueError(f"integer stream keys must be >= 0, got {key}")
        return int(key)
    if isinstance(key, str):
        return zlib.crc32(key.encode("utf-8"))
    raise TypeError(f"stream keys must be int or str, got {type(key).__name__} {key!r}")


def stream(root: int, *keys: int | str) -> np.random.Generator:
    """Return an independent generator for ``(root, *keys)``.

    Args:
        root: The root seed (for example the run seed).
        *keys: Labels of the stream, e.g. ``("world", "dev", "judge")``.

    Returns:
        A PCG64 generator; the same arguments give the same stream in every process.
    """
    return np.random.Generator(
        np.random.PCG64(np.random.SeedSequence([stable_key(root), *map(stable_key, keys)]))
    )
