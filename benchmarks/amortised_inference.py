"""Amortised inference for a clicks-only policy: CODuel's belief corrected by a model trained
on simulated ``dev`` sessions (``dev`` only).

Method. Training data are made offline from simulated ``dev`` worlds whose seeds (1000 and up)
are disjoint from the scoring seeds (0-31). CODuel plays them; at every round, for every persona,
the features of `amortised_prototypes.persona_features` are recorded (CODuel's mixture-mean
utility of the persona on the current question and its s.d., the no-transfer learner's, the
rater's score, the round, the number of earlier users, the entropy of the component weights,
whether the gate is open) with the target that only simulation knows: the user's true utility
(in logits, centred over personas) minus CODuel's centred mixture mean. A small tanh MLP
(scikit-learn, seeded) shared by all personas learns that correction: an amortised posterior
mean of the utilities given CODuel's belief. No persona or profile identity is an input (yet
it learns ``dev``'s profiles: see the transfer probe below). The policy (`AmortisedCODuel`) is
CODuel with the regret now of its ``kg`` value taken from the corrected utilities, and greedy
pairs, where CODuel plays greedy, from the corrected utilities (also while the gate is closed,
where CODuel plays the no-transfer learner's greedy pair). The future term is scaled by
``future`` (``+fF``): the network shrinks the spread of CODuel's means (the fitted
correction is about -0.45 m), and the future term, computed on the same belief, shares that
spread. The weights are retrained deterministically from the fit seed by
``--train`` (single thread; the same weights to 1e-12 on a rerun) and saved in
``benchmarks/amortised_weights.npz`` (16 kB; training worlds 1000-1015, 691,200 rows, about
2 CPU minutes).

Variants (``--variants``): ``amortised`` with ``+fF`` (future scale), ``+sS`` (correction
strength; ``+s0``: no network, only the pair-rule changes), ``+restarts`` (on
``coduel-restarts``' settings), ``+greedy``, ``+nogate``; ``coduel:KEY=VALUE`` for CODuel's own.

Figures on this machine (2 cores shared with other work, no GPU), ``dev`` seeds 0-31, CODuel
48.81 ± 0.38 (paired differences, 95% t intervals; CPU per 300-arrival run):

| variant | score | vs coduel | vs coduel-restarts | CPU |
|---|---|---|---|---|
| coduel-restarts | 50.14 ± 0.33 | +1.34 [+0.82, +1.85] | | 1.14 s |
| amortised+f0.5 | 51.84 ± 0.20 | +3.04 [+2.32, +3.76] | +1.70 [+1.14, +2.27] | 1.33 s |
| amortised+restarts+f0.5 | 52.08 ± 0.26 | +3.27 [+2.58, +3.96] | +1.93 [+1.39, +2.48] | 1.38 s |
| amortised+s0+f0.5 (no net) | 49.83 ± 0.34 | +1.03 [+0.23, +1.82] | -0.31 [-1.04, +0.42] | |
| amortised+s0 (no net, f 1) | 49.53 ± 0.33 | +0.73 [-0.11, +1.56] | -0.61 [-1.34, +0.11] | |
| amortised+s0+restarts | 50.50 ± 0.31 | +1.69 [+0.93, +2.46] | +0.36 [-0.25, +0.96] | 1.37 s |
| amortised+s0+restarts+f0.3 | 50.98 ± 0.31 | +2.18 [+1.36, +3.00] | +0.84 [+0.18, +1.51] | 1.36 s |
| amortised+s0+restarts+f0.5 | 50.62 ± 0.40 | +1.82 [+1.07, +2.57] | +0.48 [-0.21, +1.18] | 1.42 s |
| amortised+s0+restarts+f0.7 | 51.15 ± 0.31 | +2.34 [+1.71, +2.97] | +1.00 [+0.42, +1.59] | 1.37 s |

The ``+s0+restarts`` rows are the pair-rule changes alone (no network) on ``coduel-restarts``'
settings: the future scale is worth up to about a point over ``coduel-restarts``, with no
clear optimum among 0.3-1 (the four scales were compared on the same 32 seeds, so the best of
them, +1.00 at 0.7, is an optimistic figure).

Seeds 0-7 (CODuel 50.40 ± 0.53; ``future`` was chosen here, so 0-31 contains these seeds):
``amortised`` (f 1) +0.57 [-0.77, +1.91], ``+f0.3`` +2.51 [+0.88, +4.14], ``+f0.5`` +2.41
[+1.09, +3.73], ``+f0.7`` +0.55 [-0.96, +2.06], ``+f0.5+nogate`` +2.24 [+1.16, +3.32],
``+greedy`` -1.10 [-2.62, +0.42] (``coduel:pair=greedy`` -1.91 [-3.55, -0.26]),
``coduel:gate=off`` -0.53 [-2.11, +1.06]; one DAgger step (16 more worlds played by
``amortised+f0.5``, refitted on both) ``+f0.5`` +2.25 [+0.54, +3.96]: no better. CPU per
350-arrival run (``--arrivals 350``, seeds 0-3): ``coduel`` 1.32 s, ``coduel-restarts`` 1.43 s,
``amortised+f0.5`` 1.56 s, ``amortised+restarts+f0.5`` 1.64 s (within the 2 s bound; 1.94 s
before the features were compiled).

**The gain is mostly a learned ``dev`` population, not better inference.** Every ``dev`` world
draws its users from the same 8 profiles, so training worlds teach the network those profiles
even without persona or profile inputs. Transfer probe: the network retrained without any
user of 3 profiles (``--holdout``), scored on seeds 0-31 separately on the users of those
profiles and the others (``--by-profile``; paired to CODuel; ``coduel-restarts`` +1.48 and
+1.24 on the same split):

| network (``amortised+f0.5``) | users of the 3 profiles | other users |
|---|---|---|
| none (``+s0``) | +0.52 [-0.97, +2.00] | +1.37 [+0.29, +2.45] |
| all features, trained on all 8 profiles | +2.02 [+0.52, +3.52] | +3.68 [+2.45, +4.91] |
| all features, trained without the 3 | -4.47 [-5.82, -3.12] | +4.95 [+3.98, +5.91] |
| 8 features (no rater, prior, wins), without the 3 | +0.45 [-1.00, +1.90] | +2.11 [+0.98, +3.23] |

On users of profiles it never saw, the network loses 5 points (all features) or adds nothing
to the pair-rule changes (8 features); the evaluation rosters hold such users (held-out
profiles, composite and quirky students), so the ``dev`` figure above is not what this policy
would do there. Amortisation would need training worlds drawn from a distribution of
populations (random profile sets), not from ``dev``'s one.

    python benchmarks/amortised_inference.py --train --worlds 1000-1015
    python benchmarks/amortised_inference.py --seeds 0-31 \\
        --variants amortised+f0.5,amortised+restarts+f0.5,amortised+s0+f0.5,amortised+s0
    python benchmarks/amortised_inference.py --seeds 0-7 --variants \\
        amortised,amortised+f0.3,amortised+f0.7,amortised+greedy,amortised+f0.5+nogate,coduel:gate=off
    python benchmarks/amortised_inference.py --seeds 0-3 --arrivals 350 \\
        --variants amortised+f0.5,amortised+restarts+f0.5
    python benchmarks/amortised_inference.py --train --worlds 1000-1015 --dagger 1016-1031 \\
        --weights /tmp/dagger.npz   # then --weights /tmp/dagger.npz --seeds 0-7
    python benchmarks/amortised_inference.py --train --worlds 1000-1015 --weights /tmp/h.npz \\
        --holdout curious_retiree,exam_crammer,philosophy_student
    python benchmarks/amortised_inference.py --train --worlds 1000-1015 --weights /tmp/h8.npz \\
        --holdout curious_retiree,exam_crammer,philosophy_student \\
        --columns mix_mean,mix_sd,solo_mean,solo_sd,round,users,entropy,active
    python benchmarks/amortised_inference.py --seeds 0-31 --weights /tmp/h.npz \\
        --variants amortised+f0.5 --by-profile curious_retiree,exam_crammer,philosophy_student
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from scipy import stats
from threadpoolctl import threadpool_limits

from amortised_prototypes import FEATURES, AmortisedCODuel, Network
from prefduel.cli.main import parse_seeds
from prefduel.core.regret import floor_regret, pair_regret, random_regret, score
from prefduel.policies.coduel.policy import CODuel
from prefduel.runner.cell import play, policy_rng, summarize
from prefduel.worlds import get_roster, parse_world
from prefduel.worlds.tutorsim import generate_world

WEIGHTS = Path(__file__).with_name("amortised_weights.npz")
RESTARTS = {"restarts": 8, "restart_growth": 1.5}


def record(
    seeds: list[int], base: dict, network: Network | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows ``x (R, F)``, targets ``y (R,)`` and world of each row, recorded while
    `AmortisedCODuel` plays with ``base`` settings (CODuel's pairs without a network)."""
    xs, ys, ws = [], [], []
    AmortisedCODuel.network = network
    for seed in seeds:
        world = parse_world("dev").make(seed)
        policy = AmortisedCODuel(**base)
        policy.record, policy.utilities = [], world.U
        play(world, policy, policy_rng(seed, "prototype"))
        x = np.concatenate([r[0] for r in policy.record])
        y = np.concatenate([r[1] for r in policy.record])
        xs.append(x)
        ys.append(y)
        ws.append(np.full(y.size, seed))
        print(f"recorded world {seed}: {y.size} rows", flush=True)
    return np.concatenate(xs), np.concatenate(ys), np.concatenate(ws)


def profiles(seed: int) -> np.ndarray:
    """The true profile of each arrival of a ``dev`` world (for the transfer probe only)."""
    world = parse_world("dev").make(seed)
    return np.array([world.students[i]["profile"] for i in world.student_index])


def row_profiles(world_of_row: np.ndarray, rounds: int = 24, k: int = 6) -> np.ndarray:
    """The profile of each recorded row (rows run over arrivals, rounds, personas)."""
    out = []
    for seed in np.unique(world_of_row):
        out.append(np.repeat(profiles(int(seed)), rounds * k))
    return np.concatenate(out)


def fit(
    x: np.ndarray, y: np.ndarray, hidden: tuple[int, ...], seed: int, columns=None
) -> dict:
    """A seeded MLP on standardised features (``columns`` of them: all by default); its
    weights as numpy arrays."""
    from sklearn.neural_network import MLPRegressor

    columns = np.arange(x.shape[1]) if columns is None else np.asarray(columns)
    x = x[:, columns]
    mean, scale = x.mean(0), x.std(0) + 1e-9
    y_scale = float(y.std())
    model = MLPRegressor(
        hidden_layer_sizes=hidden,
        activation="tanh",
        alpha=1e-3,
        learning_rate_init=1e-3,
        max_iter=60,
        batch_size=512,
        early_stopping=True,
        random_state=seed,
    )
    model.fit((x - mean) / scale, y / y_scale)
    arrays = {"x_mean": mean, "x_scale": scale, "y_scale": np.array(y_scale), "columns": columns}
    for i, (w, b) in enumerate(zip(model.coefs_, model.intercepts_, strict=True)):
        arrays[f"W{i}"], arrays[f"b{i}"] = w, b
    return arrays


def offline_report(net: Network, x: np.ndarray, y: np.ndarray, k: int) -> None:
    """Held-out fit: R^2 of the correction and the true regret of greedy pairs on CODuel's
    mixture means against the corrected ones (logits per round, rows grouped by question)."""
    pred = net(x)
    r2 = 1.0 - ((y - pred) ** 2).mean() / y.var()
    u = (y + x[:, 0]).reshape(-1, k)  # true centred utilities
    m = x[:, 0].reshape(-1, k)

    def regret(scores: np.ndarray) -> float:
        top = np.argsort(-scores, axis=1)[:, :2]
        chosen = np.take_along_axis(u, top, axis=1).sum(1)
        return float((2 * u.max(1) - chosen).mean())

    print(
        f"held out: R^2 of the correction {r2:.3f}; greedy regret per round on CODuel's means "
        f"{regret(m):.3f}, on the corrected means {regret(m + pred.reshape(-1, k)):.3f}",
        flush=True,
    )


def train(args: argparse.Namespace) -> None:
    seeds = parse_seeds(args.worlds)
    if min(seeds) < 1000:
        raise SystemExit("training worlds must be disjoint from the scoring seeds: use 1000+")
    base = RESTARTS if args.base == "restarts" else {}
    if args.data is not None and args.data.exists():
        data = np.load(args.data)
        x, y, world = data["x"], data["y"], data["w"]
    else:
        x, y, world = record(seeds, base)
        if args.data is not None:
            np.savez(args.data, x=x, y=y, w=world)
    if args.holdout:
        # transfer probe: no row of a user of these profiles is trained on
        keep = ~np.isin(row_profiles(world), args.holdout.split(","))
        x, y, world = x[keep], y[keep], world[keep]
    held = world >= seeds[-max(1, len(seeds) // 8)]
    hidden = tuple(int(h) for h in args.hidden.split("x"))
    cols = np.array([FEATURES.index(c) for c in args.columns.split(",")]) if args.columns else None
    arrays = fit(x[~held], y[~held], hidden, args.fit_seed, cols)
    offline_report(Network(arrays), x[held], y[held], 6)
    arrays = fit(x, y, hidden, args.fit_seed, cols)
    if args.dagger:
        # the amortised policy's own sessions (its states differ from CODuel's), added to
        # the first rows and refitted once: one step of DAgger
        more = parse_seeds(args.dagger)
        if min(more) < 1000 or set(more) & set(seeds):
            raise SystemExit("--dagger worlds must be 1000+ and disjoint from --worlds")
        x2, y2, _ = record(more, {**base, "future": args.future}, Network(arrays))
        x, y = np.concatenate([x, x2]), np.concatenate([y, y2])
        arrays = fit(x, y, hidden, args.fit_seed, cols)
        seeds = seeds + more
    arrays["features"] = np.array(FEATURES)
    np.savez(args.weights, **arrays)
    print(f"saved {args.weights} ({len(seeds)} worlds, {y.size} rows)")


def variants(names: list[str], weights: Path) -> dict:
    out = {"coduel": CODuel, "coduel-restarts": lambda: CODuel(**RESTARTS)}
    if any("greedy" in name for name in names):
        out["coduel:pair=greedy"] = lambda: CODuel(pair="greedy")
    for name in names:
        if name.startswith("coduel:"):
            kw = dict(item.split("=") for item in name.split(":", 1)[1].split(";"))
            out[name] = lambda kw=kw: CODuel(**kw)
            continue
        kw = {}
        parts = name.split("+")
        if parts[0] != "amortised":
            raise SystemExit(f"unknown variant {name!r}")
        for part in parts[1:]:
            if part == "restarts":
                kw.update(RESTARTS)
            elif part.startswith("s"):
                kw["strength"] = float(part[1:])
            elif part.startswith("f"):
                kw["future"] = float(part[1:])
            elif part == "greedy":
                kw["pair"] = "greedy"
            elif part == "nogate":
                kw["gate"] = "off"
        out[name] = lambda kw=kw: AmortisedCODuel(**kw)
    net = Network(dict(np.load(weights)))
    AmortisedCODuel.network = net
    return out


def dev_world(seed: int, arrivals: int | None = None):
    """A ``dev`` world, with ``arrivals`` users instead of 300 when given (timing runs)."""
    if arrivals is None:
        return parse_world("dev").make(seed)
    return generate_world(replace(get_roster("dev"), arrivals=arrivals), seed)


def run(seed: int, make, arrivals: int | None = None, group: list[str] | None = None):
    """Score and CPU seconds of one run; with ``group``, the score over the users of those
    profiles and over the others instead of the score (the transfer probe)."""
    world = dev_world(seed, arrivals)
    policy = make()
    start = time.process_time()
    traj = play(world, policy, policy_rng(seed, "prototype"))
    cpu = time.process_time() - start
    if not group:
        return summarize(world, traj.first, traj.second)["score"], cpu
    inside = np.isin(profiles(seed), group)
    regret = pair_regret(world.U, traj.first, traj.second)
    floor, rand = floor_regret(world.U), random_regret(world.U)
    part = [score(regret[m].sum(), rand[m].sum(), floor[m].sum()) for m in (inside, ~inside)]
    return np.array(part), cpu


def score_variants(args: argparse.Namespace) -> None:
    seeds = parse_seeds(args.seeds)
    if max(seeds) >= 1000:
        raise SystemExit("scoring seeds must be below 1000 (the training worlds)")
    table = variants([v for v in args.variants.split(",") if v], args.weights)
    scores = {k: {} for k in table}
    cpu = {k: [] for k in table}
    for seed in seeds:
        for name, make in table.items():
            scores[name][seed], c = run(seed, make, args.arrivals, args.by_profile)
            cpu[name].append(c)
        print(f"seed {seed}: " + "  ".join(f"{k} {v[seed]}" for k, v in scores.items()),
              flush=True)
    if args.by_profile:
        report_groups(seeds, scores, table)
        return
    print(f"\ndev, {len(seeds)} seeds (each an independent world)")
    for name in table:
        v = np.array([scores[name][s] for s in seeds])
        line = f"{name:28s} {v.mean():6.2f} ± {v.std(ddof=1) / np.sqrt(v.size):.2f}"
        for ref in ("coduel", "coduel-restarts"):
            diff = v - np.array([scores[ref][s] for s in seeds])
            half = stats.t.ppf(0.975, diff.size - 1) * diff.std(ddof=1) / np.sqrt(diff.size)
            line += f"  vs {ref} {diff.mean():+.2f} [{diff.mean() - half:+.2f}, "
            line += f"{diff.mean() + half:+.2f}]"
        print(line + f"  cpu {np.mean(cpu[name]):.2f} s")


def report_groups(seeds: list[int], scores: dict, table: dict) -> None:
    """Paired differences to CODuel on the users of the held-out profiles and the others."""
    for name in table:
        v = np.array([scores[name][s] for s in seeds])
        diff = v - np.array([scores["coduel"][s] for s in seeds])
        half = stats.t.ppf(0.975, len(seeds) - 1) * diff.std(0, ddof=1) / np.sqrt(len(seeds))
        mean = diff.mean(0)
        print(f"{name:28s} vs coduel: held-out profiles {mean[0]:+.2f} "
              f"[{mean[0] - half[0]:+.2f}, {mean[0] + half[0]:+.2f}], others {mean[1]:+.2f} "
              f"[{mean[1] - half[1]:+.2f}, {mean[1] + half[1]:+.2f}]")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--train", action="store_true", help="record worlds, fit, save")
    parser.add_argument("--worlds", default="1000-1015", help="training world seeds (1000+)")
    parser.add_argument("--base", default="coduel", choices=["coduel", "restarts"])
    parser.add_argument("--hidden", default="32x32")
    parser.add_argument("--columns", default="", help="features the network sees (all)")
    parser.add_argument("--dagger", default="", help="worlds the trained policy then plays")
    parser.add_argument("--future", type=float, default=0.5, help="future scale (--dagger)")
    parser.add_argument("--fit-seed", type=int, default=0)
    parser.add_argument("--weights", type=Path, default=WEIGHTS)
    parser.add_argument("--data", type=Path, help="cache of the recorded rows (.npz)")
    parser.add_argument("--seeds", default="0-7")
    parser.add_argument("--holdout", default="", help="profiles left out of training (probe)")
    parser.add_argument("--by-profile", type=lambda v: v.split(","), default=None,
                        help="score the users of these profiles apart (probe)")
    parser.add_argument("--arrivals", type=int, help="dev with this many users (CPU timing)")
    parser.add_argument("--variants", default="amortised")
    args = parser.parse_args()
    with threadpool_limits(1):
        train(args) if args.train else score_variants(args)


if __name__ == "__main__":
    main()
