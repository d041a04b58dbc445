"""Does CODuel's population model recover the planted profiles? (diagnostic, ``dev`` only)

Runs CODuel on one ``dev`` world, then assigns every completed user to the learned component
with the highest responsibility and cross-tabulates those assignments against the user's hidden
profile (8 hand-written profiles). It also compares each component's mean persona weights
(centered, logit units) with the mean hindsight-oracle weights of its dominant profile (U units x
8, the reference scale) by cosine similarity.

    python benchmarks/coduel_population.py --seed 0
"""

from __future__ import annotations

import argparse
from collections import Counter

import numpy as np
from threadpoolctl import threadpool_limits

from prefduel.policies import load_policy
from prefduel.policies.coduel.population import component_posteriors
from prefduel.runner.cell import play, policy_rng
from prefduel.runner.references import linear_oracle_theta
from prefduel.worlds import get_world


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine similarity of two vectors (0 for a zero vector)."""
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    return float(a @ b / (na * nb)) if na > 0 and nb > 0 else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--spec", default="coduel")
    args = parser.parse_args()
    world = get_world("dev", args.seed)
    policy = load_policy(args.spec)
    with threadpool_limits(limits=1):
        play(world, policy, policy_rng(world.seed, args.spec), label=args.spec)
    pop = policy.pop
    profiles = [world.students[i]["profile"] for i in world.student_index]
    _, _, loglik = component_posteriors(policy.lam, policy.h, pop.mu, pop.cov)
    logr = loglik + np.log(np.maximum(pop.weights(), 1e-300))
    assign = logr.argmax(axis=1)
    names = sorted(set(profiles))
    comps = sorted(set(assign))
    print(
        f"dev seed {args.seed}: {pop.n_learned} learned components after {pop.n_sessions} "
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


if __name__ == "__main__":
    main()
