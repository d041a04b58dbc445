"""The sizes of a datagen run, checked before anything is allocated or sent.

Each setting has its own bound (`prefduel.datagen.config_file`); the products of several are
bounded here: the judge calls of a run (students x questions x persona pairs x 4 judge
configurations x samples: the table of picks has one byte per call, and every call costs) and
the memory of the world it builds (arrivals x rounds x personas).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prefduel.worlds.tutorsim import JUDGE_CONFIGS

if TYPE_CHECKING:
    from prefduel.datagen.collections import Where
    from prefduel.datagen.config import DatagenConfig

#: Most judge calls one config may ask for (a run of ``examples/small.yaml`` makes 11,520).
MAX_JUDGE_CALLS = 10_000_000
#: Most bytes the generated world may take in memory: about what a TutorSim world of 100,000
#: arrivals of 24 rounds with 6 personas takes (1.7 GB).
MAX_WORLD_BYTES = 2_000_000_000


def judge_calls(config: DatagenConfig) -> int:
    """Judge calls of a run without malformed answers (mode ``samples``; the most that mode
    ``logprobs`` makes when no reply has logprobs)."""
    pairs = config.K * (config.K - 1) // 2
    return len(config.students) * config.n_questions * pairs * len(JUDGE_CONFIGS) * config.samples


def world_bytes(arrivals: int, rounds: int, personas: int) -> int:
    """Bytes of a stored world's arrays (`prefduel.worlds.world`): per (arrival, round), the
    features ``K x (K + 1)``, utilities ``K``, click probabilities ``K x K``, a uniform draw and
    a question index, 8 bytes each."""
    k = personas
    return 8 * arrivals * (rounds * (2 * k * k + 2 * k + 2) + 1)


def check_sizes(config: DatagenConfig, where: Where) -> None:
    """Refuse a config whose run or world would not fit (`MAX_JUDGE_CALLS`, `MAX_WORLD_BYTES`).

    Raises:
        DatagenConfigError: Naming the file, what is too large and its factors.
    """
    calls = judge_calls(config)
    if calls > MAX_JUDGE_CALLS:
        raise where.error(
            "judge calls",
            f"{len(config.students)} students x {config.n_questions} questions x "
            f"{config.K * (config.K - 1) // 2} persona pairs x {len(JUDGE_CONFIGS)} orders and "
            f"labels x {config.samples} samples make {calls:,} calls; at most "
            f"{MAX_JUDGE_CALLS:,}: take fewer students, topics, cues per question or samples",
        )
    n, s, k = config.layout.arrivals, config.rounds, config.K
    size = world_bytes(n, s, k)
    if size > MAX_WORLD_BYTES:
        raise where.error(
            "world",
            f"{n:,} arrivals x {s} rounds x {k} personas take {size / 1e9:.1f} GB in memory; "
            f"at most {MAX_WORLD_BYTES / 1e9:g} GB: lower world.arrivals or world.rounds",
        )


__all__ = ["MAX_JUDGE_CALLS", "MAX_WORLD_BYTES", "check_sizes", "judge_calls", "world_bytes"]
