"""Be the policy: play one real session of a world in the browser, and score it in Python.

The page shows the questions of one arrival; each round the person picks two personas, the
student's click is drawn exactly as `prefduel.runner.cell.play` draws it (the world's
stored uniform ``u[a, s]`` against ``P[a, s, lo, hi]`` in canonical order ``lo < hi``, flipped
when the larger index was listed first), and the hidden utilities are revealed. The running
score is the benchmark score restricted to the rounds played so far:
``100 (R_rand - R) / (R_rand - G)`` (random pairs 0, the student's two best 100).

`session_score` computes the same numbers in Python; the page and it agree exactly, because
both take the per-round floor and random regret from `prefduel.core.regret`, compute the
pair regret ``2 U* - U_i - U_j`` with the same floating-point operations, and sum the rounds in
order.

The page's CSS, JavaScript and HTML template are in `prefduel.pages._play_assets`.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from prefduel.core.regret import floor_regret, pair_regret, random_regret, score
from prefduel.pages._ask_assets import ASK_CSS, ASK_HTML, ASK_JS
from prefduel.pages._html import (
    BASE_CSS,
    check_arrival,
    check_element_id,
    document,
    esc,
    fill,
    json_script,
    persona_table,
    question_card,
    student_card,
)
from prefduel.pages._play_assets import PLAY_CSS, PLAY_HTML, PLAY_JS
from prefduel.pages.asks import play_asks
from prefduel.policies.base import validate_pair
from prefduel.worlds.world import World


def _running_score(total_r: float, total_rand: float, total_g: float) -> float | None:
    """The score of the rounds so far, ``None`` while it is undefined (random = floor)."""
    try:
        return score(total_r, total_rand, total_g)
    except ValueError:
        return None


def session_score(world: World, arrival: int, pairs: Sequence[Sequence[int]]) -> dict[str, Any]:
    """Score a played session: the clicks, regrets and score of ``pairs`` shown to one arrival.

    Args:
        world: The world.
        arrival: Which arrival (student session) was played, ``0 <= arrival < world.N``.
        pairs: The pairs shown in rounds ``0, 1, ...`` (at most ``world.S``); each is two
            distinct persona indices, in the order they were listed.

    Returns:
        A dict with ``arrival``, ``rounds`` (number played), per-round lists ``pairs``,
        ``clicks`` (1 if the first listed persona won), ``winners`` (persona index that won),
        ``regrets`` (``2 U* - U_i - U_j``), ``floors`` (``U* - U2nd``), ``random`` (expected regret
        of a random pair), ``best_two`` (the two best personas, best first) and
        ``running_scores`` (score after each round, ``None`` while undefined), and the totals
        ``R``, ``G``, ``R_rand`` and ``score`` (``None`` if undefined).

    Raises:
        SpecError: ``arrival`` out of range.
        ValueError: more than ``world.S`` pairs, or a pair that is not two distinct indices in
            ``0..K-1`` (naming the round).
    """
    arrival = check_arrival(world, arrival)
    pairs = list(pairs)
    if len(pairs) > world.S:
        raise ValueError(f"a session has {world.S} rounds, got {len(pairs)} pairs")
    out: dict[str, Any] = {"arrival": arrival, "rounds": len(pairs)}
    out.update({key: [] for key in _ROUND_KEYS})
    total_r = total_g = total_rand = 0.0
    for rnd, pair in enumerate(pairs):
        played = _played_round(world, arrival, rnd, pair)
        total_r += played["regrets"]
        total_g += played["floors"]
        total_rand += played["random"]
        played["running_scores"] = _running_score(total_r, total_rand, total_g)
        for key in _ROUND_KEYS:
            out[key].append(played[key])
    out.update(
        R=total_r,
        G=total_g,
        R_rand=total_rand,
        score=_running_score(total_r, total_rand, total_g),
    )
    return out


#: Per-round lists of `session_score`, in the order of its result.
_ROUND_KEYS = (
    "pairs",
    "clicks",
    "winners",
    "regrets",
    "floors",
    "random",
    "best_two",
    "running_scores",
)


def _played_round(world: World, arrival: int, rnd: int, pair: Sequence[int]) -> dict[str, Any]:
    """One round of `session_score` (every key of `_ROUND_KEYS` but ``running_scores``).

    Raises:
        ValueError: ``pair`` is not two distinct indices in ``0..K-1`` (naming the round).
    """
    try:
        i, j = validate_pair(pair, world.K)
    except ValueError as exc:
        raise ValueError(f"round {rnd}: {str(exc).replace('select() ', 'a pair ')}") from None
    utilities = world.U[arrival, rnd]
    y = world.click(arrival, rnd, i, j)
    return {
        "pairs": (i, j),
        "clicks": y,
        "winners": i if y else j,
        "regrets": float(pair_regret(utilities, np.array(i), np.array(j))),
        "floors": float(floor_regret(utilities)),
        "random": float(random_regret(utilities)),
        "best_two": best_two(utilities),
    }


def best_two(utilities: np.ndarray) -> tuple[int, int]:
    """Indices of the best and second-best persona (ties broken by the lower index)."""
    order = np.argsort(-np.asarray(utilities), kind="stable")
    return int(order[0]), int(order[1])


def session_baselines(world: World, arrival: int) -> dict[str, Any]:
    """What simple strategies would have scored on the whole session of ``arrival``.

    Returns:
        ``R_rand`` and ``G`` (expected regret of random pairs, regret of the best two each
        round; scores 0 and 100 by definition) and ``best_fixed``: the single pair that would
        have done best if shown in every round (``pair``, ``R``, ``score``).
    """
    arrival = check_arrival(world, arrival)
    utilities = world.U[arrival]
    total_g = sum(float(x) for x in floor_regret(utilities))
    total_rand = sum(float(x) for x in random_regret(utilities))
    best: tuple[float, tuple[int, int]] | None = None
    for i, j in itertools.combinations(range(world.K), 2):
        first = np.full(world.S, i)
        second = np.full(world.S, j)
        total = sum(float(x) for x in pair_regret(utilities, first, second))
        if best is None or total < best[0]:
            best = (total, (i, j))
    assert best is not None  # K >= 2
    return {
        "R_rand": total_rand,
        "G": total_g,
        "best_fixed": {
            "pair": list(best[1]),
            "R": best[0],
            "score": _running_score(best[0], total_rand, total_g),
        },
    }


def play_data(
    world: World,
    arrival: int,
    *,
    asked: Sequence[tuple[int, int]] | None = None,
    policy: str | None = None,
) -> dict[str, Any]:
    """The JSON the play page embeds: personas, the rounds (question, utilities, click
    probabilities, uniform draw, floor and random regret), the hidden student, baselines; on
    an ask track also ``ask`` (`prefduel.pages.asks.play_asks`: the bank, the stored answers,
    and the ``(round, question)`` pairs ``asked`` by ``policy``, or None for free play)."""
    arrival = check_arrival(world, arrival)
    rounds = []
    for rnd in range(world.S):
        utilities = world.U[arrival, rnd]
        rounds.append(
            {
                **question_card(world, arrival, rnd),
                "U": [float(x) for x in utilities],
                "P": [[float(x) for x in row] for row in world.P[arrival, rnd]],
                "u": float(world.u[arrival, rnd]),
                "floor": float(floor_regret(utilities)),
                "rand": float(random_regret(utilities)),
            }
        )
    return {
        "world": world.name,
        "seed": int(world.seed),
        "arrival": arrival,
        "N": world.N,
        "S": world.S,
        "K": world.K,
        "personas": persona_table(world),
        "student": student_card(world, arrival),
        "baselines": session_baselines(world, arrival),
        "rounds": rounds,
        "ask": play_asks(world, arrival, asked, policy),
    }


def play_widget(
    world: World,
    arrival: int,
    *,
    element_id: str = "play",
    asked: Sequence[tuple[int, int]] | None = None,
    policy: str | None = None,
) -> str:
    """A self-contained HTML fragment to play the session of one arrival.

    The fragment is a ``<section id=element_id>`` with scoped inline CSS, the data as embedded
    JSON and plain inline JavaScript; ids and classes start with ``element_id``, so it can be
    embedded in a larger page beside other widgets. Stable ``data-testid`` attributes:
    ``persona-{k}`` (persona cards), ``confirm``, ``next``, ``round``, ``score``, ``click``
    (with ``data-winner``), ``history-row`` (with ``data-first``, ``data-second``,
    ``data-winner``), ``final``, ``final-score``, ``profile``, ``restart``.

    On an ask track (``world.ask_budget > 0``) the session opens on the preference questions:
    the person answers the questions ``policy`` asked (``asked``, e.g. from
    `prefduel.pages.asks.policy_questions`) or, without ``asked``, picks up to the budget from
    the bank, with a button per answer (``level``: 5; ``pair``: the two tutors; ``least``: the
    personas) and the number keys; then the duels start. More ``data-testid``: ``ask``,
    ``ask-question`` (with ``data-question``, ``data-answer``, ``data-stored``),
    ``ask-option`` (with ``data-value``), ``ask-pick``, ``ask-stored``, ``ask-done``,
    ``ask-download``.

    Args:
        world: The world.
        arrival: The arrival to play, ``0 <= arrival < world.N``.
        element_id: Id of the section and prefix of its ids and classes.
        asked: ``(round, question)`` a policy asked this arrival; None: free play.
        policy: The policy that asked them (shown on the page).

    Raises:
        SpecError: ``arrival`` out of range or an unusable ``element_id``.
    """
    element_id = check_element_id(element_id)
    data = play_data(world, arrival, asked=asked, policy=policy)
    css = fill(BASE_CSS + PLAY_CSS + (ASK_CSS if data["ask"] else ""), element_id)
    body = fill(PLAY_HTML, element_id)
    js = PLAY_JS.replace("/*__ASK_JS__*/", ASK_JS if data["ask"] else "")
    return (
        body.format(
            css=css,
            world=esc(data["world"]),
            seed=data["seed"],
            arrival=data["arrival"],
            S=data["S"],
            K=data["K"],
            cols=_columns(data["K"]),
            data=json_script(element_id, data),
            js=fill(js, element_id),
            ask=_ask_panel(data, element_id),
        ).strip()
        + "\n"
    )


def _ask_panel(data: dict[str, Any], element_id: str) -> str:
    """The preference-questions panel of an ask track ("" without one)."""
    ask = data["ask"]
    if not ask:
        return ""
    budget = ask["budget"]
    if ask["fixed"] is None:
        headline = "Pick the questions to ask, then answer them"
        who = (
            f"Pick up to {budget} of the {len(ask['questions'])} questions of the bank and "
            "answer each as this student might."
        )
    else:
        n = len(ask["fixed"])
        headline = f"{esc(ask['policy'])} asked this student {n} question{'s' * (n != 1)}"
        who = "Answer each as this student might (or as you would)."
    download = f"answers-{data['world']}-seed{data['seed']}-arrival{data['arrival']}.json"
    return fill(ASK_HTML, element_id).format(
        budget=budget,
        headline=headline,
        who=who,
        download=esc(download.replace("/", "_").replace(" ", "_")),
    )


def _columns(k: int) -> int:
    """Columns of the persona grid on wide screens (rows as even as possible)."""
    return {1: 1, 2: 2, 4: 2}.get(k, 3 if k % 3 == 0 or k in (5, 7) else 4)


def play_page(
    world: World,
    arrival: int,
    *,
    asked: Sequence[tuple[int, int]] | None = None,
    policy: str | None = None,
) -> str:
    """A complete, offline HTML document with `play_widget` for one arrival (on an ask track,
    with the questions ``policy`` ``asked``, or free play)."""
    widget = play_widget(world, arrival, asked=asked, policy=policy)
    title = f"Be the policy · {world.name} seed {world.seed} arrival {int(arrival)}"
    return document(title, widget)
