"""What the stages collected -> the World and the ``datagen/`` files.

`build_world` turns the judge picks into ``P`` and ``U``, the rater scores into ``g``, lays out
the arrivals and assembles the World; `write_outputs` stores it with ``datagen/tables.npz``,
``questions.jsonl``, ``battles.jsonl`` and ``malformed.jsonl``; an incomplete run writes only
``datagen/malformed.jsonl`` and ``failures.jsonl`` (`write_incomplete`); `write_summary` writes
``datagen/summary.json`` (``"complete": false`` for an incomplete run).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from prefduel import __version__
from prefduel.core.btl import pairs_of
from prefduel.core.outputs import output_dir, output_file
from prefduel.datagen.aggregate import (
    assemble_world,
    expected_tally,
    layout,
    pick_diagnostics,
    probabilities_and_utilities,
    rater_features,
    tally,
)
from prefduel.datagen.asks import AskCollected, ask_bank
from prefduel.datagen.calls import QuestionSpec, judge_order
from prefduel.datagen.errors import DatagenError
from prefduel.datagen.results import DatagenResult
from prefduel.datagen.settings import WorldSettings
from prefduel.llm.client import LLMClient
from prefduel.llm.urls import public_url
from prefduel.worlds.world import World


@dataclass
class Collected:
    """What the four stages collected.

    Attributes:
        specs: The question bank.
        questions: Bank index -> question text (or the stage engine's ``MALFORMED`` /
            ``FAILED``, or a dry run's placeholder).
        answers: Asked question -> one answer per persona (same markers possible).
        usable: Questions with a text and every answer, in bank order.
        dropped: Questions without a usable text or answer (failed calls excluded).
        scores: Asked question -> persona id -> rater score (or a marker).
        picks: Judge picks per (student, question, pair, judge condition, sample); ``NO_PICK``
            where missing (or measured by logprobs).
        probs: Judge mode ``logprobs``: the pair's first persona's pick probability per
            (student, question, pair, judge condition); NaN where it was sampled. None in
            mode ``samples``.
        fallback: Configurations whose logprob reply had none (sampled instead).
        asks: What the ask stages collected (None when the students are not asked).
    """

    specs: list[QuestionSpec]
    questions: dict[int, Any]
    answers: dict[int, list[Any]]
    usable: list[int]
    dropped: list[int]
    scores: dict[int, Any]
    picks: np.ndarray
    probs: np.ndarray | None = None
    fallback: int = 0
    asks: AskCollected | None = None


#: The files a run writes into its world folder (`write_outputs`, `write_incomplete`,
#: `write_summary`; `World.save`).
WORLD_FILES = ("world.json", "arrays.npz")
DATAGEN_FILES = (
    "summary.json",
    "tables.npz",
    "questions.jsonl",
    "battles.jsonl",
    "malformed.jsonl",
    "failures.jsonl",
)


def _check_folder(folder: Path) -> bool:
    """Check that ``folder`` is a writable folder, or can be created (nothing is created, so an
    interrupted run leaves no empty world folder); True when it exists."""
    if os.path.lexists(folder):
        if not folder.is_dir():
            raise DatagenError(
                f"world folder {folder} is an existing file, not a folder; give a folder path"
            )
        output_dir(folder, "world folder", DatagenError)  # it exists: a write is only probed
        return True
    ancestor = folder.parent
    while not os.path.lexists(ancestor) and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise DatagenError(f"world folder {folder} cannot be created: {ancestor} is not a folder")
    output_dir(ancestor, f"world folder {folder} cannot be created: the folder", DatagenError)
    return False


def check_outputs(output: Path) -> None:
    """Check, before any call, that the world folder and every file a run writes there can be
    written, so that nothing a run paid for is lost at the end. Nothing is created.

    Raises:
        DatagenError: Naming the path and why it cannot be written.
    """
    for folder, names in ((output, WORLD_FILES), (output / "datagen", DATAGEN_FILES)):
        if not _check_folder(folder):
            return  # a new folder holds no file yet
        for name in names:
            output_file(folder / name, "world file", DatagenError)


def endpoint(client: LLMClient) -> str | None:
    """The base URL the client's backend sends to (`public_url`), or None."""
    backend = client.backend
    url = getattr(backend, "endpoint", None)
    if url is None:
        url = getattr(backend, "base_url", None)
    return public_url(url) if isinstance(url, str) and url else None


def _rater_scores(ids: list[str], data: Collected) -> np.ndarray:
    """Scores per (usable question, persona ``ids``); NaN rows for questions without usable
    scores."""
    return np.array(
        [
            [data.scores[qi][pid] for pid in ids]
            if isinstance(data.scores[qi], dict)
            else [np.nan] * len(ids)
            for qi in data.usable
        ]
    ).reshape(len(data.usable), len(ids))


def _students(world: WorldSettings) -> list[dict[str, Any]]:
    """The world's students (each is its own profile)."""
    return [
        {
            "id": s.id,
            "profile": s.id,
            "name": s.name,
            "description": s.description,
            "quirks": list(s.quirks),
        }
        for s in world.students
    ]


def _question_entries(ids: list[str], data: Collected, scores: np.ndarray) -> list[dict[str, Any]]:
    """The world's questions: spec, text and rater scores (None when unusable)."""
    questions = []
    for qi, row in zip(data.usable, scores, strict=True):
        entry = {**data.specs[qi].to_json(), "text": data.questions[qi]}
        entry["rater"] = None if np.isnan(row).any() else dict(zip(ids, row.tolist(), strict=True))
        questions.append(entry)
    return questions


def _world_info(
    world: WorldSettings,
    models: dict[str, str],
    backend: str,
    result: DatagenResult,
    scores: np.ndarray,
) -> dict[str, Any]:
    """The world's ``info``: generator, models, judge diagnostics, dropped questions."""
    return {
        "generator": "datagen",
        "config": world.name,
        "source": world.source,
        "backend": backend,
        "models": models,
        "samples": world.samples,
        **({"judge_mode": world.judge_mode} if world.judge_mode != "samples" else {}),
        "bt": {"ridge": world.bt_ridge, "scale": world.bt_scale},
        "layout": (
            "students assigned in a seeded balanced random order; each arrival gets "
            f"{world.rounds} distinct questions drawn uniformly from {len(scores)}"
        ),
        "dropped_questions": result.dropped,
        "rater_unusable": int(np.isnan(scores).any(axis=1).sum()),
        "judge": result.diagnostics,
        "version": __version__,
    }


def check_picks(
    min_valid: float, picks: np.ndarray, probs: np.ndarray | None, result: DatagenResult
) -> None:
    """Refuse to build a world from fewer valid judge picks than ``min_valid`` of them
    (``judge.min_valid``).

    A configuration measured by logprobs counts as its ``samples`` picks.

    Raises:
        DatagenError: Naming the counts, an example of a malformed reply, the setting, and how
            to re-run (every answer is cached).
    """
    asked = int(picks.size)
    valid = round(float(expected_tally(picks, probs)[1].sum()))
    if asked and valid >= min_valid * asked:
        return
    replies = [m for m in result.malformed if m["stage"] == "judge"]
    example = f" (e.g. {replies[0]['text'][:80]!r}; all in datagen/malformed.jsonl)" if replies \
        else ""
    raise DatagenError(
        f"only {valid:,} of {asked:,} judge picks are valid ({valid / max(asked, 1):.0%}); at "
        f"least {min_valid:.0%} must be (judge.min_valid): {asked - valid:,} "
        f"missing after {len(replies):,} malformed replies{example}; no world written. Every "
        "answer is cached: change the judge (its model, endpoint, prompt or structured output) "
        "and re-run, and only the judge's calls are sent; re-running the same judge is served "
        "the same replies from the cache (prefduel cache clear --role judge --yes forgets them)"
    )


def build_world(
    world: WorldSettings,
    data: Collected,
    models: dict[str, str],
    backend: str,
    result: DatagenResult,
) -> tuple[World, dict[str, np.ndarray]]:
    """The World and the ``tables.npz`` arrays; sets ``result.diagnostics``.

    Args:
        world: The world's settings.
        data: What the stages collected (every call answered).
        models: Role -> model name the requests used.
        backend: The backend's cache namespace.
        result: The result being built (its ``dropped`` is read).

    Raises:
        DatagenError: Fewer usable questions than rounds per arrival, or fewer valid judge
            picks than ``judge.min_valid`` of them (`check_picks`).
    """
    usable = data.usable
    if world.rounds > len(usable):
        raise DatagenError(
            f"only {len(usable)} usable questions for {world.rounds} rounds per arrival "
            f"(dropped: {result.dropped}); raise the retries or lower world.rounds"
        )
    picks = data.picks[:, usable]
    probs = data.probs[:, usable] if data.probs is not None else None
    check_picks(world.min_valid, picks, probs, result)
    ids = [p.id for p in world.personas]
    prob, utility = probabilities_and_utilities(
        picks, len(ids), ridge=world.bt_ridge, scale=world.bt_scale, probs=probs
    )
    scores = _rater_scores(ids, data)
    g = rater_features(scores)
    student_index, question_index, uniforms = layout(
        len(world.students), len(usable), world.arrivals, world.rounds, world.seed
    )
    asks, info = (
        ask_bank(data.asks, student_index, ids) if data.asks is not None else (None, None)
    )
    result.diagnostics = pick_diagnostics(picks, probs)
    if probs is not None:
        result.diagnostics["sampled_without_logprobs"] = data.fallback
    built = assemble_world(
        name=world.name,
        seed=world.seed,
        prob=prob,
        utility=utility,
        g=g,
        student_index=student_index,
        question_index=question_index,
        uniforms=uniforms,
        students=_students(world),
        questions=_question_entries(ids, data, scores),
        personas=[{"id": p.id, "name": p.name, "prompt": p.prompt} for p in world.personas],
        info={
            **_world_info(world, models, backend, result, scores),
            **({"asks": info} if info is not None else {}),
        },
        asks=asks,
    )
    wins, total = tally(picks)
    tables = {"P": prob, "U": utility, "wins": wins, "total": total, "scores": scores, "g": g}
    if probs is not None:
        tables["judge_p"] = probs
    if data.asks is not None:
        tables["ask_answers"] = data.asks.answers  # per student; -1: malformed
    return built, {**tables, "picks": picks}


def _battles(result: DatagenResult, picks: np.ndarray) -> Iterator[dict[str, Any]]:
    """One Arena-style row per valid pick (who was shown as ``model_a``, who won), made as they
    are written: a run may have millions."""
    world = result.world
    assert world is not None
    personas = [p["id"] for p in world.personas]
    students = [s["id"] for s in world.students]
    pairs = pairs_of(len(personas))
    for i, q, j, c, s in zip(*np.nonzero(picks >= 0), strict=True):
        a = int(pairs[j, 0])
        first, second, first_label = judge_order(a, int(pairs[j, 1]), c)
        a_won = picks[i, q, j, c, s] == 1
        first_won = a_won == (first == a)
        yield {
            "model_a": personas[first],
            "model_b": personas[second],
            "winner": "model_a" if first_won else "model_b",
            "judge": students[int(i)],
            "question_id": world.questions[int(q)]["id"],
            "label_a": first_label,
            "sample": int(s),
        }


def _write_lines(
    path: Path, rows: Iterable[dict[str, Any]], *, ascii_only: bool = False
) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=ascii_only) + "\n")


def write_outputs(result: DatagenResult, tables: dict[str, np.ndarray], data: Collected) -> None:
    """Save the world to ``result.output`` and the ``datagen/`` tables, questions (with their
    answers), battles and malformed answers."""
    assert result.world is not None and result.output is not None
    ids = [p["id"] for p in result.world.personas]
    result.world.save(result.output)
    extra = result.output / "datagen"
    extra.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(extra / "tables.npz", **tables)
    questions = [
        {**entry, "answers": dict(zip(ids, data.answers[qi], strict=True))}
        for entry, qi in zip(result.world.questions, data.usable, strict=True)
    ]
    _write_lines(extra / "questions.jsonl", questions)
    _write_lines(extra / "battles.jsonl", _battles(result, tables["picks"]), ascii_only=True)
    _write_lines(extra / "malformed.jsonl", result.malformed)


def write_incomplete(result: DatagenResult) -> None:
    """An incomplete run's ``datagen/malformed.jsonl`` and ``failures.jsonl`` (no world)."""
    assert result.output is not None
    extra = result.output / "datagen"
    extra.mkdir(parents=True, exist_ok=True)
    _write_lines(extra / "malformed.jsonl", result.malformed)
    _write_lines(extra / "failures.jsonl", result.failures)


def write_summary(result: DatagenResult) -> None:
    """Write ``datagen/summary.json`` (settings used, endpoint, spend, per-stage counts)."""
    assert result.output is not None
    extra = result.output / "datagen"
    extra.mkdir(parents=True, exist_ok=True)
    summary = {
        "config": dict(result.run.record),
        "complete": result.complete,
        **(
            {"failed_calls": len(result.failures), "endpoint_error": result.endpoint_error}
            if not result.complete
            else {}
        ),
        **({"refused": result.refused} if result.refused is not None else {}),
        "backend": result.backend,
        "base_url": result.base_url,
        "spend": result.spend(),
        **({"batch": result.batch} if result.batch is not None else {}),
        "stages": [s.to_json() for s in result.stages],
        "currency": result.currency,
        "malformed": dict(Counter(m["stage"] for m in result.malformed)),
        "dropped_questions": result.dropped,
        "diagnostics": result.diagnostics,
        "seconds": round(result.seconds, 3),
        "version": __version__,
    }
    (extra / "summary.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")


__all__ = [
    "DATAGEN_FILES",
    "WORLD_FILES",
    "Collected",
    "build_world",
    "check_outputs",
    "check_picks",
    "endpoint",
    "write_incomplete",
    "write_outputs",
    "write_summary",
]
