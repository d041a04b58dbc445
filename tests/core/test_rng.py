"""Seeded random streams: reproducible, independent per key, stable across processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from prefduel.core.rng import stable_key, stream

KEYS = [
    (),
    ("world",),
    ("tutorsim", "dev", "judge"),
    ("policy", "notransfer:rule=ts"),
    ("arrival", 3),
    ("ünïcode", "ключ", 7),
]


def _draws(root: int, *keys: int | str) -> list[int]:
    """Raw 64-bit words of the underlying PCG64 (stable across numpy versions)."""
    return [int(x) for x in stream(root, *keys).bit_generator.random_raw(8)]


@pytest.mark.parametrize("keys", KEYS)
def test_same_root_and_keys_give_the_same_stream(keys):
    a, b = stream(11, *keys), stream(11, *keys)
    assert np.array_equal(a.random(50), b.random(50))
    assert np.array_equal(a.normal(size=20), b.normal(size=20))


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ((11, "world"), (12, "world")),  # root differs
        ((11, "world"), (11, "worlds")),  # string key differs
        ((11, "a", "b"), (11, "b", "a")),  # order matters
        ((11, "arrival", 1), (11, "arrival", 2)),  # integer key differs
        ((11, "tutorsim", "dev", "judge"), (11, "tutorsim", "dev", "rater")),
        ((11, "tutorsim", "dev", "judge"), (11, "tutorsim", "test-topics", "judge")),
        ((11, "x"), (11, "x", "y")),  # an extra non-zero key
    ],
)
def test_different_keys_give_different_streams(left, right):
    assert _draws(*left) != _draws(*right)


def test_all_distinct_key_tuples_give_pairwise_distinct_streams():
    keysets = [(5, *k) for k in KEYS] + [(6, *k) for k in KEYS]
    draws = {tuple(_draws(*k)) for k in keysets}
    assert len(draws) == len(keysets)


def test_a_trailing_zero_key_gives_a_different_stream():
    assert _draws(3) != _draws(3, 0)


def test_numpy_integer_keys_equal_python_ints():
    assert _draws(np.int64(4), np.int32(2)) == _draws(4, 2)
    assert stable_key(np.uint16(9)) == 9


def test_string_keys_are_stable_across_processes_with_different_hash_seeds():
    cases = [(0, "tutorsim", "dev", "judge"), (7, "policy", "coduel:gate=off"), (1, "ключ", 3)]
    code = (
        "import json, sys\n"
        "from prefduel.core.rng import stable_key, stream\n"
        "cases = json.loads(sys.argv[1])\n"
        "print(json.dumps([[[int(x) for x in stream(*c).bit_generator.random_raw(8)],"
        " [stable_key(k) for k in c[1:]]] for c in cases]))\n"
    )
    here = [[_draws(*c), [stable_key(k) for k in c[1:]]] for c in cases]
    for hash_seed in ("1", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        out = subprocess.run(
            [sys.executable, "-c", code, json.dumps(cases)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        assert json.loads(out.stdout) == here


@pytest.mark.parametrize("bad", [1.5, 2.0, None, b"bytes", (1, 2), ["a"], True, np.bool_(True)])
def test_bad_key_types_are_rejected(bad):
    with pytest.raises(TypeError, match="int or str"):
        stream(0, "ok", bad)
    with pytest.raises(TypeError, match="int or str"):
        stable_key(bad)


def test_bad_root_types_and_negative_keys_are_rejected():
    with pytest.raises(TypeError):
        stream(0.5, "x")
    with pytest.raises(TypeError):
        stream(False, "x")
    with pytest.raises(ValueError, match=r"must be in \[0, 2\*\*32\)"):
        stream(0, -1)
    with pytest.raises(ValueError, match=r"must be in \[0, 2\*\*32\)"):
        stream(-3)
