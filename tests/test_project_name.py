"""The package is ``prefduel``, installed from this project, and the old name is gone.

The old distribution name belongs to another project on PyPI whose wheel installs an import
package of the same name, so a stray mention of it in an install command or an import would
silently pull in someone else's code.
"""

from __future__ import annotations

import importlib.metadata as metadata
import json
from pathlib import Path

import prefduel

REPO = Path(__file__).resolve().parents[1]
OLD_NAMES = ("persona" + "_bench", "persona" + "-bench")
CHECKED_DIRS = ("src", "tests", "benchmarks", "examples", "docs", ".ci")
CHECKED_FILES = ("README.md", "pyproject.toml", "mkdocs.yml", ".gitignore")


def test_only_this_distribution_provides_the_import_package():
    providers = metadata.packages_distributions().get("prefduel", [])
    assert set(providers) == {"prefduel"}, providers
    assert metadata.distribution("prefduel").metadata["Name"] == "prefduel"


def test_prefduel_file_is_inside_this_projects_installed_package():
    dist = metadata.distribution("prefduel")
    here = Path(prefduel.__file__).resolve()
    direct_url = json.loads(dist.read_text("direct_url.json") or "{}")
    if direct_url.get("dir_info", {}).get("editable"):
        # An editable install points at a checkout: it must be this one.
        assert here == REPO / "src" / "prefduel" / "__init__.py"
    else:
        recorded = {str(f) for f in dist.files or []}
        assert "prefduel/__init__.py" in recorded
        assert Path(dist.locate_file("prefduel/__init__.py")).resolve() == here


def _project_files() -> list[Path]:
    files = [REPO / name for name in CHECKED_FILES if (REPO / name).is_file()]
    for folder in CHECKED_DIRS:
        root = REPO / folder
        if root.is_dir():
            files += [p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    return files


def test_no_project_file_says_the_old_name():
    offenders = []
    for path in _project_files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if any(old in line.lower() for old in OLD_NAMES):
                offenders.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert not offenders, "\n".join(offenders)
