"""PrefDisco's rooms import one way, and no PrefDisco module is in an import cycle.

The rooms, bottom to top: the base modules at the package's top level (errors, files, the
config), ``dataset``, ``episode``, ``interviewer``, ``report`` and ``study``; the package's
``__init__`` (the public names) sits above them all. A module imports its own room and the
rooms below it, never one above, and never the package's ``__init__``. Every import statement
counts: the ones inside functions or under ``TYPE_CHECKING`` too, so a deferred import cannot
hide a cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import prefduel.prefdisco
from pb_imports import cycles, graph, modules

PACKAGE = "prefduel.prefdisco"
ROOT = Path(prefduel.prefdisco.__file__).parent
#: The rooms, bottom to top (``base``: the modules at the package's top level).
ROOMS = ("base", "dataset", "episode", "interviewer", "report", "study")
#: The package's ``__init__``: the public names, above every room.
FACADE = "facade"


def rooms_of(root: Path, package: str) -> dict[str, str]:
    """Module -> its room: the subpackage it is in, ``base`` (a module at the top level) or
    the facade (the package's ``__init__``)."""
    found = {}
    for name, path in modules(root, package).items():
        parts = path.relative_to(root).parts
        if parts == ("__init__.py",):
            found[name] = FACADE
        else:
            found[name] = "base" if len(parts) == 1 else parts[0]
    return found


def upward(root: Path, package: str, rooms: tuple[str, ...]) -> list[str]:
    """Imports of a room above the importer's (the facade is above every room)."""
    rank = {name: i for i, name in enumerate((*rooms, FACADE))}
    room = rooms_of(root, package)
    bad = []
    for module, targets in sorted(graph(root, package).items()):
        bad += [f"{module} -> {t}" for t in sorted(targets) if rank[room[t]] > rank[room[module]]]
    return bad


def test_the_folder_listing_shows_the_rooms_each_with_a_one_line_docstring():
    rooms = sorted(p.name for p in ROOT.iterdir() if (p / "__init__.py").is_file())
    assert rooms == sorted(ROOMS[1:])
    for name in rooms:
        doc = ast.get_docstring(ast.parse((ROOT / name / "__init__.py").read_text()))
        assert doc and "\n" not in doc.strip(), f"{name}/__init__.py: one-line docstring"


def test_rooms_import_only_their_own_room_and_the_rooms_below():
    assert upward(ROOT, PACKAGE, ROOMS) == []


def test_no_prefdisco_module_is_in_an_import_cycle():
    assert cycles(graph(ROOT, PACKAGE)) == []


def test_the_checks_see_deferred_imports(tmp_path):
    """A cycle closed by an import inside a function, and an upward import, are found."""
    pkg = tmp_path / "pkg"
    (pkg / "dataset").mkdir(parents=True)
    (pkg / "episode").mkdir()
    for init in (pkg, pkg / "dataset", pkg / "episode"):
        (init / "__init__.py").write_text('"""A room."""\n')
    (pkg / "dataset" / "tasks.py").write_text(
        "def f():\n    from pkg.episode.matching import g\n    return g\n"
    )
    (pkg / "episode" / "matching.py").write_text("from pkg.dataset import tasks\n")
    edges = graph(pkg, "pkg")
    assert edges["pkg.dataset.tasks"] == {"pkg.episode.matching"}
    assert cycles(edges) == [["pkg.dataset.tasks", "pkg.episode.matching"]]
    assert upward(pkg, "pkg", ("base", "dataset", "episode")) == [
        "pkg.dataset.tasks -> pkg.episode.matching"
    ]
