"""numba's cache knows only each function's own file: the package clears its cache files when
any file of compiled code changes, so a kernel never runs with an old callee."""

from __future__ import annotations

from pathlib import Path

from prefduel.core.jit import STAMP_NAME, clear_stale_caches


def _package(root: Path) -> Path:
    (root / "core" / "__pycache__").mkdir(parents=True)
    (root / "policies" / "__pycache__").mkdir(parents=True)
    (root / "core" / "laplace.py").write_text("def solve(): return 1\n")
    (root / "policies" / "kernels.py").write_text("from prefduel.core.jit import compiled\n")
    (root / "policies" / "plain.py").write_text("x = 1\n")
    return root


def _cache_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.suffix in (".nbi", ".nbc"))


def test_cache_files_go_when_a_compiled_source_changes(tmp_path):
    root = _package(tmp_path / "pkg")
    (root / "policies" / "__pycache__" / "kernels.f-3.py311.nbi").write_text("stale")
    (root / "core" / "__pycache__" / "laplace.solve-1.py311.1.nbc").write_text("stale")
    assert clear_stale_caches(root) and _cache_files(root) == []  # no stamp yet: cleared
    assert (root / "core" / "__pycache__" / STAMP_NAME).is_file()
    fresh = root / "policies" / "__pycache__" / "kernels.f-3.py311.nbi"
    fresh.write_text("made from these sources")
    assert not clear_stale_caches(root) and fresh.exists()  # nothing changed: kept
    (root / "policies" / "plain.py").write_text("x = 2\n")  # no compiled code in it
    assert not clear_stale_caches(root) and fresh.exists()
    (root / "core" / "laplace.py").write_text("def solve(): return 2\n")  # a callee changed
    assert clear_stale_caches(root) and not fresh.exists()
