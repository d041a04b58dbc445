"""Speed of the ranking subpackage against evalica, with its targets.

1. Global Bradley-Terry on 1,000,000 battles among 20 models, from raw Arena-style strings
   (model names and winner labels): prefduel (validate + aggregate + Newton) vs
   ``evalica.bradley_terry`` on the same battles in the same run (its winners handed over
   already converted to ``evalica.Winner``, conversion not timed). Target: ratio <= 1. Also
   prints the agreement with evalica and choix in Elo points (target: within 0.5).
2. Per-user Bradley-Terry (batched Newton) and per-user Elo for 10,000 users. Target: < 10 s.
3. Hierarchical Bradley-Terry (``--bt-mode hier``: shrinkage level chosen by marginal likelihood,
   then every user's posterior) for 10,000 users x 50 models, against per-user ridge BT on the
   same battles in the same run. Target: ratio <= 3.

Times are the best of ``--repeat`` runs (wall and CPU); the machine's other load inflates wall
time, CPU time shows the work done.

    python benchmarks/ranking_speed.py
    python benchmarks/ranking_speed.py --battles 200000 --users 2000 --repeat 1
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from prefduel.core.rng import stream
from prefduel.ranking import (
    battles_from_arrays,
    bt_per_user,
    bt_ratings,
    elo_per_user,
    win_matrix,
)
from prefduel.ranking.hier import bt_hierarchical

LABELS = np.array(["tie", "model_a", "model_b"], dtype=object)  # outcome codes 0, 1, 2


def _battles(n: int, m: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Names of model_a and model_b, outcome codes (0 tie, 1 a, 2 b) and the model names."""
    rng = stream(seed, "benchmark", "ranking")
    names = np.array([f"model-{i:02d}" for i in range(m)], dtype=object)
    strength = rng.normal(scale=0.8, size=m)
    a = rng.integers(0, m, size=n)
    b = (a + rng.integers(1, m, size=n)) % m
    p_a = 1.0 / (1.0 + np.exp(-(strength[a] - strength[b])))
    draw = rng.random(n)
    code = np.where(draw < 0.1, 0, np.where(rng.random(n) < p_a, 1, 2))
    return names[a], names[b], code, names


def _best(fn, repeat: int) -> tuple[float, float, object]:
    wall, cpu, out = np.inf, np.inf, None
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        wall = min(wall, time.perf_counter() - t0)
        cpu = min(cpu, time.process_time() - c0)
    return wall, cpu, out


def global_bt(n: int, m: int, repeat: int, seed: int) -> bool:
    xs, ys, code, _ = _battles(n, m, seed)
    labels = LABELS[code]

    def ours():
        battles = battles_from_arrays(xs, ys, labels)
        return battles, bt_ratings(battles)

    wall, cpu, (battles, fit) = _best(ours, repeat)
    print(f"global BT, {n:,} battles, {m} models")
    print(f"  prefduel (validate + aggregate + Newton): {wall:.3f} s wall, {cpu:.3f} s CPU")
    ok = True
    try:
        import evalica
    except ImportError:
        print("  evalica not installed: no speed ratio")
        evalica = None
    if evalica is not None:
        by_code = {0: evalica.Winner.Draw, 1: evalica.Winner.X, 2: evalica.Winner.Y}
        winners = [by_code[int(c)] for c in code]
        ewall, ecpu, res = _best(lambda: evalica.bradley_terry(xs, ys, winners), repeat)
        ratio = wall / ewall
        ok &= ratio <= 1.0
        print(
            f"  evalica.bradley_terry (winners pre-converted): {ewall:.3f} s wall, {ecpu:.3f} s CPU"
        )
        print(
            f"  ratio prefduel / evalica: {ratio:.2f} (wall), {cpu / ecpu:.2f} (CPU); "
            f"target <= 1: {'PASS' if ratio <= 1 else 'FAIL'}"
        )
        ev = 1000 + 400 * np.log10(res.scores.reindex(list(battles.models)).to_numpy())
        diff = float(np.abs(ev - fit.scores[0]).max())
        ok &= diff <= 0.5
        print(f"  max |BT - evalica| = {diff:.2e} Elo points (target <= 0.5)")
    try:
        import choix
    except ImportError:
        print("  choix not installed: no agreement check")
    else:
        wins = win_matrix(battles.a, battles.b, battles.outcome, battles.n_models)
        params = choix.ilsr_pairwise_dense(wins, max_iter=1000, tol=1e-10)
        ce = 1000 + 400 / np.log(10) * (params - params.mean())
        diff = float(np.abs(ce - fit.scores[0]).max())
        ok &= diff <= 0.5
        print(f"  max |BT - choix|   = {diff:.2e} Elo points (target <= 0.5)")
    return ok


def _user_battles(n_users: int, m: int, seed: int):
    """Battles of ``n_users`` users with their own strengths (25-80 votes each), time-ordered."""
    rng = stream(seed, "benchmark", "ranking", "users")
    votes = rng.integers(25, 81, size=n_users)
    user = np.repeat(np.arange(n_users), votes)
    n = user.size
    strength = rng.normal(size=(n_users, m))
    a = rng.integers(0, m, size=n)
    b = (a + rng.integers(1, m, size=n)) % m
    p_a = 1.0 / (1.0 + np.exp(-(strength[user, a] - strength[user, b])))
    labels = np.where(rng.random(n) < p_a, "model_a", "model_b").astype(object)
    order = rng.permutation(n)
    names = np.array([f"model-{i:02d}" for i in range(m)], dtype=object)
    ids = np.array([f"user-{u:05d}" for u in range(n_users)], dtype=object)
    return battles_from_arrays(
        names[a][order],
        names[b][order],
        labels[order],
        ids[user][order],
        time=np.arange(n, dtype=float),
    )


def per_user(n_users: int, m: int, repeat: int, seed: int) -> bool:
    battles = _user_battles(n_users, m, seed)
    print(f"per-user ratings, {n_users:,} users, {battles.n:,} battles, {m} models")
    ok = True
    for mode in ("mle", "ridge"):
        wall, cpu, fit = _best(lambda mode=mode: bt_per_user(battles, mode=mode), repeat)
        ok &= wall < 10
        extra = f", {int(fit.fallback.sum())} ridge fallbacks" if mode == "mle" else ""
        print(
            f"  BT per user ({mode}): {wall:.2f} s wall, {cpu:.2f} s CPU{extra}; "
            f"target < 10 s: {'PASS' if wall < 10 else 'FAIL'}"
        )
    wall, cpu, _ = _best(lambda: elo_per_user(battles), repeat)
    print(f"  Elo per user: {wall:.2f} s wall, {cpu:.2f} s CPU")
    return ok


def hierarchical(n_users: int, m: int, repeat: int, seed: int) -> bool:
    battles = _user_battles(n_users, m, seed)
    print(f"hierarchical BT, {n_users:,} users, {battles.n:,} battles, {m} models")
    rwall, rcpu, _ = _best(lambda: bt_per_user(battles, mode="ridge"), repeat)
    hwall, hcpu, fit = _best(lambda: bt_hierarchical(battles), repeat)
    ratio = hwall / rwall
    print(f"  BT per user (ridge): {rwall:.2f} s wall, {rcpu:.2f} s CPU")
    print(f"  hierarchical BT: {hwall:.2f} s wall, {hcpu:.2f} s CPU (tau = {fit.tau:.3f} logits)")
    print(
        f"  ratio hierarchical / ridge: {ratio:.2f} (wall), {hcpu / rcpu:.2f} (CPU); "
        f"target <= 3: {'PASS' if ratio <= 3 else 'FAIL'}"
    )
    return ratio <= 3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--battles", type=int, default=1_000_000)
    parser.add_argument("--models", type=int, default=20)
    parser.add_argument("--users", type=int, default=10_000)
    parser.add_argument("--hier-models", type=int, default=50, help="models, hierarchical run")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args()
    ok = global_bt(args.battles, args.models, args.repeat, args.seed)
    ok &= per_user(args.users, args.models, args.repeat, args.seed)
    ok &= hierarchical(args.users, args.hier_models, args.repeat, args.seed)
    print("all targets met" if ok else "some target missed")
    if args.strict and not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
