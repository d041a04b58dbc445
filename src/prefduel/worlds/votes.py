"""Worlds built from a vote log: the posterior such a world carries, and how each seed
redraws it (``prefduel worlds build --from-votes``; docs/votes-worlds.md).

A world built from a vote log is a stored world (`prefduel.worlds.world.World.save`) with one
more file, ``votes/posterior.npz``, that holds the fitted model of the log:

==========================  ==============  ==============================================
array                       shape           meaning
==========================  ==============  ==============================================
``base``                    ``C x K``       global strengths of the ``K`` models on each
                                            of ``C`` prompt categories (logits)
``mean``                    ``V x K``       each voter's posterior mean deviation
``chol``                    ``V x K x K``   lower Cholesky factor of its posterior covariance
``student_voter``           ``n``           the voter of each of the world's ``students``
``question_category``       ``Q``           the category of each of its ``questions``
==========================  ==============  ==============================================

Each arrival is a student of its own (as in TutorSim, where students share a profile): a user
drawn from one voter's posterior, as far as the log can tell. An arrival of voter ``v`` draws
its strengths once, ``theta = base[c] + mean[v] + chol[v] z`` with ``z ~ N(0, I)``, on every
round's category ``c``; its utilities are
``U = clip(0.5 + (theta - mean_p theta) / 8, 0, 1)`` (TutorSim's common scale) and its clicks
follow Bradley-Terry on the strengths, ``P[a, b] = s(theta_a - theta_b)``.

Such a world can be asked (`prefduel.worlds.asking`): its bank holds a ``pair`` question per
pair of models and a ``least`` question per prompt category of its rounds (no ``level``
questions: a vote log says nothing of the models' styles). Each arrival answers from its own
utilities ``U`` by the published answer model, with ``v_bar`` its utilities averaged over its
rounds, ``v_kind`` the same within each category (``v_bar`` for a category it has no round of)
and ``beta = UTILITY_SCALE``: as long as no utility is clipped, ``UTILITY_SCALE (U_a - U_b)``
is the click logit ``theta_a - theta_b``, so a ``pair`` answer at the default noise has the
chance of a click between the two averaged over the arrival's rounds (`votes_answers`).

Seed ``s`` of such a world re-orders its arrivals and redraws every arrival's strengths, click
uniforms and answers from ``stream(s, "votes-world", "order" | "utilities" | "clicks" |
"answers")``; the seed recorded in ``world.json`` gives the world back as stored (built with the
same streams, without the re-ordering). The answers' stream is separate, so the arrays are
those of a world without questions, bit for bit. `VotesGenerator` is registered as the world
generator ``votes``; a folder holding ``votes/posterior.npz`` is parsed into a spec with that
generator.
"""

from __future__ import annotations

import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from prefduel.core.answer_model import DEFAULT_ANSWER_NOISE
from prefduel.core.btl import btl_matrix
from prefduel.core.errors import WorldFormatError
from prefduel.core.rng import stream
from prefduel.worlds.asking import AskBank, AskQuestion, answer_bank, pair_questions
from prefduel.worlds.world import World, arrays_digest, load_world

#: The generator id, also written as ``info["generator"]`` of such worlds.
GENERATOR = "votes"
#: The folder of a world's vote-log files, and the posterior's file in it.
FOLDER = "votes"
POSTERIOR_FILE = "posterior.npz"
POSTERIOR_ARRAYS = ("base", "mean", "chol", "student_voter", "question_category")
#: Logits spanning the unit interval of utilities (TutorSim's ``bt_scale``).
UTILITY_SCALE = 8.0


def posterior_path(folder: str | Path) -> Path:
    """Where the posterior of the world in ``folder`` (or its ``world.json``) is stored."""
    folder = Path(folder)
    if folder.name == "world.json":
        folder = folder.parent
    return folder / FOLDER / POSTERIOR_FILE


def is_votes_world(folder: str | Path) -> bool:
    """Whether ``folder`` holds a world built from a vote log (its posterior file exists)."""
    return posterior_path(folder).is_file()


@dataclass(frozen=True, eq=False)
class VotesPosterior:
    """The fitted model a world built from a vote log draws its arrivals from (see the
    module docstring for the arrays)."""

    base: np.ndarray
    mean: np.ndarray
    chol: np.ndarray
    student_voter: np.ndarray
    question_category: np.ndarray

    def arrays(self) -> dict[str, np.ndarray]:
        """The arrays by name, in their stored dtypes."""
        return {
            "base": np.ascontiguousarray(self.base, dtype=np.float64),
            "mean": np.ascontiguousarray(self.mean, dtype=np.float64),
            "chol": np.ascontiguousarray(self.chol, dtype=np.float64),
            "student_voter": np.ascontiguousarray(self.student_voter, dtype=np.int64),
            "question_category": np.ascontiguousarray(self.question_category, dtype=np.int64),
        }

    def digest(self) -> str:
        """SHA-256 over the arrays' names, shapes and bytes (recorded in ``world.json``)."""
        return arrays_digest(self.arrays())

    def validate(self, world: World, where: str) -> None:
        """Check the shapes against ``world`` (its students, questions and ``K``) and the
        values.

        Raises:
            WorldFormatError: naming the array at fault.
        """
        c = self.base.shape[0] if self.base.ndim == 2 else 0
        v = self.mean.shape[0] if self.mean.ndim == 2 else 0
        expect = {
            "base": (c, world.K),
            "mean": (v, world.K),
            "chol": (v, world.K, world.K),
            "student_voter": (len(world.students),),
            "question_category": (len(world.questions),),
        }
        for name, shape in expect.items():
            got = getattr(self, name).shape
            if got != shape or min(c, v) < 1:
                raise WorldFormatError(
                    f"{where}: posterior {name} must have shape {shape}, got {got}"
                )
        for name in ("base", "mean", "chol"):
            if not np.all(np.isfinite(getattr(self, name))):
                raise WorldFormatError(f"{where}: posterior {name} contains NaN or infinity")
        for name, top in (("student_voter", v), ("question_category", c)):
            values = getattr(self, name)
            if values.size and not 0 <= values.min() <= values.max() < top:
                raise WorldFormatError(f"{where}: posterior {name} points outside its table")
        if not np.allclose(self.chol, np.tril(self.chol)) or np.any(
            np.diagonal(self.chol, axis1=1, axis2=2) <= 0
        ):
            raise WorldFormatError(
                f"{where}: posterior chol must be lower triangular with a positive diagonal"
            )

    def save(self, folder: str | Path) -> Path:
        """Write ``votes/posterior.npz`` into the world folder ``folder``; returns the file."""
        path = posterior_path(folder)
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(path, **self.arrays())
        return path


def load_posterior(world: World, folder: str | Path) -> VotesPosterior:
    """The posterior of the world in ``folder`` (``world`` loaded from it), checked against
    the digest its ``world.json`` records and against the world.

    Raises:
        WorldFormatError: a missing, unreadable or corrupt file, or one that does not fit.
    """
    path = posterior_path(folder)
    where = f"stored world {Path(folder)}"
    record = world.info.get("votes")
    expected = record.get("posterior_sha256") if isinstance(record, dict) else None
    if world.info.get("generator") != GENERATOR or not isinstance(expected, str):
        raise WorldFormatError(
            f"{where}: {FOLDER}/{POSTERIOR_FILE} is there but world.json is not that of a "
            "world built from a vote log (info.generator 'votes' with info.votes."
            "posterior_sha256)"
        )
    try:
        with np.load(path, allow_pickle=False) as data:
            posterior = VotesPosterior(**{name: data[name] for name in POSTERIOR_ARRAYS})
    except KeyError as exc:
        raise WorldFormatError(f"{where}: {POSTERIOR_FILE} lacks array {exc}") from exc
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise WorldFormatError(f"{where}: {POSTERIOR_FILE} is unreadable ({exc})") from exc
    if posterior.digest() != expected:
        raise WorldFormatError(
            f"{where}: {POSTERIOR_FILE} does not match the sha256 world.json records "
            "(corrupt file, or from another build)"
        )
    posterior.validate(world, where)
    return posterior


def draw_arrivals(
    posterior: VotesPosterior,
    student_index: np.ndarray,
    question_index: np.ndarray,
    seed: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Utilities, click probabilities and click uniforms of arrivals drawn for ``seed``.

    Args:
        posterior: The world's posterior.
        student_index: ``(N,)`` the student of each arrival.
        question_index: ``(N, S)`` the question of each round.
        seed: Seed of ``stream(seed, "votes-world", "utilities" | "clicks")``.

    Returns:
        ``(U, P, u)``: ``(N, S, K)``, ``(N, S, K, K)`` and ``(N, S)``.
    """
    n, k = student_index.shape[0], posterior.base.shape[1]
    z = stream(seed, "votes-world", "utilities").standard_normal((n, k))
    voter = posterior.student_voter[student_index]
    deviation = posterior.mean[voter] + np.einsum("nij,nj->ni", posterior.chol[voter], z)
    theta = posterior.base[posterior.question_category[question_index]] + deviation[:, None, :]
    utility = np.clip(
        0.5 + (theta - theta.mean(axis=-1, keepdims=True)) / UTILITY_SCALE, 0.0, 1.0
    )
    uniforms = stream(seed, "votes-world", "clicks").random(question_index.shape)
    return utility, btl_matrix(theta), uniforms


def votes_questions(
    models: Sequence[str], categories: Sequence[str]
) -> tuple[AskQuestion, ...]:
    """The bank of a world built from a vote log: a ``pair`` question per pair of models, a
    ``least`` question per prompt category (``categories``: those of the world's rounds; one
    unnamed category, a log without categories, asks about any prompt)."""
    out = pair_questions(models, "Would you rather have {a} or {b}?")
    out += [
        AskQuestion(
            f"least:{category}" if category else "least",
            "least",
            f"For a {category} prompt, which model would you want least?"
            if category
            else "Which model would you want least?",
            about=category,
        )
        for category in categories
    ]
    return tuple(out)


def votes_answers(
    questions: Sequence[AskQuestion],
    utility: np.ndarray,
    round_category: np.ndarray,
    seed: int,
    noise: float = DEFAULT_ANSWER_NOISE,
) -> AskBank:
    """Every arrival's answers to ``questions`` (module docstring), drawn from
    ``stream(seed, "votes-world", "answers")``.

    Args:
        questions: The bank (`votes_questions`).
        utility: ``(N, S, K)`` the arrivals' utilities ``U``.
        round_category: ``(N, S)`` the category name of every round.
        seed: The world's (or replicate's) seed.
        noise: The answer noise (1: the noise of one click).
    """
    v_bar = utility.mean(axis=1)
    v_kind = {}
    for category in {q.about for q in questions if q.kind == "least"}:
        mask = (round_category == category)[..., None]
        count = mask.sum(axis=1)
        within = np.where(mask, utility, 0.0).sum(axis=1) / np.maximum(count, 1)
        v_kind[category] = np.where(count > 0, within, v_bar)
    rng = stream(seed, "votes-world", "answers")
    answers = answer_bank(questions, v_bar, v_kind, UTILITY_SCALE, noise, rng)
    return AskBank(tuple(questions), answers, noise)


def round_categories(world: World, question_index: np.ndarray) -> np.ndarray:
    """``(N, S)`` the category name of every round of ``question_index`` (``world``'s
    question table)."""
    names = np.array([str(q.get("category", "")) for q in world.questions], dtype=object)
    return names[question_index]


def votes_replicate(world: World, posterior: VotesPosterior, seed: int) -> World:
    """Replicate ``seed`` of a world built from a vote log: its arrivals in a new order, each
    with strengths drawn afresh from its voter's posterior, new click draws and new answers
    to the world's preference questions (when it has them).

    Each arrival keeps its voter, questions and features ``Phi`` (what a router could know
    without the user). The world's own seed gives it back as stored.

    Returns:
        A `World` with ``seed`` set and ``info["replicate_of_seed"]`` recording the stored
        seed; ``world`` itself when ``seed == world.seed``.
    """
    if seed == world.seed:
        return world
    order = stream(seed, "votes-world", "order").permutation(world.N)
    student_index = world.student_index[order]
    question_index = world.question_index[order]
    utility, prob, uniforms = draw_arrivals(posterior, student_index, question_index, seed)
    asks = None
    if world.asks is not None:  # a world built before its bank existed stays without one
        asks = votes_answers(
            world.asks.questions,
            utility,
            round_categories(world, question_index),
            seed,
            world.asks.noise,
        )
    return World(
        roster=world.roster,
        seed=int(seed),
        Phi=world.Phi[order],
        U=utility,
        P=prob,
        u=uniforms,
        student_index=student_index,
        question_index=question_index,
        students=world.students,
        questions=world.questions,
        personas=world.personas,
        info={**world.info, "replicate_of_seed": world.seed},
        asks=asks,
        ask_budget=world.ask_budget,
    )


@dataclass(frozen=True)
class VotesGenerator:
    """The ``votes`` generator: a folder written by ``prefduel worlds build --from-votes``;
    each seed redraws the arrival order, the utilities and the clicks (`votes_replicate`)."""

    def make(self, spec: Any, seed: int) -> World:
        if spec.path is None:
            raise WorldFormatError(f"world {spec.label!r}: the votes generator needs a folder")
        world = load_world(spec.path)
        return votes_replicate(world, load_posterior(world, spec.path), seed)

    def students(self, spec: Any, seed: int) -> tuple[list[dict[str, Any]], np.ndarray]:
        world = self.make(spec, seed) if spec.path is None else load_world(spec.path)
        if seed == world.seed:
            return world.students, world.student_index
        order = stream(seed, "votes-world", "order").permutation(world.N)
        return world.students, world.student_index[order]


def refuse_without_posterior(world: World, folder: str | Path) -> None:
    """Refuse to read a world built from a vote log as a plain stored world: without its
    posterior, its seeds would keep the stored utilities instead of redrawing them.

    Raises:
        WorldFormatError: ``world`` records the ``votes`` generator.
    """
    if world.info.get("generator") == GENERATOR:
        raise WorldFormatError(
            f"stored world {Path(folder)}: built from a vote log, but {FOLDER}/{POSTERIOR_FILE} "
            "is missing; its seeds redraw utilities from that posterior (copy the whole "
            "folder, or build the world again)"
        )


__all__ = [
    "FOLDER",
    "GENERATOR",
    "POSTERIOR_ARRAYS",
    "POSTERIOR_FILE",
    "UTILITY_SCALE",
    "VotesGenerator",
    "VotesPosterior",
    "draw_arrivals",
    "is_votes_world",
    "load_posterior",
    "posterior_path",
    "refuse_without_posterior",
    "round_categories",
    "votes_answers",
    "votes_questions",
    "votes_replicate",
]
