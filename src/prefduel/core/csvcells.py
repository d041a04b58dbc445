"""CSV cells that a spreadsheet cannot run: the one helper every CSV writer of the package uses.

User and model names come from the vote log, so a name like ``=HYPERLINK("http://...")`` would
be a formula once ``models.csv`` or ``users.csv`` is opened in a spreadsheet (CSV/formula
injection). Following OWASP, a text cell starting with ``=``, ``+``, ``-``, ``@``, a tab or a
carriage return is written with a leading apostrophe, which spreadsheets show as text. Numbers
(and text that is exactly a decimal number, such as ``-1.5``) are written unchanged.
"""

from __future__ import annotations

import re
from typing import Any

#: First characters that make a spreadsheet read a cell as a formula.
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def spreadsheet_safe(value: Any) -> Any:
    """``value`` as a CSV cell that cannot become a spreadsheet formula.

    Text starting with one of `FORMULA_PREFIXES` gets a leading apostrophe, unless it is exactly
    a decimal number; every other value (numbers, booleans, None) is returned as it is.
    """
    if (
        isinstance(value, str)
        and value.startswith(FORMULA_PREFIXES)
        and not _NUMBER.fullmatch(value)
    ):
        return "'" + value
    return value


__all__ = ["FORMULA_PREFIXES", "spreadsheet_safe"]
