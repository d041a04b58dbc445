"""Generated damage for every kind of input file, and a runner that feeds it to ``prefduel``.

`run_cases` runs every case through the real entry point in one subprocess under a memory cap
(see ``fuzz_worker.py``); `failures` lists the cases that ended in a traceback, ran out of
memory or time, exited with an unexpected status, or exited 0 with output that an oracle
rejects. Damage is generated, not hand-picked: every field of a document gets every kind of
bad value, and the whole file gets structural damage (truncation, garbage, duplication, deep
nesting, alias bombs), all from explicit seeds.
"""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

WORKER = Path(__file__).with_name("fuzz_worker.py")
#: Address-space cap of the worker: a case that allocates without bound fails instead of
#: taking the machine down.
MEMORY_CAP = 3 * 2**30

#: Bad values for a JSON field: (label, value as JSON text).
JSON_BAD_VALUES: tuple[tuple[str, str], ...] = (
    ("nan", "NaN"),
    ("inf", "Infinity"),
    ("-inf", "-Infinity"),
    ("huge", "1e308"),
    ("tiny", "1e-300"),
    ("huge-int", "1000000000000000000000000000000"),
    ("negative", "-1"),
    ("zero", "0"),
    ("text", '"x"'),
    ("empty-text", '""'),
    ("nul-text", '"a\\u0000b"'),
    ("list", "[1, 2]"),
    ("object", '{"a": 1}'),
    ("null", "null"),
    ("bool", "true"),
    ("nested", "[" * 5000 + "]" * 5000),
)
#: Bad values for a YAML scalar: (label, value as YAML text).
YAML_BAD_VALUES: tuple[tuple[str, str], ...] = (
    ("nan", ".nan"),
    ("inf", ".inf"),
    ("-inf", "-.inf"),
    ("huge", "1000000000000"),
    ("huger", "1e300"),
    ("tiny", "1.0e-300"),
    ("negative", "-1"),
    ("zero", "0"),
    ("text", "xyz"),
    ("nul-text", '"a\\0b"'),
    ("list", "[1, 2]"),
    ("mapping", "{a: 1}"),
    ("null", "null"),
    ("bool", "true"),
    ("date", "2020-01-01"),
)


@dataclass(frozen=True)
class Repeat:
    """A large file described compactly: ``prefix + unit * count + suffix``."""

    prefix: bytes
    unit: bytes
    count: int
    suffix: bytes = b""


@dataclass
class Case:
    """One run of ``prefduel`` on damaged input.

    Attributes:
        id: A readable name: the input, the damage, the command.
        argv: Arguments of ``prefduel``.
        files: Files to create in the case's fresh folder (relative path -> bytes or
            `Repeat`), on top of the shared files given to `run_cases`.
        allowed: Exit statuses that are acceptable (2: a named error; 0: a result).
        oracle: For exit 0, a check of the output (returns a complaint or None).
        message: For exit 2, a pattern the error line must match.
        timeout: Seconds before the case counts as hung.
        keep: Keep the case's folder (its path is the result's ``folder``) for the oracle.
    """

    id: str
    argv: list[str]
    files: dict[str, bytes | Repeat]
    allowed: tuple[int, ...] = (0, 2)
    oracle: Callable[[dict[str, Any]], str | None] | None = None
    message: str | None = None
    timeout: int = 60
    keep: bool = False


def _encode(data: bytes | Repeat) -> Any:
    if isinstance(data, Repeat):
        parts = (data.prefix, data.unit, data.suffix)
        return [*(base64.b64encode(x).decode() for x in parts), data.count]
    return base64.b64encode(data).decode()


def run_cases(
    cases: list[Case], shared: dict[str, bytes] | None = None, cap: int = MEMORY_CAP
) -> dict[str, dict[str, Any]]:
    """Run every case in one worker process under ``cap`` bytes of address space.

    Args:
        cases: The cases, run in order.
        shared: Files copied into every case's folder before its own files.
        cap: Address-space limit of the worker, in bytes.
    """
    payload = {
        "shared": {k: _encode(v) for k, v in (shared or {}).items()},
        "cases": [
            {
                "id": c.id,
                "argv": c.argv,
                "timeout": c.timeout,
                "keep": c.keep,
                "files": {k: _encode(v) for k, v in c.files.items()},
            }
            for c in cases
        ],
    }
    done = subprocess.run(
        [sys.executable, str(WORKER), str(cap)],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=60 + sum(c.timeout for c in cases),
    )
    results = {}
    for line in done.stdout.splitlines():
        result = json.loads(line)
        results[result["id"]] = result
    if done.returncode != 0:
        last = cases[len(results)].id if len(results) < len(cases) else "?"
        raise AssertionError(
            f"the fuzz worker died (exit {done.returncode}) during case {last}:\n"
            f"{done.stderr[-3000:]}"
        )
    return results


def failures(cases: list[Case], results: dict[str, dict[str, Any]]) -> list[str]:
    """Why each failing case failed (empty when every case ended as allowed)."""
    out = []
    for case in cases:
        result = results[case.id]
        complaint = _judge(case, result)
        if complaint:
            out.append(f"{case.id}: {complaint}")
    return out


def _judge(case: Case, result: dict[str, Any]) -> str | None:
    if result["crash"]:
        return f"traceback or hang:\n{result['crash'][-1500:]}"
    code, err = result["code"], result["stderr"]
    if "Traceback" in err:
        return f"printed a traceback (exit {code}):\n{err[-1500:]}"
    if code not in case.allowed:
        return f"exit {code}, expected one of {case.allowed}; stderr: {err[-600:]}"
    if code == 2:
        if "prefduel: error:" not in err and "usage:" not in err:
            return f"exit 2 without a named error: {err[-600:]}"
        if case.message and not re.search(case.message, err):
            return f"error does not match {case.message!r}: {err[-600:]}"
    if code == 0 and case.oracle is not None:
        return case.oracle(result)
    return None


# -- damage to JSON lines ------------------------------------------------------------------


def jsonl_field_damage(rows: list[dict[str, Any]], line: int) -> Iterator[tuple[str, bytes]]:
    """Every field of row ``line`` (0-based) replaced by every bad value, and dropped."""
    for name in rows[line]:
        for label, text in JSON_BAD_VALUES:
            yield f"line{line + 1}.{name}={label}", _jsonl(rows, line, name, text)
        yield f"line{line + 1}.{name}=missing", _jsonl(rows, line, name, None)


def _jsonl(rows: list[dict[str, Any]], line: int, name: str, text: str | None) -> bytes:
    out = []
    for i, row in enumerate(rows):
        if i != line:
            out.append(json.dumps(row))
            continue
        parts = [
            f"{json.dumps(k)}: {text if k == name else json.dumps(v)}"
            for k, v in row.items()
            if not (k == name and text is None)
        ]
        out.append("{" + ", ".join(parts) + "}")
    return ("\n".join(out) + "\n").encode()


def structural_damage(data: bytes, seed: int) -> Iterator[tuple[str, bytes]]:
    """Damage to a whole file: cut, garbage, duplicated lines, deep nesting, huge lines."""
    rng = np.random.default_rng(seed)
    lines = data.splitlines(keepends=True)
    yield "empty", b""
    yield "blank-lines", b"\n\n\n"
    for cut in sorted(set(rng.integers(1, max(2, len(data)), size=4).tolist())):
        yield f"cut-at-{cut}", data[:cut]
    flipped = bytearray(data)
    for pos in rng.integers(0, len(data), size=8):
        flipped[pos] = int(rng.integers(0, 256))
    yield "flipped-bytes", bytes(flipped)
    yield "binary", bytes(rng.integers(0, 256, size=4096, dtype=np.uint8))
    yield "utf16", data.decode("utf-8", "replace").encode("utf-16")
    yield "bom", b"\xef\xbb\xbf" + data
    yield "crlf", data.replace(b"\n", b"\r\n")
    if lines:
        yield "duplicated-line", b"".join([*lines, lines[0]])
        mid = len(lines) // 2
        yield "garbage-line", b"".join([*lines[:mid], b"\x00\xff garbage {\n", *lines[mid:]])
        yield "deep-line", b"".join([*lines[:mid], b"[" * 100_000 + b"]" * 100_000 + b"\n",
                                     *lines[mid:]])



def long_line(data: bytes) -> Repeat:
    """``data`` followed by a line longer than any reader should take whole (65 MiB)."""
    return Repeat(data + b'{"a": "', b"x", 65 * 2**20, b'"}\n')


# -- damage to YAML documents --------------------------------------------------------------


def yaml_leaves(doc: Any, path: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    """``(path, value)`` of every scalar (and every empty container) of a parsed document."""
    if isinstance(doc, dict) and doc:
        for key, value in doc.items():
            yield from yaml_leaves(value, (*path, key))
    elif isinstance(doc, list) and doc:
        for index, value in enumerate(doc):
            yield from yaml_leaves(value, (*path, index))
    else:
        yield path, doc


def yaml_field_damage(doc: Any) -> Iterator[tuple[str, Any]]:
    """The document with each leaf replaced by each bad value (a parsed-YAML value), and with
    each mapping key dropped."""
    import yaml

    for path, _ in yaml_leaves(doc):
        for label, text in YAML_BAD_VALUES:
            yield f"{_dotted(path)}={label}", _replace(doc, path, yaml.safe_load(f"v: {text}")["v"])
        if path and isinstance(path[-1], str):
            yield f"{_dotted(path)}=missing", _replace(doc, path, _DROP)
    yield "unknown-key", {**doc, "no_such_setting": 1} if isinstance(doc, dict) else doc


def yaml_text_damage(text: str) -> Iterator[tuple[str, bytes]]:
    """Damage to YAML text itself: alias bombs, other roots, bad syntax, and `structural_damage`."""
    bomb = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    for i in range(1, 12):
        bomb.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    yield "alias-bomb", ("\n".join(bomb) + "\n").encode()
    yield "alias-bomb-in-doc", (text + "\n" + "\n".join(bomb) + "\n").encode()
    yield "list-root", b"- 1\n- 2\n"
    yield "scalar-root", b"42\n"
    yield "bad-syntax", b"a: [1, 2\nb: }\n"
    yield "tabs", text.replace("  ", "\t").encode()
    yield "python-tag", b"a: !!python/object/apply:os.system ['true']\n"
    yield "many-docs", (text + "\n---\n" + text).encode()
    yield from structural_damage(text.encode(), seed=len(text))


_DROP = object()


def _replace(doc: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(doc, dict):
        out = dict(doc)
        if value is _DROP and not rest:
            out.pop(head, None)
        else:
            out[head] = _replace(doc[head], rest, value)
        return out
    out = list(doc)
    out[head] = _replace(doc[head], rest, value)
    return out


def _dotted(path: tuple) -> str:
    return ".".join(str(p) for p in path) or "<root>"
