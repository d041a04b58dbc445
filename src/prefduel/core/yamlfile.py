"""Reading a user's YAML file with errors that name the file and what it was for."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml


def read_yaml(path: str | Path, what: str, error: Callable[[str], Exception]) -> Any:
    """Parse a YAML file.

    Args:
        path: The file.
        what: What the file is, for messages (``"config file"``, ``"price file"``).
        error: Builds the exception to raise from a message (e.g. an error class).

    Returns:
        The parsed document (None for an empty file).

    Raises:
        The exception ``error`` builds: the file is missing ("... does not exist"), unreadable
        ("cannot read ..."), or not YAML ("... is not valid YAML: ...").
    """
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise error(f"{what} {file} does not exist") from None
    except OSError as exc:
        raise error(f"cannot read {what} {file}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise error(f"{what} {file} is not UTF-8 text: {exc}") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise error(f"{what} {file} is not valid YAML: {exc}") from None
