"""Does CODuel's population model recover the planted profiles? (diagnostic, ``dev`` only)

Runs CODuel on ``dev`` worlds, then assigns every completed user to the learned component
with the highest responsibility and cross-tabulates those assignments against the user's hidden
profile (8 hand-written profiles). For one seed and one spec it prints the table and compares
each component's mean persona weights (centered, logit units) with the mean hindsight-oracle
weights of its dominant profile (U units x 8, the reference scale) by cosine similarity. For
several seeds or specs it prints one summary row per run and the mean per spec: learned
components, the largest components' sizes, profile purity (share of a profile's users in its
most common component, mean over profiles), component purity (share of a component's users from
its dominant profile, weighted by size), the adjusted Rand index of components vs profiles, and
split moves applied.

    python benchmarks/coduel_population.py --seed 0
    python benchmarks/coduel_population.py --seeds 0-7 --specs coduel,coduel:split=on
"""

from __future__ import annotations

import argparse
from collections import Counter
from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits

from prefduel.cli.main import parse_seeds
from prefduel.core.registry import split_specs
from prefduel.policies import load_policy
from prefduel.policies.coduel.population import component_evidence
from prefduel.runner.cell import play, policy_rng
from prefduel.runner.references import linear_oracle_theta
from prefduel.worlds import get_world


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine similarity of two vectors (0 for a zero vector)."""
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    return float(a @ b / (na * nb)) if na > 0 and nb > 0 else 0.0


def adjusted_rand(a: list, b: list) -> float:
    """Adjusted Rand index of two labelings of the same items (1: identical partitions)."""
    _, ia = np.unique(np.asarray(a, dtype=str), return_inverse=True)
    _, ib = np.unique(np.asarray(b, dtype=str), return_inverse=True)
    table = np.zeros((ia.max() + 1, ib.max() + 1))
    np.add.at(table, (ia, ib), 1.0)

    def pairs(x: np.ndarray) -> float:
        return float((x * (x - 1) / 2).sum())

    total, rows, cols = pairs(np.array([len(a)])), pairs(table.sum(1)), pairs(table.sum(0))
    expected = rows * cols / total if total else 0.0
    top = 0.5 * (rows + cols) - expected
    return (pairs(table) - expected) / top if top else 1.0


@dataclass
class Fit:
    """One run's population and its users' assignments."""

    policy: object
    world: object
    assign: np.ndarray
    profiles: list[str]


def fit(seed: int, spec: str) -> Fit:
    """Run ``spec`` on ``dev`` seed ``seed`` and assign users to their most likely component."""
    world = get_world("dev", seed)
    policy = load_policy(spec)
    with threadpool_limits(limits=1):
        play(world, policy, policy_rng(world.seed, spec), label=spec)
    pop = policy.pop
    profiles = [world.students[i]["profile"] for i in world.student_index]
    loglik = component_evidence(policy.lam, policy.h, pop.mu, pop.cov)[0]
    logr = loglik + np.log(np.maximum(pop.weights(), 1e-300))
    return Fit(policy, world, logr.argmax(axis=1), profiles)


def purities(run: Fit) -> tuple[float, float]:
    """``(profile purity, component purity)`` of a run (see the module docstring)."""
    pairs = list(zip(run.assign.tolist(), run.profiles, strict=True))
    by_profile = Counter(pairs)
    profile = [
        max(n for (c, p), n in by_profile.items() if p == name) / run.profiles.count(name)
        for name in sorted(set(run.profiles))
    ]
    comp = sum(
        max(n for (c, p), n in by_profile.items() if c == k) for k in set(run.assign.tolist())
    )
    return float(np.mean(profile)), comp / len(pairs)


def print_table(run: Fit, seed: int, spec: str) -> None:
    """The profile x component table and the components' persona weights vs the oracle's."""
    policy, world, assign, profiles = run.policy, run.world, run.assign, run.profiles
    pop = policy.pop
    names = sorted(set(profiles))
    comps = sorted(set(assign))
    print(
        f"dev seed {seed} ({spec}): {pop.n_learned} learned components after {pop.n_sessions} "
        f"sessions; gate open: {policy.gate_open}; transfer rounds: {policy.transfer_rounds}"
    )
    print("\nusers per (profile, component with the highest responsibility); 0 = isotropic")
    print(f"{'profile':26s}" + "".join(f"{c:>5d}" for c in comps) + "   purity")
    for name in names:
        counts = Counter(int(c) for c, p in zip(assign, profiles, strict=True) if p == name)
        row = "".join(f"{counts.get(c, 0):5d}" for c in comps)
        purity = max(counts.values()) / sum(counts.values())
        print(f"{name:26s}{row}   {purity:5.2f}")
    theta = linear_oracle_theta(world.Phi, world.U) * 8.0  # U units -> logits
    k = world.K
    print(
        "\ncomponent  members  dominant profile           cosine(persona weights)  g weight "
        "(component / oracle)"
    )
    for c in comps:
        if c == 0:
            continue
        members = [p for a, p in zip(assign, profiles, strict=True) if a == c]
        dominant = Counter(members).most_common(1)[0][0]
        oracle = theta[[i for i, p in enumerate(profiles) if p == dominant]].mean(axis=0)
        comp = pop.mu[c]
        cos = cosine(comp[:k] - comp[:k].mean(), oracle[:k] - oracle[:k].mean())
        print(
            f"{c:9d}  {len(members):7d}  {dominant:26s} {cos:23.2f}  "
            f"{comp[k]:6.2f} / {oracle[k]:6.2f}"
        )


def summary_row(run: Fit) -> dict:
    """Summary numbers of one run."""
    profile, comp = purities(run)
    counts = Counter(run.assign.tolist())
    sizes = sorted((n for c, n in counts.items() if c != 0), reverse=True) or [0]
    return {
        "learned": run.policy.pop.n_learned,
        "sizes": sizes,
        "isotropic": counts.get(0, 0),
        "profile_purity": profile,
        "component_purity": comp,
        "ari": adjusted_rand(run.assign.tolist(), run.profiles),
        "splits": len(run.policy.pop.splits),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=None, help="one seed (default 0)")
    parser.add_argument("--seeds", default=None, help="several seeds, e.g. 0-7 (summary rows)")
    parser.add_argument("--spec", default=None, help="one CODuel spec (default coduel)")
    parser.add_argument("--specs", default=None, help="several specs, comma-separated")
    args = parser.parse_args()
    seeds = parse_seeds(args.seeds) if args.seeds else [0 if args.seed is None else args.seed]
    specs = split_specs(args.specs) if args.specs else [args.spec or "coduel"]
    if len(seeds) == 1 and len(specs) == 1:
        print_table(fit(seeds[0], specs[0]), seeds[0], specs[0])
        return
    print(
        f"{'spec':34s} {'seed':>4s} {'learned':>7s} {'profile':>8s} {'component':>9s} "
        f"{'ARI':>5s} {'splits':>6s} {'iso':>4s}  largest learned components (users)"
    )
    for spec in specs:
        rows = []
        for seed in seeds:
            row = summary_row(fit(seed, spec))
            rows.append(row)
            print(
                f"{spec:34s} {seed:4d} {row['learned']:7d} {row['profile_purity']:8.2f} "
                f"{row['component_purity']:9.2f} {row['ari']:5.2f} {row['splits']:6d} "
                f"{row['isotropic']:4d}  "
                f"{row['sizes'][:5]}",
                flush=True,
            )
        mean = {k: np.mean([r[k] for r in rows]) for k in rows[0] if k != "sizes"}
        largest = np.mean([r["sizes"][0] for r in rows])
        print(
            f"{spec + ' (mean)':34s} {len(rows):4d} {mean['learned']:7.1f} "
            f"{mean['profile_purity']:8.2f} {mean['component_purity']:9.2f} {mean['ari']:5.2f} "
            f"{mean['splits']:6.1f} {mean['isotropic']:4.0f}  largest {largest:.0f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
