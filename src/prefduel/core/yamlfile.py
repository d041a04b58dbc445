"""The one YAML loader: a user's file (or text) with bounded size and errors that name it.

Every YAML prefduel reads goes through `parse_yaml` (files through `read_yaml`), so every
config, roster file and data file gets the same limits: a file must be a regular file of at
most `MAX_YAML_BYTES`, and a document may expand to at most `MAX_YAML_NODES` nodes counting
each alias as often as it is used. YAML aliases let a few lines stand for billions of values
(the "billion laughs"); without the bound a config validator walks them all. A key given
twice in one mapping is refused: YAML keeps the last one, so a repeated section would silently
replace the first.
"""

from __future__ import annotations

import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

#: Largest YAML file read (configs and rosters are kilobytes).
MAX_YAML_BYTES = 16 * 2**20
#: Largest document, in nodes with every alias expanded.
MAX_YAML_NODES = 1_000_000


class _BoundedLoader(yaml.SafeLoader):
    """The safe loader that refuses a document expanding past `MAX_YAML_NODES` nodes."""

    def compose_document(self) -> yaml.Node | None:
        node = super().compose_document()
        if node is not None and expanded_size(node) > MAX_YAML_NODES:
            raise yaml.YAMLError(
                f"the document expands to more than {MAX_YAML_NODES:,} values through its "
                "aliases (&name / *name); write the values out or use fewer aliases"
            )
        return node

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        """A mapping, refusing a key given twice (YAML would keep the last one silently)."""
        seen: dict[Any, yaml.Node] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # '<<: *base': explicit keys may override merged ones
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.setdefault(key, key_node)
            except TypeError:
                continue  # an unhashable key: the safe constructor refuses it itself
            if first is not key_node:
                line = key_node.start_mark.line + 1
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"key {key!r} is given twice (lines {first.start_mark.line + 1} and {line}); "
                    "YAML would keep only the last one",
                    key_node.start_mark,
                )
        return super().construct_mapping(node, deep=deep)


def expanded_size(node: yaml.Node) -> int:
    """Nodes of a composed document with every alias expanded, counted without expanding.

    Aliases make the node graph a DAG whose nodes are shared; the size of a node is one plus
    the sizes of its children, memoised per node, so the count costs one visit per distinct
    node however large the expansion. Recursive aliases count as infinitely large.
    """
    sizes: dict[int, int] = {}
    on_path: set[int] = set()

    def size(item: yaml.Node) -> int:
        key = id(item)
        if key in sizes:
            return sizes[key]
        if key in on_path:
            return MAX_YAML_NODES + 1
        on_path.add(key)
        total = 1
        if isinstance(item, yaml.SequenceNode):
            total += sum(size(child) for child in item.value)
        elif isinstance(item, yaml.MappingNode):
            total += sum(size(k) + size(v) for k, v in item.value)
        on_path.discard(key)
        sizes[key] = total = min(total, MAX_YAML_NODES + 1)
        return total

    return size(node)


def parse_yaml(text: str, source: str, error: Callable[[str], Exception]) -> Any:
    """Parse YAML text with the bounded loader.

    Args:
        text: The document.
        source: What it is, for messages (``"config file x.yaml"``).
        error: Builds the exception to raise from a message.

    Raises:
        The exception ``error`` builds: not YAML, several documents, or too large.
    """
    try:
        return yaml.load(text, Loader=_BoundedLoader)
    except yaml.YAMLError as exc:
        raise error(f"{source} is not valid YAML: {exc}") from None
    except RecursionError:
        raise error(f"{source} nests too deeply to be a prefduel file") from None


def read_yaml(path: str | Path, what: str, error: Callable[[str], Exception]) -> Any:
    """Parse a YAML file.

    Args:
        path: The file.
        what: What the file is, for messages (``"config file"``, ``"price file"``).
        error: Builds the exception to raise from a message (e.g. an error class).

    Returns:
        The parsed document (None for an empty file).

    Raises:
        The exception ``error`` builds: the file is missing ("... does not exist"), not a
        regular file, larger than `MAX_YAML_BYTES`, unreadable ("cannot read ..."), or not
        YAML ("... is not valid YAML: ...").
    """
    file = Path(path)
    try:
        info = file.stat()
    except FileNotFoundError:
        raise error(f"{what} {file} does not exist") from None
    except OSError as exc:
        raise error(f"cannot read {what} {file}: {exc.strerror or exc}") from None
    except ValueError:  # a NUL byte: YAML strings may hold one, paths may not
        raise error(f"{what} {str(file)!r} is not a valid path (it holds a NUL byte)") from None
    if stat.S_ISDIR(info.st_mode):
        raise error(f"{what} {file} is a directory, not a YAML file")
    if not stat.S_ISREG(info.st_mode):
        raise error(f"{what} {file} is not a regular file (a device or a pipe)")
    if info.st_size > MAX_YAML_BYTES:
        raise error(
            f"{what} {file} is {info.st_size / 2**20:.0f} MiB; a YAML file prefduel reads is at "
            f"most {MAX_YAML_BYTES >> 20} MiB"
        )
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise error(f"cannot read {what} {file}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise error(f"{what} {file} is not UTF-8 text: {exc}") from None
    return parse_yaml(text, f"{what} {file}", error)
