"""Seeded random streams.

Every random number in prefduel comes from a ``numpy.random.Generator`` built from
``SeedSequence([root, len(keys), tag_1, key_1, tag_2, key_2, ...])``: integer keys are used as
they are (tag 0), string keys through CRC-32 (tag 1), which is stable across processes and
Python versions (unlike the built-in ``hash``). The count and the tags make the encoding
prefix-free, so ``stream(r)``, ``stream(r, 0)`` and ``stream(r, crc32("a"))`` vs
``stream(r, "a")`` are all different streams.
"""

from __future__ import annotations

import zlib

import numpy as np

#: Seeds and integer stream keys are 32-bit words: ``0 <= seed < SEED_LIMIT``.
SEED_LIMIT = 2**32
_WORD = SEED_LIMIT


def stable_key(key: int | str) -> int:
    """Map a stream key to a 32-bit word that is the same in every process.

    Args:
        key: An integer in ``[0, 2**32)`` (used as is) or a string (CRC-32 of its UTF-8 bytes).

    Returns:
        A non-negative integer below ``2**32``.
    """
    if isinstance(key, bool):
        raise TypeError(f"stream keys must be int or str, got bool {key!r}")
    if isinstance(key, int | np.integer):
        if not 0 <= key < _WORD:
            raise ValueError(f"integer stream keys and seeds must be in [0, 2**32), got {key}")
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
    words = [stable_key(root), len(keys)]
    for key in keys:
        words += [1 if isinstance(key, str) else 0, stable_key(key)]
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(words)))
