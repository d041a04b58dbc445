"""The arrays and tables of a world built from a vote log.

- ``Phi[n, s, p] = [e_p, g(p, q)]`` (``d = K + 1``, TutorSim's convention): the persona
  indicator and the rater feature ``g``, the global strength of model ``p`` on the category of
  prompt ``q`` fitted without the arrival's voter (what a router could know without the user),
  centered over personas and divided by one standard deviation over the whole world.
- ``U``, ``P``, ``u``: drawn from the voters' posteriors (`prefduel.worlds.votes.draw_arrivals`).
- ``asks``: a ``pair`` question per pair of models and a ``least`` question per category of
  the rounds, answered from each arrival's ``U`` (`prefduel.worlds.votes.votes_answers`).
- ``students``: one per arrival (as in TutorSim, where many students share a profile), each a
  user drawn from one voter's posterior; ``questions``: the prompts the rounds replay, with
  their category; ``personas``: the chosen models.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from prefduel import __version__
from prefduel.ranking.vote_log import VoteLog
from prefduel.ranking.vote_model import VoteModel, leave_one_out_strengths
from prefduel.voteworlds.layout import Layout, arrival_layout
from prefduel.voteworlds.selection import Selection
from prefduel.worlds.votes import (
    GENERATOR,
    UTILITY_SCALE,
    VotesPosterior,
    draw_arrivals,
    votes_answers,
    votes_questions,
)
from prefduel.worlds.world import World

#: Longest prompt text kept in a world's question table (characters).
MAX_QUESTION_CHARS = 2000


def world_of(
    log: VoteLog,
    selection: Selection,
    model: VoteModel,
    rounds: int,
    arrivals: int,
    seed: int,
    name: str,
) -> tuple[World, VotesPosterior]:
    """The world (as stored, for ``seed``) and its posterior.

    Args:
        log: The vote log.
        selection: The chosen models and kept voters.
        model: The fitted model (its voters are ``selection.voters``).
        rounds: ``S``.
        arrivals: ``N``.
        seed: The world's seed.
        name: The world's name (its folder's).
    """
    battles, category = selection.battles, selection.category
    layout = arrival_layout(battles, selection.voters, arrivals=arrivals, rounds=rounds, seed=seed)
    used, student_voter = np.unique(layout.voter, return_inverse=True)
    student_index = np.arange(arrivals, dtype=np.int64)
    keys, question_index = _questions(battles.prompts, category, layout)
    phi, g_scale = _features(battles, category, model, selection.voters, layout)
    posterior = VotesPosterior(
        base=model.base,
        mean=model.delta[used],
        chol=model.covariance_cholesky()[used],
        student_voter=student_voter.astype(np.int64),
        question_category=np.array([c for _, c in keys], dtype=np.int64),
    )
    utility, prob, uniforms = draw_arrivals(posterior, student_index, question_index, seed)
    info = _info(posterior, rounds, arrivals, int(used.size), g_scale, utility)
    names = np.array(log.categories, dtype=object)
    present = names[np.unique(posterior.question_category)].tolist()
    questions = votes_questions(battles.models, present)
    round_category = names[posterior.question_category[question_index]]
    world = World(
        roster=name,
        seed=seed,
        Phi=phi,
        U=utility,
        P=prob,
        u=uniforms,
        student_index=student_index,
        question_index=question_index,
        students=_students(selection, model, layout.voter),
        questions=_question_table(keys, log.categories),
        personas=[
            {"id": m, "name": m, "prompt": "", "votes": int(v)}
            for m, v in zip(battles.models, selection.model_votes.tolist(), strict=True)
        ],
        info=info,
        asks=votes_answers(questions, utility, round_category, seed),
    )
    return world, posterior


def _info(
    posterior: VotesPosterior,
    rounds: int,
    arrivals: int,
    voters: int,
    g_scale: float,
    utility: np.ndarray,
) -> dict[str, Any]:
    """The world's ``info`` before the provenance is added (`prefduel.voteworlds.build`)."""
    return {
        "generator": GENERATOR,
        "version": __version__,
        "votes": {
            "posterior_sha256": posterior.digest(),
            "rounds": rounds,
            "arrivals": arrivals,
            "voters_arriving": voters,
            "features": {
                "phi": "[e_p, g]: g is the global strength of each model on the prompt's "
                "category fitted without the arrival's voter, centered over personas, divided "
                "by g_scale",
                "g_scale": g_scale,
            },
            "utility": {
                "scale": UTILITY_SCALE,
                "clipped_share": float(np.mean((utility == 0.0) | (utility == 1.0))),
            },
        },
    }


def _questions(
    prompts: np.ndarray | None, category: np.ndarray, layout: Layout
) -> tuple[list[tuple[str, int]], np.ndarray]:
    """The distinct (prompt, category) of the rounds, and each round's index into them."""
    texts = (
        np.full(layout.rows.shape, "", dtype=object)
        if prompts is None
        else prompts[layout.rows]
    )
    flat = list(zip(texts.ravel().tolist(), category[layout.rows].ravel().tolist(), strict=True))
    index: dict[tuple[str, int], int] = {}
    codes = np.fromiter((index.setdefault(k, len(index)) for k in flat), np.int64, len(flat))
    return list(index), codes.reshape(layout.rows.shape)


def _question_table(keys: list[tuple[str, int]], categories: tuple[str, ...]) -> list[dict]:
    """One entry per question: id, prompt text (cut at `MAX_QUESTION_CHARS`), category."""
    table = []
    for i, (text, c) in enumerate(keys):
        entry: dict[str, Any] = {
            "id": f"q{i:05d}",
            "text": text[:MAX_QUESTION_CHARS],
            "category": categories[c],
            "topic": categories[c],
        }
        if len(text) > MAX_QUESTION_CHARS:
            entry["text_chars"] = len(text)
        table.append(entry)
    return table


def _features(
    battles: Any, category: np.ndarray, model: VoteModel, voters: np.ndarray, layout: Layout
) -> tuple[np.ndarray, float]:
    """``Phi`` ``(N, S, K, K + 1)`` and the scale ``g`` was divided by."""
    k = battles.n_models
    user = voters[layout.voter][:, None] * np.ones_like(layout.rows)
    cell_key = user * model.gamma.shape[0] + category[layout.rows]
    cells, cell_of = np.unique(cell_key, return_inverse=True)
    strengths = leave_one_out_strengths(
        battles, category, model, cells // model.gamma.shape[0], cells % model.gamma.shape[0]
    )
    g = strengths[cell_of.reshape(layout.rows.shape)]  # (N, S, K), centered
    scale = float(g.std())
    scale = scale if scale > 1e-12 else 1.0
    phi = np.zeros((*layout.rows.shape, k, k + 1))
    phi[..., np.arange(k), np.arange(k)] = 1.0
    phi[..., k] = g / scale
    return phi, scale


def _students(selection: Selection, model: VoteModel, voter: np.ndarray) -> list[dict[str, Any]]:
    """One entry per arrival: its voter, their votes, and the model their posterior mean
    favours (on their own mix of categories), which is also the ``profile``. An arrival's id is
    its voter's, numbered (``#1``, ``#2``, ...) when the voter arrives more than once."""
    battles = selection.battles
    favourite = _favourites(selection, model)
    arrivals_of = np.bincount(voter, minlength=selection.voters.size)
    seen = np.zeros(selection.voters.size, dtype=np.int64)
    students = []
    for v in voter.tolist():
        seen[v] += 1
        name, best = battles.users[selection.voters[v]], battles.models[favourite[v]]
        votes = int(selection.votes[v])
        students.append({
            "id": name if arrivals_of[v] == 1 else f"{name}#{seen[v]}",
            "voter": name,
            "name": name,
            "profile": f"prefers {best}",
            "description": f"a user drawn from voter {name}'s posterior ({votes} votes among "
            f"the world's models; prefers {best} on average)",
            "votes": votes,
        })
    return students


def _favourites(selection: Selection, model: VoteModel) -> np.ndarray:
    """``(V,)`` the model each kept voter's posterior mean favours on their own mix of
    categories."""
    battles = selection.battles
    n_categories = model.gamma.shape[0]
    slot = np.full(battles.n_users, -1, dtype=np.int64)
    slot[selection.voters] = np.arange(selection.voters.size)
    rows = np.flatnonzero(slot[battles.user] >= 0)
    mix = np.bincount(
        slot[battles.user[rows]] * n_categories + selection.category[rows],
        minlength=selection.voters.size * n_categories,
    ).reshape(selection.voters.size, n_categories)
    mix = mix / np.maximum(mix.sum(axis=1, keepdims=True), 1)
    return np.argmax(mix @ model.base + model.delta, axis=1)


__all__ = ["MAX_QUESTION_CHARS", "world_of"]
