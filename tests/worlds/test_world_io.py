"""Stored worlds: bit-identical round trips, and every kind of damage fails loudly."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil

import numpy as np
import pytest

from prefduel.core.btl import btl_matrix
from prefduel.core.errors import WorldFormatError
from prefduel.worlds import World, get_world, load_world, world_kind, world_label
from prefduel.worlds.world import ARRAY_NAMES


def tiny_world(seed: int = 0, n: int = 2, s: int = 3, k: int = 4, d: int = 5) -> World:
    rng = np.random.default_rng(seed)
    return World(
        roster="tiny",
        seed=41,
        Phi=rng.normal(size=(n, s, k, d)),
        U=rng.random((n, s, k)),
        P=btl_matrix(rng.normal(size=(n, s, k))),
        u=rng.random((n, s)),
        student_index=np.arange(n),
        question_index=rng.integers(0, 5, size=(n, s)),
        students=[{"id": f"s{i}", "profile": "p", "quirks": ["a", "b"]} for i in range(n)],
        questions=[{"id": f"q{i}", "text": f"Question {i}? ünï"} for i in range(5)],
        personas=[{"id": f"p{i}", "name": f"P{i}", "prompt": "..."} for i in range(k)],
        info={"generator": "test", "nested": {"x": [1, 2.5]}},
    )


@pytest.fixture
def stored(tmp_path):
    world = tiny_world()
    path = world.save(tmp_path / "w")
    return world, path


def _assert_same(a: World, b: World) -> None:
    assert a.digest() == b.digest()
    for name in ARRAY_NAMES:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert (a.roster, a.seed) == (b.roster, b.seed)
    assert a.students == b.students
    assert a.questions == b.questions
    assert a.personas == b.personas
    assert a.info == b.info


def test_round_trip_is_bit_identical(stored):
    world, path = stored
    assert (path / "world.json").is_file() and (path / "arrays.npz").is_file()
    loaded = load_world(path)
    _assert_same(world, loaded)
    _assert_same(world, load_world(path / "world.json"))
    _assert_same(world, load_world(str(path)))
    assert loaded.student_index.dtype == np.int64 and loaded.Phi.dtype == np.float64


def test_round_trip_of_a_generated_world(tmp_path):
    world = get_world("dev", 2)
    loaded = load_world(world.save(tmp_path / "dev2"))
    _assert_same(world, loaded)


def test_digest_sees_every_array():
    base = tiny_world().digest()
    for name in ARRAY_NAMES:
        w = tiny_world()
        arr = getattr(w, name)
        arr.flat[0] = arr.flat[0] + 1 if arr.dtype.kind == "i" else np.nextafter(arr.flat[0], 2.0)
        assert w.digest() != base, name


def test_get_world_loads_a_stored_world(stored):
    world, path = stored
    assert world_kind(str(path)) == "stored"
    loaded = get_world(str(path), seed=41)  # the stored seed: the world as stored
    label = world_label(str(path))
    _assert_same(dataclasses.replace(world, roster=label), loaded)
    assert loaded.seed == 41
    assert loaded.name == label == os.path.normpath(str(path))  # named as result rows name it
    assert load_world(path).name == "tiny"  # the file keeps the name it was saved with


def test_other_seeds_of_a_stored_world_are_replicates(stored):
    """Seed s re-orders the stored sessions and redraws the clicks (issue: seeds on a stored
    world were the same arrays scored again)."""
    world, path = stored
    a, b = get_world(str(path), seed=0), get_world(str(path), seed=1)
    assert (a.seed, b.seed) == (0, 1)
    assert not np.array_equal(a.student_index, b.student_index)
    assert not np.array_equal(a.u, b.u)
    assert a.info["replicate_of_seed"] == 41
    # the same sessions, each intact, in another order
    order = [int(np.flatnonzero((world.U == a.U[n]).all(axis=(1, 2)))[0]) for n in range(a.N)]
    assert sorted(order) == list(range(world.N))
    for n, m in enumerate(order):
        assert np.array_equal(a.P[n], world.P[m]) and np.array_equal(a.Phi[n], world.Phi[m])
        assert a.student_index[n] == world.student_index[m]
        assert np.array_equal(a.question_index[n], world.question_index[m])
    assert np.all((a.u >= 0) & (a.u < 1))
    # deterministic in the seed, in any process
    _assert_same(a, get_world(str(path), seed=0))


# ---------------------------------------------------------------- damage


def _expect_error(path, *fragments):
    with pytest.raises(WorldFormatError) as info:
        load_world(path)
    msg = str(info.value)
    assert str(path.parent if path.name == "world.json" else path) in msg
    for fragment in fragments:
        assert fragment in msg
    return msg


def test_missing_directory_and_files(stored, tmp_path):
    _, path = stored
    _expect_error(tmp_path / "nope", "world.json")
    (path / "arrays.npz").unlink()
    _expect_error(path, "arrays.npz")
    shutil.rmtree(path)
    world = tiny_world().save(tmp_path / "w2")
    (world / "world.json").unlink()
    _expect_error(world, "world.json")


@pytest.mark.parametrize(
    "content",
    [b"{not json", b"", b"\xff\xfe\x00garbage", b'{"format": "prefduel-world"'],
)
def test_bad_json(stored, content):
    _, path = stored
    (path / "world.json").write_bytes(content)
    _expect_error(path, "world.json")


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"format_version": 2}, "format_version 2"),
        ({"format_version": "1"}, "format_version '1'"),
        ({"format_version": None}, "format_version None"),
        ({"format": "something-else"}, "prefduel-world"),
    ],
)
def test_wrong_format_or_version(stored, change, fragment):
    _, path = stored
    meta = json.loads((path / "world.json").read_text())
    meta.update(change)
    (path / "world.json").write_text(json.dumps(meta))
    _expect_error(path, fragment)


def test_json_that_is_not_an_object(stored):
    _, path = stored
    (path / "world.json").write_text("[1, 2, 3]")
    _expect_error(path, "prefduel-world")


@pytest.mark.parametrize("name", ARRAY_NAMES)
def test_tampered_array_fails_its_digest(stored, name):
    _, path = stored
    with np.load(path / "arrays.npz") as f:
        arrays = {k: f[k] for k in f.files}
    arr = arrays[name].copy()
    # a tiny, still valid change (an index stays in range, a value in [0, 1))
    arr.flat[0] = 1 - arr.flat[0] if arr.dtype.kind == "i" else arr.flat[0] * (1 - 1e-12)
    arrays[name] = arr
    np.savez(path / "arrays.npz", **arrays)
    _expect_error(path, name, "sha256")


def test_missing_array(stored):
    _, path = stored
    with np.load(path / "arrays.npz") as f:
        arrays = {k: f[k] for k in f.files if k != "P"}
    np.savez(path / "arrays.npz", **arrays)
    _expect_error(path, "lacks array", "'P")


def test_consistent_digest_but_invalid_contents(stored):
    """Digests only catch accidents; the loaded world is still validated."""
    _, path = stored
    bad = tiny_world()
    bad.P[0, 0, 0, 1] = 0.9  # breaks P + P^T = 1
    bad.P[0, 0, 1, 0] = 0.9
    arrays = bad.arrays()
    np.savez(path / "arrays.npz", **arrays)
    meta = json.loads((path / "world.json").read_text())
    meta["sha256"] = {k: hashlib.sha256(v.tobytes()).hexdigest() for k, v in arrays.items()}
    (path / "world.json").write_text(json.dumps(meta))
    _expect_error(path, "P[a, b] + P[b, a] = 1")


def test_truncated_arrays_always_fail(stored):
    _, path = stored
    raw = (path / "arrays.npz").read_bytes()
    for length in [0, 1, 30, *range(100, len(raw), max(1, len(raw) // 150)), len(raw) - 1]:
        (path / "arrays.npz").write_bytes(raw[:length])
        _expect_error(path, "arrays.npz")


@pytest.mark.parametrize("mask", [0xFF, 0x01, 0x20])
def test_flipped_bytes_fail_or_change_nothing(stored, mask):
    """Flip each byte of arrays.npz in turn: the load raises WorldFormatError naming the path,
    or (for bytes nothing reads, e.g. zip timestamps) returns the very same world. Never a
    different world, never another exception type."""
    world, path = stored
    raw = (path / "arrays.npz").read_bytes()
    digest = world.digest()
    outcomes = {"error": 0, "same": 0}
    fd = os.open(path / "arrays.npz", os.O_RDWR)  # patch in place: rewriting files is slow
    try:
        for pos in range(len(raw)):
            os.pwrite(fd, bytes([raw[pos] ^ mask]), pos)
            try:
                loaded = load_world(path)
            except WorldFormatError as exc:
                assert str(path) in str(exc)
                outcomes["error"] += 1
            else:
                assert loaded.digest() == digest, f"byte {pos} silently changed the world"
                outcomes["same"] += 1
            os.pwrite(fd, raw[pos : pos + 1], pos)
    finally:
        os.close(fd)
    assert outcomes["error"] > 0.8 * len(raw)
    _assert_same(world, load_world(path))  # the file was restored byte for byte


# ---------------------------------------------------------------- validate


@pytest.mark.parametrize(
    ("mutate", "fragment"),
    [
        (lambda w: setattr(w, "U", w.U[..., :-1]), "Phi must have shape"),
        (lambda w: setattr(w, "u", w.u[:, :-1]), "u must have shape"),
        (lambda w: setattr(w, "question_index", w.question_index[:1]), "question_index"),
        (lambda w: w.U.__setitem__((0, 0, 0), 1.5), "U must lie in [0, 1]"),
        (lambda w: w.U.__setitem__((0, 0, 0), -0.1), "U must lie in [0, 1]"),
        (lambda w: w.u.__setitem__((0, 0), 1.0), "u must lie in [0, 1)"),
        (lambda w: w.Phi.__setitem__((0, 0, 0, 0), np.nan), "Phi contains NaN"),
        (lambda w: w.P.__setitem__((0, 0, 0, 1), 0.3), "P[a, b] + P[b, a] = 1"),
        (lambda w: w.student_index.__setitem__(0, 7), "student_index points outside"),
        (lambda w: w.question_index.__setitem__((0, 0), 5), "question_index points outside"),
    ],
)
def test_validate_names_the_problem_and_save_refuses(tmp_path, mutate, fragment):
    world = tiny_world()
    mutate(world)
    with pytest.raises(WorldFormatError) as info:
        world.validate(where="my world")
    assert fragment in str(info.value)
    assert "my world" in str(info.value)
    with pytest.raises(WorldFormatError):
        world.save(tmp_path / "bad")
    assert not (tmp_path / "bad" / "world.json").exists()


@pytest.mark.parametrize("change", [{"seed": "abc"}, {"students": 5}])
def test_mistyped_metadata_field(stored, change):
    _, path = stored
    meta = json.loads((path / "world.json").read_text())
    meta.update(change)
    (path / "world.json").write_text(json.dumps(meta))
    _expect_error(path)


def test_a_world_whose_arrays_unpack_beyond_its_shape_is_refused(stored):
    """A compressed archive can unpack to far more than its size on disk: checked first."""
    import json
    import zipfile

    _, path = stored
    meta = json.loads((path / "world.json").read_text())
    with zipfile.ZipFile(path / "arrays.npz", "a", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("padding.npy", b"\0" * 50_000_000)  # 50 MB of zeros, ~50 kB packed
    with pytest.raises(WorldFormatError, match=r"unpacks to .* more than the .* its recorded"):
        load_world(path)
    meta["shape"]["N"] = 10**12
    (path / "world.json").write_text(json.dumps(meta))
    with pytest.raises(WorldFormatError, match=r"shape .* is not N, S, K, d within bounds"):
        load_world(path)
