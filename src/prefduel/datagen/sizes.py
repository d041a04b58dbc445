"""The sizes of a datagen run, checked before anything is allocated or sent.

Each setting has its own bound (`prefduel.datagen.config_file`); the products of several are
bounded here: the judge calls of a run (students x questions x persona pairs x 4 judge
configurations x samples: the table of picks has one byte per call, and every call costs), the
memory of the world it builds (arrivals x rounds x personas), the length of every text that
goes into a prompt (thousands of requests are built at once, each with a template, a
description and two answers) and the size of every number of a collection.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any, Protocol

from prefduel.worlds.roster_file import MAX_KNOB
from prefduel.worlds.tutorsim import JUDGE_CONFIGS


class DatagenConfig(Protocol):
    """What the checks read of a `prefduel.datagen.config.DatagenConfig` (which imports this
    module, so it is described here rather than imported)."""

    K: int
    n_questions: int
    samples: int
    students: Any
    templates: Any


class Where(Protocol):
    """Where a config came from (`prefduel.datagen.collections.Where`): builds its errors."""

    def error(self, path: str, message: str) -> Exception:
        """The error naming the file and the field at ``path``."""

#: Most judge calls one config may ask for (a run of ``examples/small.yaml`` makes 11,520).
MAX_JUDGE_CALLS = 10_000_000
#: Most bytes the generated world may take in memory: about what a TutorSim world of 100,000
#: arrivals of 24 rounds with 6 personas takes (1.7 GB).
MAX_WORLD_BYTES = 2_000_000_000
#: Most characters of one text of a prompt (a template, a persona's prompt, a student's
#: description, a topic's concept...): about 5,000 tokens.
MAX_TEXT = 20_000
#: The config's collections, by field name (their entries' texts go into prompts).
COLLECTIONS = ("style", "personas", "kinds", "cues", "topics", "quirks", "students")


def judge_calls(config: DatagenConfig) -> int:
    """Judge calls of a run without malformed answers (mode ``samples``; the most that mode
    ``logprobs`` makes when no reply has logprobs)."""
    pairs = config.K * (config.K - 1) // 2
    return len(config.students) * config.n_questions * pairs * len(JUDGE_CONFIGS) * config.samples


def world_bytes(arrivals: int, rounds: int, personas: int) -> int:
    """Bytes of a stored world's arrays (`prefduel.worlds.world`): per (arrival, round), the
    features ``K x (K + 1)``, utilities ``K``, click probabilities ``K x K``, a uniform draw and
    a question index, 8 bytes each."""
    k = personas
    return 8 * arrivals * (rounds * (2 * k * k + 2 * k + 2) + 1)


def _texts(value: Any, path: str) -> Iterator[tuple[str, str]]:
    """``(path, text)`` of every string inside entries, tuples and lists."""
    if isinstance(value, str):
        yield path, value
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from _texts(getattr(value, f.name), f"{path}.{f.name}")
    elif isinstance(value, tuple | list):
        for i, item in enumerate(value):
            yield from _texts(item, f"{path}[{i}]")


def _numbers(value: Any, path: str) -> Iterator[tuple[str, float]]:
    """``(path, number)`` of every number inside entries, tuples and lists."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        yield path, value
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from _numbers(getattr(value, f.name), f"{path}.{f.name}")
    elif isinstance(value, tuple | list):
        for i, item in enumerate(value):
            yield from _numbers(item, f"{path}[{i}]")


def check_numbers(config: DatagenConfig, where: Where) -> None:
    """Refuse a number of a collection (a student's ``cue_following``, ...) larger than
    `MAX_KNOB` in size: the scripted judge exponentiates them.

    Raises:
        DatagenConfigError: Naming the file and the entry's field.
    """
    for name in COLLECTIONS:
        for path, number in _numbers(getattr(config, name), name):
            if not abs(number) <= MAX_KNOB:
                raise where.error(path, f"{number!r}; expected at most {MAX_KNOB:g} in size")


def check_texts(config: DatagenConfig, where: Where) -> None:
    """Refuse a text of a prompt longer than `MAX_TEXT` characters.

    Raises:
        DatagenConfigError: Naming the file and the entry's field.
    """
    texts = [(f"prompts.{name}", text) for name, text in config.templates.to_json().items()]
    for name in COLLECTIONS:
        texts += _texts(getattr(config, name), name)
    for path, text in texts:
        if len(text) > MAX_TEXT:
            message = f"{len(text):,} characters; at most {MAX_TEXT:,} (a text of a prompt)"
            raise where.error(path, message)


def check_sizes(config: DatagenConfig, where: Where) -> None:
    """Refuse a config whose run or world would not fit (`MAX_JUDGE_CALLS`, `MAX_WORLD_BYTES`),
    with a text too long for a prompt (`check_texts`) or a number too large (`check_numbers`).

    Raises:
        DatagenConfigError: Naming the file, what is too large and its factors.
    """
    check_texts(config, where)
    check_numbers(config, where)
    calls = judge_calls(config)
    if calls > MAX_JUDGE_CALLS:
        raise where.error(
            "judge calls",
            f"{len(config.students)} students x {config.n_questions} questions x "
            f"{config.K * (config.K - 1) // 2} persona pairs x {len(JUDGE_CONFIGS)} orders and "
            f"labels x {config.samples} samples make {calls:,} calls; at most "
            f"{MAX_JUDGE_CALLS:,}: take fewer students, topics, cues per question or samples",
        )
    n, s, k = config.layout.arrivals, config.rounds, config.K
    size = world_bytes(n, s, k)
    if size > MAX_WORLD_BYTES:
        raise where.error(
            "world",
            f"{n:,} arrivals x {s} rounds x {k} personas take {size / 1e9:.1f} GB in memory; "
            f"at most {MAX_WORLD_BYTES / 1e9:g} GB: lower world.arrivals or world.rounds",
        )


__all__ = [
    "MAX_JUDGE_CALLS",
    "MAX_TEXT",
    "MAX_WORLD_BYTES",
    "check_numbers",
    "check_sizes",
    "check_texts",
    "judge_calls",
    "world_bytes",
]
