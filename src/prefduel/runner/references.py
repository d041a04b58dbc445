"""Reference rows computed from a world's utilities (not run as policies).

Rows share the keys of policy rows (see `prefduel.runner.cell.run_cell`) with
``"kind": "reference"``:

==============================  =========================================================
``ref:floor``                   the two best personas every round (score 100 by definition)
``ref:random``                  uniformly random distinct pairs, exact expectation (score 0)
``ref:best-single-pair``        the one fixed pair with least regret over the whole roster
``ref:best-pair-per-user``      each user's best fixed pair, chosen in hindsight
``ref:oracle-user``             per-user linear oracle: each user's theta fitted in hindsight
                                by least squares of U on the policy features, top-2 of
                                theta.phi
``ref:oracle-pooled``           one theta for the whole roster, fitted the same way
``ref:rater-top2``              the two personas with the highest rater score g (no learning)
``ref:oracle-prior``            a Bayesian learner whose prior is the population: the
                                oracle-user thetas of the *other* users (leave-one-out) as
                                equally weighted particles, updated by Bayes' rule from the
                                user's clicks, greedy pairs (`prefduel.runner.headroom`)
``ref:oracle-prior-lookahead``  the same learner, each pair chosen by an exact 4-round
                                lookahead (the pair now, then greedy play, every click
                                outcome enumerated)
``ref:oracle-prior-ask``        on an ask track only: ``ref:oracle-prior`` that first spends
                                the arrival's questions, each the most informative about
                                the particles, the answers reweighting them
                                (`prefduel.runner.headroom_ask`)
==============================  =========================================================

A reference that a world cannot define is still written, with an ``"undefined"`` field giving
the reason (`undefined_references`): ``ref:rater-top2`` when the rater feature g (the last
feature) is the same for every persona in every round (e.g. a generated world whose rater
answers were all unusable), so that its "top two" would be chosen by tie-breaking. Its numbers
are those of the tie-break and mean nothing; ``prefduel stats`` and the report show it as
undefined and leave it out of their means. The ``ref:oracle-prior*`` rows are undefined when
some arrival has no other student in its world (its leave-one-out prior would be empty).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from prefduel.core.btl import pairs_of, top_two
from prefduel.core.regret import floor_regret, random_regret
from prefduel.runner.cell import summarize
from prefduel.runner.headroom import HORIZON, NO_OTHER_USERS, lonely_arrivals, play_oracle_prior
from prefduel.runner.headroom_ask import play_oracle_prior_ask
from prefduel.runner.rows import ResultRow, score_fields
from prefduel.worlds.world import World

REFERENCES = (
    "ref:floor",
    "ref:random",
    "ref:best-single-pair",
    "ref:best-pair-per-user",
    "ref:oracle-user",
    "ref:oracle-pooled",
    "ref:rater-top2",
    "ref:oracle-prior",
    "ref:oracle-prior-lookahead",
)
#: Reference rows of an ask track only (`prefduel.runner.headroom_ask`).
ASK_REFERENCES = ("ref:oracle-prior-ask",)


def pair_totals(utilities: np.ndarray) -> np.ndarray:
    """Regret of every fixed pair summed over rounds: ``(N, n_pairs)`` from ``U (N, S, K)``."""
    pairs = pairs_of(utilities.shape[-1])
    best = utilities.max(axis=-1, keepdims=True)
    per_round = 2 * best - utilities[..., pairs[:, 0]] - utilities[..., pairs[:, 1]]
    return per_round.sum(axis=1)


def linear_oracle_theta(phi: np.ndarray, utilities: np.ndarray, ridge: float = 1e-6) -> np.ndarray:
    """Least-squares theta of ``U ~ theta . phi`` per leading index.

    Args:
        phi: ``(G, M, K, d)`` features, G groups (users, or 1 for pooled) of M rounds.
        utilities: ``(G, M, K)``.
        ridge: Tiny ridge so an unidentified direction gets the minimum-norm answer.

    Returns:
        ``(G, d)`` fitted weights.
    """
    g, _, _, d = phi.shape
    x = phi.reshape(g, -1, d)
    y = utilities.reshape(g, -1)
    gram = np.einsum("gni,gnj->gij", x, x) + ridge * np.eye(d)
    rhs = np.einsum("gni,gn->gi", x, y)
    return np.linalg.solve(gram, rhs[..., None])[..., 0]


def reference_pairs(world: World) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Shown pairs ``(first, second)``, each ``(N, S)``, of the pair-based references."""
    n, s = world.N, world.S
    pairs = pairs_of(world.K)
    totals = pair_totals(world.U)
    single = pairs[np.argmin(totals.sum(axis=0))]
    per_user = pairs[np.argmin(totals, axis=1)]  # (N, 2)
    theta_user = linear_oracle_theta(world.Phi, world.U)
    greedy = play_oracle_prior(world, theta_user)
    lookahead = play_oracle_prior(world, theta_user, horizon=HORIZON)
    theta_pool = linear_oracle_theta(
        world.Phi.reshape(1, n * s, world.K, world.d), world.U.reshape(1, n * s, world.K)
    )[0]
    asking = {}
    if world.ask_budget and world.asks is not None:
        ask_run, _ = play_oracle_prior_ask(world, theta_user, world.ask_budget)
        asking["ref:oracle-prior-ask"] = (ask_run.first, ask_run.second)
    return {
        "ref:best-single-pair": (np.full((n, s), single[0]), np.full((n, s), single[1])),
        "ref:best-pair-per-user": (
            np.repeat(per_user[:, :1], s, axis=1),
            np.repeat(per_user[:, 1:], s, axis=1),
        ),
        "ref:oracle-user": top_two(np.einsum("nskd,nd->nsk", world.Phi, theta_user)),
        "ref:oracle-pooled": top_two(world.Phi @ theta_pool),
        "ref:rater-top2": top_two(world.Phi[..., -1]),
        "ref:oracle-prior": (greedy.first, greedy.second),
        "ref:oracle-prior-lookahead": (lookahead.first, lookahead.second),
        **asking,
    }


#: Why ``ref:rater-top2`` is undefined on a world with a constant rater feature.
CONSTANT_RATER = (
    "the rater feature g is constant (the same for every persona in every round), so its top "
    "two are chosen by tie-breaking"
)


def undefined_references(world: World) -> dict[str, str]:
    """The references ``world`` cannot define, with the reason (see the module docstring)."""
    undefined = {}
    g = world.Phi[..., -1]
    if np.all(np.ptp(g, axis=-1) <= 1e-12 * max(1.0, float(np.abs(g).max(initial=0.0)))):
        undefined["ref:rater-top2"] = CONSTANT_RATER
    if lonely_arrivals(world):
        asking = ASK_REFERENCES if world.ask_budget and world.asks is not None else ()
        undefined.update({name: NO_OTHER_USERS for name in (*REFERENCES[-2:], *asking)})
    return undefined


def reference_rows(world: World) -> list[dict[str, Any]]:
    """All reference rows of ``world`` (see the module docstring)."""
    rows = []
    floor = floor_regret(world.U)
    rand = random_regret(world.U)
    total_g, total_rand = float(floor.sum()), float(rand.sum())
    fields = {
        "ref:floor": score_fields(total_g, total_g, total_rand, np.zeros_like(floor)),
        "ref:random": score_fields(total_rand, total_g, total_rand, rand - floor),
    }
    for name, (first, second) in reference_pairs(world).items():
        fields[name] = summarize(world, first, second)
    undefined = undefined_references(world)
    for name, values in fields.items():
        row = ResultRow.build("reference", world.name, world.seed, name, values, 0.0).to_json()
        if name in undefined:
            row["undefined"] = undefined[name]
        rows.append(row)
    return rows
