"""Shared fixtures. ``tests/`` is on ``sys.path`` (rootdir conftest), so ``pb_toys`` imports."""

from __future__ import annotations

from pathlib import Path

import pytest

from pb_toys import save_world, write_policies

#: The browser tests' fixtures (``browser``, ``page``).
pytest_plugins = ["pb_browser"]


@pytest.fixture
def toy_world(tmp_path: Path) -> str:
    """Path of a small saved world (N=12, S=24, K=6, d=7)."""
    return save_world(tmp_path / "toy")


@pytest.fixture
def user_policies(tmp_path: Path) -> str:
    """Path of a user file with misbehaving policies (see ``pb_toys.BAD_POLICIES``)."""
    return write_policies(tmp_path)
