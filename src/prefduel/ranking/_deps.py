"""Lazy imports of the optional packages of ``prefduel[rank]`` with a clear error.

pandas, pyarrow and scikit-learn are imported only by the functions that need them, so that
``import prefduel.ranking`` works on a base install and the error tells what to install.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from prefduel.ranking.errors import MissingDependencyError

RANK_EXTRA = 'pip install "prefduel[rank]"'


def require(module: str, feature: str, hint: str = RANK_EXTRA) -> ModuleType:
    """Import ``module`` or raise `MissingDependencyError` naming ``feature`` and ``hint``.

    Args:
        module: Dotted module name, e.g. ``"pandas"`` or ``"sklearn.decomposition"``.
        feature: What needs it, for the message (e.g. ``"reading battle logs"``).
        hint: How to install it.

    Returns:
        The imported module.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        top = module.split(".")[0]
        raise MissingDependencyError(
            f"{feature} needs the package {top!r}, which is not installed ({exc}); "
            f"install it with: {hint}"
        ) from None


def pandas() -> ModuleType:
    """The ``pandas`` module (``prefduel[rank]``)."""
    return require("pandas", "the ranking analysis")
