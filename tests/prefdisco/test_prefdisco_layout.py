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

PACKAGE = "prefduel.prefdisco"
ROOT = Path(prefduel.prefdisco.__file__).parent
#: The rooms, bottom to top (``base``: the modules at the package's top level).
ROOMS = ("base", "dataset", "episode", "interviewer", "report", "study")
#: The package's ``__init__``: the public names, above every room.
FACADE = "facade"


def modules(root: Path, package: str) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package (``__init__`` files name
    their package)."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join([package, *parts])] = path
    return found


def imports(path: Path, known: set[str]) -> set[str]:
    """The package modules a file imports anywhere in it (functions included); ``from a
    import b`` is module ``a.b`` when that is a module, else ``a``."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}: relative import (spell the module out)"
            base = node.module or ""
            named = {f"{base}.{alias.name}" for alias in node.names}
            found |= {name if name in known else base for name in named}
    return {name for name in found if name in known}


def graph(root: Path, package: str) -> dict[str, set[str]]:
    """Module -> the package modules it imports."""
    files = modules(root, package)
    return {name: imports(path, set(files)) for name, path in files.items()}


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


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module, or one that imports
    itself (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in edges[node]:
                    found.append(sorted(component))
    return found


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
