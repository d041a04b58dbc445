"""Every command shown in the README and the docs is one that works.

Each fenced block of the README and of ``docs/`` (the generated API pages aside) is checked:

- ``bash`` blocks: every ``prefduel`` command parses with the real argument parser (so a
  renamed subcommand or option fails here); ``python benchmarks/X.py`` names a script that
  exists and accepts every option shown; ``python -m M`` names an importable module;
  ``pip install`` names extras that ``pyproject.toml`` defines; any other program must be one
  of the few external tools the docs are allowed to show.
- ``python`` blocks compile; ``yaml`` blocks parse.
- A block preceded by ``<!-- docs-test: run -->`` is also run, command by command, in a fresh
  folder holding a copy of ``examples/``: every command must exit 0. Only quick, offline blocks
  carry the marker.
"""

from __future__ import annotations

import ast
import functools
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from prefduel.cli.main import build_parser

REPO = Path(__file__).resolve().parents[2]
RUN_MARKER = "<!-- docs-test: run -->"
# Programs the docs may show that are not ours: checked by name only.
EXTERNAL = {"dask", "cd", "export", "open", "mkdocs", "ruff", "inspect"}
FENCE = re.compile(r"^```(\w*)")


@dataclass(frozen=True)
class Block:
    """One fenced code block of a Markdown file."""

    path: Path
    line: int  # line number of the opening fence
    lang: str
    text: str
    run: bool

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"


def _doc_files() -> list[Path]:
    docs = REPO / "docs"
    pages = sorted(p for p in docs.rglob("*.md") if "reference" not in p.relative_to(docs).parts)
    return [REPO / "README.md", *pages]


def _blocks(path: Path) -> list[Block]:
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks, i = [], 0
    while i < len(lines):
        match = FENCE.match(lines[i].strip())
        if not match:
            i += 1
            continue
        start, body = i, []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith("```"):
            body.append(lines[i])
            i += 1
        before = next((s.strip() for s in reversed(lines[:start]) if s.strip()), "")
        blocks.append(Block(path, start + 1, match.group(1), "\n".join(body), before == RUN_MARKER))
        i += 1
    return blocks


ALL_BLOCKS = [b for f in _doc_files() for b in _blocks(f)]


def _strip_comment(line: str) -> str:
    """The line without a trailing ``# comment`` (a ``#`` outside quotes, after a space)."""
    quote = None
    for i, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line.rstrip()


def _commands(text: str) -> list[str]:
    """Shell command lines of a block: continuations joined, comments and blank lines dropped."""
    joined = re.sub(r"\\\n\s*", " ", text)
    stripped = (_strip_comment(line).strip() for line in joined.splitlines())
    return [line for line in stripped if line]


def _words(command: str) -> list[str]:
    words = shlex.split(command, comments=True)
    while words and re.match(r"^[A-Z_]+=", words[0]):  # VAR=value prefix
        words = words[1:]
    cut = next((i for i, w in enumerate(words) if re.match(r"^(\d?>>?|<|\|)", w)), len(words))
    return words[:cut]  # the command without redirections and pipes


def _parse_prefduel(args: list[str], where: str) -> None:
    try:
        build_parser().parse_args(args)
    except SystemExit as exc:
        if exc.code not in (0, None):
            pytest.fail(f"{where}: `prefduel {' '.join(args)}` does not parse (exit {exc.code})")


@functools.cache
def _benchmark_help(script: str) -> str:
    done = subprocess.run(
        [sys.executable, str(REPO / script), "--help"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, f"{script} --help failed:\n{done.stderr}"
    return done.stdout


@functools.cache
def _extras() -> frozenset[str]:
    data = tomllib.loads((REPO / "pyproject.toml").read_text())
    return frozenset(data["project"]["optional-dependencies"])


def _check_pip(words: list[str], where: str) -> None:
    for word in words[2:]:
        match = re.match(r"^(?:\.|prefduel)\[([\w,-]+)\]$", word)
        if match:
            unknown = set(match.group(1).split(",")) - _extras()
            assert not unknown, f"{where}: pip install names unknown extras {sorted(unknown)}"
        else:
            assert word in {".", "-e", "-q", "prefduel"} or not word.startswith((".", "prefduel"))


def _check_python(words: list[str], where: str) -> None:
    if words[1] == "-m":
        module = words[2]
        if module in {"pytest", "llama_cpp.server"}:
            return
        assert module.startswith("prefduel."), f"{where}: unexpected module {module}"
        __import__(module)
    elif words[1] == "-c":
        ast.parse(words[2])
    else:
        script = words[1]
        assert (REPO / script).is_file(), f"{where}: no script {script}"
        help_text = _benchmark_help(script)
        for word in words[2:]:
            option = word.split("=")[0]
            if option.startswith("--"):
                assert option in help_text, f"{where}: {script} has no option {option}"


def _check_command(command: str, where: str) -> None:
    substitution = re.match(r"^[A-Z_]+=\$\((.*)\)$", command)
    if substitution:  # NAME=$(command): check the command inside
        command = substitution.group(1)
    for part in re.split(r"\s*&&\s*", command):
        words = _words(part.rstrip("&").strip())
        if not words:
            continue
        program = words[0]
        if program == "prefduel":
            _parse_prefduel(words[1:], where)
        elif program in {"python", "python3"}:
            _check_python(words, where)
        elif program == "pip":
            _check_pip(words, where)
        else:
            assert program in EXTERNAL, f"{where}: unknown program {program!r} in `{part}`"


@pytest.mark.parametrize("block", [b for b in ALL_BLOCKS if b.lang in {"bash", "sh"}],
                         ids=lambda b: b.where)
def test_shell_commands_are_valid(block: Block):
    commands = _commands(block.text)
    assert commands, f"{block.where}: empty shell block"
    for command in commands:
        _check_command(command, block.where)


@pytest.mark.parametrize("block", [b for b in ALL_BLOCKS if b.lang == "python"],
                         ids=lambda b: b.where)
def test_python_blocks_compile(block: Block):
    try:
        ast.parse(block.text)
    except SyntaxError as exc:
        pytest.fail(f"{block.where}: {exc}")


@pytest.mark.parametrize("block", [b for b in ALL_BLOCKS if b.lang in {"yaml", "yml"}],
                         ids=lambda b: b.where)
def test_yaml_blocks_parse(block: Block):
    yaml.safe_load(block.text)


RUN_BLOCKS = [b for b in ALL_BLOCKS if b.run and b.path.name != "README.md"]
#: The README's marked blocks: a tour, run in order in one folder like a reader would.
README_TOUR = [b for b in ALL_BLOCKS if b.run and b.path.name == "README.md"]


def test_some_blocks_are_run():
    """The marker is in use: a typo in it would silently turn every run into a parse check."""
    assert len(RUN_BLOCKS) >= 5 and len(README_TOUR) >= 4


def _run_block(block: Block, folder: Path) -> None:
    """Run a block's commands in ``folder``; each must exit 0. Install lines are skipped: the
    test environment has every extra (the parse checks verify the extras exist)."""
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    if block.lang == "python":
        commands = [f"{shlex.quote(sys.executable)} -c {shlex.quote(block.text)}"]
    else:
        commands = [
            part
            for command in _commands(block.text)
            for part in re.split(r"\s*&&\s*", command)
            if not part.startswith("pip install")
        ]
    for command in commands:
        done = subprocess.run(
            command, shell=True, cwd=folder, env=env, capture_output=True, text=True,
            timeout=300,
        )
        assert done.returncode == 0, (
            f"{block.where}: `{command}` exited {done.returncode}\n{done.stdout[-2000:]}"
            f"\n{done.stderr[-2000:]}"
        )


@pytest.mark.parametrize("block", RUN_BLOCKS, ids=lambda b: b.where)
def test_marked_blocks_run(block: Block, tmp_path: Path):
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    _run_block(block, tmp_path)


def test_the_readme_tour_runs_in_order(tmp_path: Path):
    """A reader's first hour: the Quickstart's run, then every marked README block, in one
    fresh folder holding ``examples/`` (later blocks use what earlier ones wrote)."""
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    quickstart = next(b for b in ALL_BLOCKS if b.path.name == "README.md" and b.lang == "bash")
    first = Block(quickstart.path, quickstart.line, "bash", _commands(quickstart.text)[0], True)
    for block in [first, *README_TOUR]:
        _run_block(block, tmp_path)


def test_quickstart_has_exactly_two_commands():
    """The README promises two commands: one runs the main job, one runs the tests."""
    readme = [b for b in ALL_BLOCKS if b.path.name == "README.md" and b.lang == "bash"]
    commands = _commands(readme[0].text)
    assert len(commands) == 2, commands
    assert "prefduel run" in commands[0]
    assert "pytest" in commands[1] and "mkdocs build --strict" in commands[1]
    ci = (REPO / ".ci" / "run").read_text()
    assert commands[1].split("   #")[0].strip() in ci, "CI must run the README's test command"
