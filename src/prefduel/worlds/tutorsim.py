"""TutorSim: the built-in generative model of TutorDuel worlds (docs/design.md, section 9).

The paper's stored judge data is not public, so default worlds come from a generative model
with the same structure:

* **Style space** of m = 8 named dimensions; each of the K = 6 personas has a style vector s_p.
* **Questions**: a session is 4 topics x 2 chains x 3 kinds (definition, computation, why) = 24
  questions, each ending with one of 13 first-person cues. The question's need vector is
  ``n_q = need[kind] + need[cue] + topic noise + question noise - ncenter * mean need``.
* **Students**: taste weights w over style dims, a cue-following strength c, optional quirks and
  a per-persona offset o_p. Latent utility
  ``v(p, q) = w . s_p + c (n_q . s_p) + quirks(p, q) + o_p + eps(q, p)``.
* **Rater** (the policy feature g): ``n_q . s_p`` seen through a miscalibrated rater (per-persona
  errors on each style dim, bias, noise), centered over personas and divided by one s.d. over
  the world's question bank; ``phi(p, q) = [e_p, g(p, q)]``, d = 7.
* **Judge**: for each of the 15 pairs, 2 display orders x 2 label assignments x 4 sampled picks
  from a logistic judge with position and label biases; the smoothed log-odds
  ``log((k + .5) / (4.5 - k))`` are averaged over the 4 configurations and ``P = sigmoid(mean)``
  (`judge_probabilities`).
* **References**: per (student, question) ridge Bradley-Terry scores fitted to the 15
  probabilities, mapped to ``U = clip(0.5 + (beta - mean beta) / 8, 0, 1)``
  (`bt_utilities`).

`judge_probabilities` and `bt_utilities` are pure and shared with
`prefduel.datagen`, which applies them to real judge picks; they live in
`prefduel.worlds.judging` and are re-exported here.

All randomness flows from ``stream(seed, "tutorsim", roster, part)``, so a (roster, seed) gives
bit-identical arrays in every process. Nothing here knows about any policy.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict

import numpy as np

from prefduel.core.btl import pairs_of, sigmoid
from prefduel.core.rng import stream
from prefduel.worlds.asking import AskBank, answer_bank, question_bank
from prefduel.worlds.judging import (
    JUDGE_CONFIGS,
    JUDGE_LABEL,
    JUDGE_ORDER,
    bt_utilities,
    judge_probabilities,
    pair_matrix,
    smoothed_log_odds,
)
from prefduel.worlds.rosters import Roster
from prefduel.worlds.tutorsim_data import (
    KINDS,
    TutorSimData,
    TutorSimParams,
)
from prefduel.worlds.tutorsim_template import draw_template_students
from prefduel.worlds.world import World

__all__ = [
    "CHAINS",
    "JUDGE_CONFIGS",
    "JUDGE_LABEL",
    "JUDGE_ORDER",
    "ROUNDS",
    "TOPICS_PER_SESSION",
    "bt_utilities",
    "generate_students",
    "generate_world",
    "judge_probabilities",
    "pair_matrix",
    "smoothed_log_odds",
]

TOPICS_PER_SESSION = 4
CHAINS = 2
ROUNDS = TOPICS_PER_SESSION * CHAINS * len(KINDS)  # 24


def _question_bank(data: TutorSimData, pool: str) -> list[dict]:
    """Every (topic, chain, kind, cue) question of a topic pool, in a fixed order."""
    bank = []
    for t_idx, topic in enumerate(data.topics[pool]):
        for chain_idx, chain in enumerate(topic["chains"]):
            for k_idx, kind in enumerate(KINDS):
                for c_idx, cue in enumerate(data.cues):
                    bank.append(
                        {
                            "id": f"{topic['id']}/{chain_idx}/{kind}/{cue['id']}",
                            "topic": topic["id"],
                            "subject": topic.get("subject", ""),
                            "concept": chain["concept"],
                            "chain": chain_idx,
                            "kind": kind,
                            "cue": cue["id"],
                            "text": f"{chain[kind].strip()} {cue['text'].strip()}",
                            "_t": t_idx,
                            "_k": k_idx,
                            "_c": c_idx,
                        }
                    )
    return bank


def _needs(
    data: TutorSimData, bank: list[dict], n_topics: int, prm: TutorSimParams, rng
) -> np.ndarray:
    """Need vectors of the question bank, shape ``(Q, m)``."""
    m = data.m
    topic_dev = rng.normal(scale=prm.topic_noise, size=(n_topics, m))
    # one noise vector per (topic, chain, kind): the same base question keeps its quirks
    base_noise = rng.normal(scale=prm.question_noise, size=(n_topics, CHAINS, len(KINDS), m))
    mean_need = data.kind_need.mean(axis=0) + data.cue_need.mean(axis=0)
    t = np.array([q["_t"] for q in bank])
    ch = np.array([q["chain"] for q in bank])
    k = np.array([q["_k"] for q in bank])
    c = np.array([q["_c"] for q in bank])
    return (
        data.kind_need[k]
        + data.cue_need[c]
        + topic_dev[t]
        + base_noise[t, ch, k]
        - prm.ncenter * mean_need
    )


def _rater_features(data: TutorSimData, need: np.ndarray, prm: TutorSimParams, rng) -> np.ndarray:
    """Rater scores g for the bank, centered per question, one world-wide s.d.; ``(Q, K)``."""
    k = data.persona_style.shape[0]
    seen_style = data.persona_style + rng.normal(
        scale=prm.rater_dim_error, size=data.persona_style.shape
    )
    raw = need @ seen_style.T + rng.normal(scale=prm.rater_bias, size=k)
    raw = raw + rng.normal(scale=prm.rater_noise, size=raw.shape)
    raw = raw - raw.mean(axis=1, keepdims=True)
    return raw / raw.std()


def _sessions(n_arrivals: int, bank: list[dict], n_topics: int, n_cues: int, rng) -> np.ndarray:
    """Question-bank rows of every (arrival, round), shape ``(N, 24)``."""
    index = {(q["_t"], q["chain"], q["_k"], q["_c"]): i for i, q in enumerate(bank)}
    out = np.empty((n_arrivals, ROUNDS), dtype=np.int64)
    for n in range(n_arrivals):
        topics = rng.choice(n_topics, size=TOPICS_PER_SESSION, replace=False)
        cues = rng.integers(n_cues, size=ROUNDS)
        r = 0
        for t in topics:
            for chain in range(CHAINS):
                for k in range(len(KINDS)):
                    out[n, r] = index[(int(t), chain, k, int(cues[r]))]
                    r += 1
    return out


def _quirk_matrix(data: TutorSimData, quirk_ids, kinds_of_rounds: np.ndarray) -> np.ndarray:
    """Utility added by a student's quirks, ``(S, K)``; centered over personas."""
    out = np.zeros((kinds_of_rounds.size, data.persona_style.shape[0]))
    for qid in quirk_ids:
        quirk = data.quirk(qid)
        col = data.persona_style[:, quirk.dim]
        effect = quirk.sign * (col - col.mean())
        mask = np.ones(kinds_of_rounds.size, bool)
        if quirk.when_kind:
            mask = kinds_of_rounds == KINDS.index(quirk.when_kind)
        out[mask] += effect
    return out


def _students(
    data: TutorSimData, roster: Roster, prm: TutorSimParams, rng
) -> tuple[list[dict], np.ndarray, np.ndarray, list[tuple[str, ...]]]:
    """Student table, taste ``(N, m)``, cue following ``(N,)`` and quirks per arrival."""
    n = roster.arrivals
    m = data.m
    jitter = rng.normal(scale=prm.profile_jitter, size=(n, m))
    spread = np.exp(rng.normal(scale=prm.cue_spread, size=n) - prm.cue_spread**2 / 2)
    if roster.students in ("dev-profiles", "heldout-profiles", "scrambled"):
        students, base, cue, quirks = _profile_students(data, roster, rng)
    elif roster.students in ("composite", "quirky"):
        students, base, cue, quirks = _trait_students(data, roster, prm, rng)
    else:
        raise ValueError(f"roster {roster.id!r}: unknown student kind {roster.students!r}")
    taste = prm.taste_scale * (base + jitter)
    return students, taste, prm.cue_strength * cue * spread, quirks


def _profile_students(
    data: TutorSimData, roster: Roster, rng
) -> tuple[list[dict], np.ndarray, np.ndarray, list[tuple[str, ...]]]:
    """Arrivals drawn from the dev or held-out profiles (each profile as evenly as possible).

    Returns:
        ``(students, base taste (N, m), cue following (N,), quirks per arrival)``.
    """
    n = roster.arrivals
    pool = data.profiles["dev" if roster.students == "dev-profiles" else "heldout"]
    which = rng.permutation(np.resize(np.arange(len(pool)), n))
    base = np.stack([pool[i].taste for i in which])
    cue = np.array([pool[i].cue_following for i in which])
    students: list[dict] = []
    quirks: list[tuple[str, ...]] = []
    for a, i in enumerate(which):
        p = pool[i]
        students.append(
            {
                "id": f"{p.id}#{a}",
                "profile": p.id,
                "name": p.name,
                "description": p.description,
                "quirks": list(p.quirks),
            }
        )
        quirks.append(p.quirks)
    return students, base, cue, quirks


def _trait_students(
    data: TutorSimData, roster: Roster, prm: TutorSimParams, rng
) -> tuple[list[dict], np.ndarray, np.ndarray, list[tuple[str, ...]]]:
    """Arrivals composed of one value per trait (`draw_template_students`): distinct
    combinations (``composite``), or independent draws plus random quirks (``quirky``).

    Returns:
        ``(students, base taste (N, m), cue following (N,), quirks per arrival)``.
    """
    kind = roster.students
    drawn = draw_template_students(
        data.traits,
        roster.arrivals,
        rng,
        distinct=kind == "composite",
        quirks=data.quirks,
        quirks_each=prm.quirks_per_student if kind == "quirky" else 0,
    )
    base = np.stack([prm.template_scale * (s.taste_sum + data.shared_taste) for s in drawn])
    cue = np.array([s.cue_following for s in drawn])
    quirks = [tuple(q.id for q in s.quirks) for s in drawn]
    students = [
        {
            "id": f"{kind}#{a}",
            "profile": s.profile,
            "name": f"{kind} student {a}",
            "description": s.description,
            "quirks": list(quirks[a]),
            "traits": list(s.combo),
        }
        for a, s in enumerate(drawn)
    ]
    return students, base, cue, quirks


def _isotropic_students(n: int, k: int, rng) -> tuple[list[dict], np.ndarray]:
    """Student table and preference draws ``theta (n, k + 1)`` of the isotropic control."""
    theta = rng.normal(size=(n, k + 1))
    students = [
        {
            "id": f"isotropic#{a}",
            "profile": "isotropic",
            "name": f"isotropic student {a}",
            "description": "",
            "quirks": [],
            "theta": [round(float(x), 6) for x in theta[a]],
        }
        for a in range(n)
    ]
    return students, theta


def _scramble_permutations(n: int, k: int, rng) -> np.ndarray:
    """Persona-label permutation of every arrival of the scrambled control, ``(n, k)``."""
    return np.stack([rng.permutation(k) for _ in range(n)])


def _record_permutations(students: list[dict], perms: np.ndarray) -> None:
    """Store each arrival's permutation ``perms (n, k)`` in its student record (in place)."""
    for a, student in enumerate(students):
        student["permutation"] = [int(x) for x in perms[a]]

def _judge(v: np.ndarray, prm: TutorSimParams, rng) -> np.ndarray:
    """Click probabilities ``(N, S, K, K)`` from latent utilities ``(N, S, K)``."""
    k = v.shape[-1]
    pairs = pairs_of(k)
    dv = v[..., pairs[:, 0]] - v[..., pairs[:, 1]]  # (N, S, 15)
    order = JUDGE_ORDER
    label = JUDGE_LABEL
    noise = rng.normal(scale=prm.judge_noise, size=(*dv.shape, 4))
    logit = (
        prm.judge_beta * dv[..., None]
        + prm.judge_position * order
        + prm.judge_label * label
        + noise
    )
    picks = rng.binomial(prm.judge_samples, sigmoid(logit))
    return judge_probabilities(picks, prm.judge_samples, k)


def generate_world(roster: Roster, seed: int, params: TutorSimParams | None = None) -> World:
    """Generate the world of ``roster`` for ``seed``.

    Args:
        roster: A row of the roster table.
        seed: World seed; the same (roster, seed, params) gives bit-identical arrays.
        params: Generative-model knobs (default: the roster's, i.e. the calibrated values
            unless a roster file changes them).

    Returns:
        A `World` with N = ``roster.arrivals``, S = 24, K = 6, d = 7.
    """
    data = roster.tutorsim_data()
    prm = params if params is not None else roster.tutorsim_params()

    def rng(part: str) -> np.random.Generator:
        return stream(seed, "tutorsim", roster.id, part)

    pool = roster.topics
    n_topics = len(data.topics[pool])
    bank = _question_bank(data, pool)
    need = _needs(data, bank, n_topics, prm, rng("needs"))
    g = _rater_features(data, need, prm, rng("rater"))
    qidx = _sessions(roster.arrivals, bank, n_topics, len(data.cues), rng("sessions"))
    n, s, k = roster.arrivals, ROUNDS, data.persona_style.shape[0]
    kinds = np.array([q["_k"] for q in bank])[qidx]  # (N, S)

    fit = need @ data.persona_style.T  # (Q, K): how well each persona suits each question
    students, latent = _latent_utilities(data, roster, prm, fit, qidx, kinds, rng("students"))
    utility, prob, latent = _judged(latent, students, roster.students == "scrambled", prm, rng)
    asks = _asks(data, prm, latent, kinds, rng("answers"))

    phi = np.concatenate([np.broadcast_to(np.eye(k), (n, s, k, k)), g[qidx][..., None]], axis=-1)
    return World(
        roster=roster.label,
        seed=int(seed),
        Phi=np.ascontiguousarray(phi),
        U=utility,
        P=prob,
        u=rng("clicks").random((n, s)),
        student_index=np.arange(n, dtype=np.int64),
        question_index=qidx,
        students=students,
        questions=[{key: val for key, val in q.items() if not key.startswith("_")} for q in bank],
        personas=_persona_table(data),
        info={
            "generator": "tutorsim",
            "generator_version": roster.version,
            "params": asdict(prm),
            "style_dims": list(data.dims),
        },
        asks=asks,
    )


def _judged(
    latent: np.ndarray,
    students: list[dict],
    scrambled: bool,
    prm: TutorSimParams,
    rng: Callable[[str], np.random.Generator],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(utility, prob, latent)``, each ``(N, S, K)``: the judge's click probabilities on the
    latent utilities plus per-round noise, and their BT utilities; a scrambled roster relabels
    each student's personas in all three by a seeded permutation (recorded in ``students``)."""
    n, s, k = latent.shape
    v = latent + rng("utility-noise").normal(scale=prm.utility_noise, size=(n, s, k))

    prob = _judge(v, prm, rng("judge"))
    utility = bt_utilities(prob, ridge=prm.bt_ridge, scale=prm.bt_scale)

    if scrambled:
        perms = _scramble_permutations(n, k, rng("scramble"))
        utility, prob = _relabel(utility, prob, perms)
        latent = np.take_along_axis(latent, perms[:, None, :], axis=2)
        _record_permutations(students, perms)
    return utility, prob, latent


def _asks(
    data: TutorSimData,
    prm: TutorSimParams,
    latent: np.ndarray,
    kinds: np.ndarray,
    rng: np.random.Generator,
) -> AskBank:
    """The world's preference questions and every arrival's answers (`answer_bank`), read off
    the hidden latent utilities ``(N, S, K)`` before the per-round noise: the student's
    profile (taste, cue following, quirks, persona offsets) met by the session's questions.

    Args:
        data: The TutorSim data (style dimensions, personas).
        prm: The knobs (``judge_beta``, ``answer_noise``).
        latent: ``(N, S, K)`` latent utilities.
        kinds: ``(N, S)`` the kind of every round's question.
        rng: The ``answers`` stream.
    """
    styles = list(zip(data.dims, data.dim_descriptions, strict=True))
    names = [p.get("name", p["id"]) for p in data.personas]
    questions = question_bank(styles, data.persona_style, names, KINDS)
    v_bar = latent.mean(axis=1)
    v_kind = {}
    for index, kind in enumerate(KINDS):
        mask = (kinds == index)[..., None]
        count = np.maximum(mask.sum(axis=1), 1)
        v_kind[kind] = np.where(mask, latent, 0.0).sum(axis=1) / count
    answers = answer_bank(questions, v_bar, v_kind, prm.judge_beta, prm.answer_noise, rng)
    return AskBank(questions, answers, prm.answer_noise)


def _persona_table(data: TutorSimData) -> list[dict]:
    """The world's persona records: id, name and system prompt."""
    return [
        {"id": p["id"], "name": p.get("name", p["id"]), "prompt": p.get("prompt", "")}
        for p in data.personas
    ]


def _latent_utilities(
    data: TutorSimData,
    roster: Roster,
    prm: TutorSimParams,
    fit: np.ndarray,
    qidx: np.ndarray,
    kinds: np.ndarray,
    urng: np.random.Generator,
) -> tuple[list[dict], np.ndarray]:
    """The students and their latent utilities ``(N, S, K)`` before the per-round noise.

    Args:
        data: The TutorSim data.
        roster: The roster (its student kind).
        prm: Generative-model knobs.
        fit: ``(Q, K)`` how well each persona's style meets each bank question's needs.
        qidx: ``(N, S)`` bank question of every arrival and round.
        kinds: ``(N, S)`` question kind of every arrival and round.
        urng: The ``students`` stream (students first, then the persona offsets).
    """
    n, k = roster.arrivals, data.persona_style.shape[0]
    if roster.students == "isotropic":
        students, theta = _isotropic_students(n, k, urng)
        fit_std = (fit - fit.mean(axis=1, keepdims=True)) / fit.std()
        v = prm.iso_scale * (theta[:, None, :k] + theta[:, None, k:] * fit_std[qidx])
    else:
        students, taste, cue, quirks = _students(data, roster, prm, urng)
        v = (taste @ data.persona_style.T)[:, None, :] + cue[:, None, None] * fit[qidx]
        for a in range(n):
            if quirks[a]:
                v[a] += prm.quirk_strength * _quirk_matrix(data, quirks[a], kinds[a])
    return students, v + urng.normal(scale=prm.persona_offset, size=(n, 1, k))


def _relabel(
    utility: np.ndarray, prob: np.ndarray, perms: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Utilities ``(N, S, K)`` and click probabilities ``(N, S, K, K)`` with each arrival's
    personas permuted by its row of ``perms (N, K)`` (the scrambled control)."""
    n, s = utility.shape[:2]
    utility = np.take_along_axis(utility, perms[:, None, :], axis=2)
    rows = perms[:, None, :, None]
    cols = perms[:, None, None, :]
    prob = prob[np.arange(n)[:, None, None, None], np.arange(s)[None, :, None, None], rows, cols]
    return utility, prob


def generate_students(
    roster: Roster, seed: int, params: TutorSimParams | None = None
) -> tuple[list[dict], np.ndarray]:
    """The students table and ``student_index`` of ``generate_world(roster, seed, params)``.

    Draws only the ``students`` (and, for the scrambled control, ``scramble``) streams, so it
    costs milliseconds instead of a whole world; the result equals the world's fields exactly.

    Args:
        roster: A row of the roster table.
        seed: World seed.
        params: Generative-model knobs (must be those the world was generated with; default:
            the roster's).

    Returns:
        ``(students, student_index)``: one dict per student (id, profile, name, ...) and the
        ``(N,)`` int64 row of ``students`` for each arrival.
    """
    data = roster.tutorsim_data()
    params = params if params is not None else roster.tutorsim_params()
    n, k = roster.arrivals, data.persona_style.shape[0]
    urng = stream(seed, "tutorsim", roster.id, "students")
    if roster.students == "isotropic":
        students, _ = _isotropic_students(n, k, urng)
    else:
        students = _students(data, roster, params, urng)[0]
    if roster.students == "scrambled":
        scramble = stream(seed, "tutorsim", roster.id, "scramble")
        _record_permutations(students, _scramble_permutations(n, k, scramble))
    return students, np.arange(n, dtype=np.int64)
