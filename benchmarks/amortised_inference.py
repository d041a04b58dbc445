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
mean of the utilities given CODuel's belief. No persona or profile identity is an input, so it
learns how CODuel's belief errs, not ``dev``'s profiles. The policy (`AmortisedCODuel`) is
CODuel with the regret now of its ``kg`` value taken from the corrected utilities (the future
term is CODuel's) and greedy pairs, where CODuel plays greedy, from the corrected utilities.
The weights are retrained deterministically from the seed by ``--train`` and saved in
``benchmarks/amortised_weights.npz`` (a few kB).

Figures on this machine (2 cores shared with other work, no GPU): see the end of this
docstring, filled in from the runs below.

    python benchmarks/amortised_inference.py --train --worlds 1000-1015
    python benchmarks/amortised_inference.py --seeds 0-7 --variants amortised
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


def fit(x: np.ndarray, y: np.ndarray, hidden: tuple[int, ...], seed: int) -> dict:
    """A seeded MLP on standardised features; its weights as numpy arrays."""
    from sklearn.neural_network import MLPRegressor

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
    arrays = {"x_mean": mean, "x_scale": scale, "y_scale": np.array(y_scale)}
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
    held = world >= seeds[-max(1, len(seeds) // 8)]
    hidden = tuple(int(h) for h in args.hidden.split("x"))
    arrays = fit(x[~held], y[~held], hidden, args.fit_seed)
    offline_report(Network(arrays), x[held], y[held], 6)
    arrays = fit(x, y, hidden, args.fit_seed)
    if args.dagger:
        # the amortised policy's own sessions (its states differ from CODuel's), added to
        # the first rows and refitted once: one step of DAgger
        more = parse_seeds(args.dagger)
        if min(more) < 1000 or set(more) & set(seeds):
            raise SystemExit("--dagger worlds must be 1000+ and disjoint from --worlds")
        x2, y2, _ = record(more, {**base, "future": args.future}, Network(arrays))
        x, y = np.concatenate([x, x2]), np.concatenate([y, y2])
        arrays = fit(x, y, hidden, args.fit_seed)
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


def run(seed: int, make, arrivals: int | None = None) -> tuple[float, float]:
    world = dev_world(seed, arrivals)
    policy = make()
    start = time.process_time()
    traj = play(world, policy, policy_rng(seed, "prototype"))
    return summarize(world, traj.first, traj.second)["score"], time.process_time() - start


def score(args: argparse.Namespace) -> None:
    seeds = parse_seeds(args.seeds)
    if max(seeds) >= 1000:
        raise SystemExit("scoring seeds must be below 1000 (the training worlds)")
    table = variants([v for v in args.variants.split(",") if v], args.weights)
    scores = {k: {} for k in table}
    cpu = {k: [] for k in table}
    for seed in seeds:
        for name, make in table.items():
            scores[name][seed], c = run(seed, make, args.arrivals)
            cpu[name].append(c)
        print(f"seed {seed}: " + "  ".join(f"{k} {v[seed]:.2f}" for k, v in scores.items()),
              flush=True)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--train", action="store_true", help="record worlds, fit, save")
    parser.add_argument("--worlds", default="1000-1015", help="training world seeds (1000+)")
    parser.add_argument("--base", default="coduel", choices=["coduel", "restarts"])
    parser.add_argument("--hidden", default="32x32")
    parser.add_argument("--dagger", default="", help="worlds the trained policy then plays")
    parser.add_argument("--future", type=float, default=0.5, help="future scale (--dagger)")
    parser.add_argument("--fit-seed", type=int, default=0)
    parser.add_argument("--weights", type=Path, default=WEIGHTS)
    parser.add_argument("--data", type=Path, help="cache of the recorded rows (.npz)")
    parser.add_argument("--seeds", default="0-7")
    parser.add_argument("--arrivals", type=int, help="dev with this many users (CPU timing)")
    parser.add_argument("--variants", default="amortised")
    args = parser.parse_args()
    with threadpool_limits(1):
        train(args) if args.train else score(args)


if __name__ == "__main__":
    main()
