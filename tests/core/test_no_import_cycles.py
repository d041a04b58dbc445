"""No module of prefduel is in an import cycle, counting imports deferred into functions."""

from __future__ import annotations

from pathlib import Path

import prefduel
from pb_imports import cycles, graph

ROOT = Path(prefduel.__file__).parent


def test_the_package_has_no_import_cycle():
    found = cycles(graph(ROOT, "prefduel"))
    assert found == [], "import cycles (deferred imports count):\n" + "\n".join(
        " <-> ".join(c) for c in found
    )


def test_a_cycle_hidden_in_a_function_is_found(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg.b import f\n")
    (package / "b.py").write_text("def f():\n    from pkg.a import g\n")
    assert cycles(graph(package, "pkg")) == [["pkg.a", "pkg.b"]]
