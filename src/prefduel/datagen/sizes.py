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
from collections.abc import Iterator, Mapping
from typing import Any

from prefduel.datagen.collections import Collections, Where
from prefduel.worlds.roster_file import MAX_KNOB
from prefduel.worlds.tutorsim import JUDGE_CONFIGS

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


def judge_calls(students: int, questions: int, personas: int, samples: int) -> int:
    """Judge calls of a run without malformed answers (mode ``samples``; the most that mode
    ``logprobs`` makes when no reply has logprobs)."""
    pairs = personas * (personas - 1) // 2
    return students * questions * pairs * len(JUDGE_CONFIGS) * samples


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


def check_numbers(collections: Collections, where: Where) -> None:
    """Refuse a number of a collection (a student's ``cue_following``, ...) larger than
    `MAX_KNOB` in size: the scripted judge exponentiates them.

    Raises:
        DatagenConfigError: Naming the file and the entry's field.
    """
    for name in COLLECTIONS:
        for path, number in _numbers(getattr(collections, name), name):
            if not abs(number) <= MAX_KNOB:
                raise where.error(path, f"{number!r}; expected at most {MAX_KNOB:g} in size")


def check_texts(collections: Collections, templates: Mapping[str, str], where: Where) -> None:
    """Refuse a text of a prompt (a template by name, or a text of a collection's entry)
    longer than `MAX_TEXT` characters.

    Raises:
        DatagenConfigError: Naming the file and the entry's field.
    """
    texts = [(f"prompts.{name}", text) for name, text in templates.items()]
    for name in COLLECTIONS:
        texts += _texts(getattr(collections, name), name)
    for path, text in texts:
        if len(text) > MAX_TEXT:
            message = f"{len(text):,} characters; at most {MAX_TEXT:,} (a text of a prompt)"
            raise where.error(path, message)


def check_sizes(
    collections: Collections,
    templates: Mapping[str, str],
    *,
    questions: int,
    samples: int,
    arrivals: int,
    rounds: int,
    where: Where,
) -> None:
    """Refuse a config whose run or world would not fit (`MAX_JUDGE_CALLS`, `MAX_WORLD_BYTES`),
    with a text too long for a prompt (`check_texts`) or a number too large (`check_numbers`).

    Args:
        collections: The config's collections (its students and personas are counted).
        templates: The prompt templates by name.
        questions: Questions in the bank.
        samples: Judge samples per configuration.
        arrivals: Arrivals of the world.
        rounds: Rounds per arrival.
        where: Where the config came from.

    Raises:
        DatagenConfigError: Naming the file, what is too large and its factors.
    """
    check_texts(collections, templates, where)
    check_numbers(collections, where)
    students, k = len(collections.students), len(collections.personas)
    calls = judge_calls(students, questions, k, samples)
    if calls > MAX_JUDGE_CALLS:
        raise where.error(
            "judge calls",
            f"{students} students x {questions} questions x {k * (k - 1) // 2} persona pairs "
            f"x {len(JUDGE_CONFIGS)} orders and labels x {samples} samples make {calls:,} "
            f"calls; at most {MAX_JUDGE_CALLS:,}: take fewer students, topics, cues per question "
            "or samples",
        )
    size = world_bytes(arrivals, rounds, k)
    if size > MAX_WORLD_BYTES:
        raise where.error(
            "world",
            f"{arrivals:,} arrivals x {rounds} rounds x {k} personas take {size / 1e9:.1f} GB in "
            f"memory; at most {MAX_WORLD_BYTES / 1e9:g} GB: lower world.arrivals or world.rounds",
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
