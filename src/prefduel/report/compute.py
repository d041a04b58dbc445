"""The numbers of a report, computed with `prefduel.stats` from checked rows.

Pure functions of rows (plus a cheap students table per world and seed for the per-profile
breakdown); no plotting and no HTML here.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import numpy as np

from prefduel.core.errors import PrefduelError, SpecError
from prefduel.report.data import ReportInput
from prefduel.runner.rows import row_version
from prefduel.stats.asking import order_worlds
from prefduel.stats.paired import (
    learning_curve,
    paired_gains,
    profile_breakdown,
    round_curve,
)
from prefduel.stats.table import summarize_rows
from prefduel.worlds.spec import parse_world, world_kind
from prefduel.worlds.tutorsim_data import load_tutorsim_data

#: Above this many distinct profiles in a world, students are grouped by trait value instead.
MAX_PROFILES = 24

StudentsFn = Callable[[str, int], tuple[list[dict[str, Any]], np.ndarray]]


@dataclass
class ProfileTable:
    """Per-profile excess regret per arrival of every policy on one world.

    Attributes:
        world: World name.
        grouping: ``"profile"`` (each arrival's hidden profile) or ``"trait"`` (each trait
            value and quirk of template students; an arrival counts in several groups).
        groups: Group labels, display order.
        policies: Policy names, display order.
        entries: ``{(group, policy): {profile, arrivals, excess_mean, excess_se}}``.
        seeds: Seeds used per policy.
        overall: Each policy's mean excess regret per arrival over all its arrivals and seeds.
    """

    world: str
    grouping: str
    groups: list[str]
    policies: list[str]
    entries: dict[tuple[str, str], dict[str, Any]]
    seeds: dict[str, int]
    overall: dict[str, float] = field(default_factory=dict)

    def matrix(self) -> np.ndarray:
        """Mean excess per arrival, ``(len(groups), len(policies))`` (nan where absent)."""
        out = np.full((len(self.groups), len(self.policies)), np.nan)
        for i, g in enumerate(self.groups):
            for j, p in enumerate(self.policies):
                entry = self.entries.get((g, p))
                if entry is not None:
                    out[i, j] = entry["excess_mean"]
        return out


@dataclass
class WorldReport:
    """Everything the report shows for one world.

    Attributes:
        world: World name.
        seeds: Seeds with at least one row.
        leaderboard: `summarize_rows` entries, best first.
        policies: Policy (non-reference) names in leaderboard order.
        curves: ``{policy: learning_curve(...)}`` (per arrival, centered moving means).
        rounds: ``{policy: round_curve(...)}`` (per round).
        gains: `paired_gains` entries of this world, each
            with ``policy_seeds`` (seeds the policy has) and ``cross_version`` (paired seeds
            whose two rows come from different package versions).
        mixed_versions: ``{policy: versions}`` of entries whose seeds mix versions.
        profiles: Per-profile breakdown, or None (see ``notes``).
        notes: What the reader must know about this world's sections.
    """

    world: str
    seeds: list[int]
    leaderboard: list[dict[str, Any]]
    policies: list[str]
    curves: dict[str, dict[str, Any]] = field(default_factory=dict)
    rounds: dict[str, dict[str, Any]] = field(default_factory=dict)
    gains: list[dict[str, Any]] = field(default_factory=list)
    mixed_versions: dict[str, list[str]] = field(default_factory=dict)
    profiles: ProfileTable | None = None
    notes: list[str] = field(default_factory=list)


def group_breakdown(
    rows: Sequence[dict[str, Any]], labels: Callable[[int], list[list[str]]]
) -> dict[str, dict[str, Any]]:
    """Excess regret per arrival pooled over seeds by group, an arrival may be in many groups.

    With one label per arrival this equals `profile_breakdown`.

    Args:
        rows: Rows of one world and policy, each with ``excess_per_arrival (N,)``.
        labels: ``seed -> [labels of arrival a for a in range(N)]``.

    Returns:
        ``{group: {profile, arrivals, excess_mean, excess_se}}`` (s.e. nan for one arrival).
    """
    pooled: dict[str, list[np.ndarray]] = defaultdict(list)
    for row in rows:
        excess = np.asarray(row["excess_per_arrival"], dtype=float)
        index: dict[str, list[int]] = defaultdict(list)
        for arrival, names in enumerate(labels(int(row["seed"]))[: excess.size]):
            for name in names:
                index[name].append(arrival)
        for name, arrivals in index.items():
            pooled[name].append(excess[arrivals])
    out = {}
    for name, parts in pooled.items():
        arr = np.concatenate(parts)
        se = float(arr.std(ddof=1) / np.sqrt(arr.size)) if arr.size > 1 else float("nan")
        out[name] = {
            "profile": name,
            "arrivals": int(arr.size),
            "excess_mean": float(arr.mean()),
            "excess_se": se,
        }
    return out


def _trait_names(parts: int) -> list[str]:
    """Names of the template traits when a profile has ``parts`` slash-separated values."""
    traits = load_tutorsim_data().traits
    if len(traits) == parts:
        return [t.id for t in traits]
    return [f"trait {i + 1}" for i in range(parts)]


def _trait_order(names: list[str]) -> dict[str, int]:
    """Display order of ``trait: value`` labels (data order of traits and values)."""
    data = load_tutorsim_data()
    order = [f"{t.id}: {v.id}" for t in data.traits for v in t.values]
    order += [f"quirk: {q.id}" for q in data.quirks]
    rank = {label: i for i, label in enumerate(order)}
    extra = sorted(set(names) - set(rank))
    rank.update({label: len(order) + i for i, label in enumerate(extra)})
    return rank


#: ``{seed: (students, student_index)}`` of one world.
_Tables = dict[int, tuple[list[dict[str, Any]], np.ndarray]]
#: ``{(group, policy): breakdown entry}``.
_Entries = dict[tuple[str, str], dict[str, Any]]


def _check_arrivals(rows: Sequence[dict[str, Any]], tables: _Tables) -> None:
    """Refuse rows whose number of arrivals is not their world's (another roster version)."""
    for row in rows:
        n_rows, n_world = len(row["excess_per_arrival"]), len(tables[int(row["seed"])][1])
        if n_rows != n_world:
            raise PrefduelError(
                f"its rows have {n_rows} arrivals but the world of seed {row['seed']} has "
                f"{n_world}, so the rows do not come from this world (another roster version?)"
            )


def _by_profile(
    tables: _Tables, by_policy: dict[str, list[dict[str, Any]]], policies: Sequence[str]
) -> tuple[_Entries, list[str]]:
    """`profile_breakdown` per policy; groups by mean excess over policies, worst first."""

    def world_of(seed: int) -> SimpleNamespace:
        studs, index = tables[seed]
        return SimpleNamespace(students=studs, student_index=index)

    entries: _Entries = {}
    for policy in policies:
        for entry in profile_breakdown(by_policy[policy], world_of, policy):
            entries[(entry["profile"], policy)] = entry
    means = defaultdict(list)
    for (group, _), entry in entries.items():
        means[group].append(entry["excess_mean"])
    return entries, sorted(means, key=lambda g: (-float(np.mean(means[g])), g))


def _by_trait(
    tables: _Tables,
    by_policy: dict[str, list[dict[str, Any]]],
    policies: Sequence[str],
    profiles: set[str],
) -> tuple[_Entries, list[str]]:
    """`group_breakdown` per policy by each trait value and quirk; groups in data order."""
    names = _trait_names(max(len(p.split("/")) for p in profiles))
    labels_cache: dict[int, list[list[str]]] = {}

    def labels(seed: int) -> list[list[str]]:
        if seed not in labels_cache:
            studs, index = tables[seed]
            out = []
            for i in index:
                student = studs[int(i)]
                values = str(student.get("profile", "unknown")).split("/")
                out.append(
                    [f"{n}: {v}" for n, v in zip(names, values, strict=False)]
                    + [f"quirk: {q}" for q in student.get("quirks", []) or []]
                )
            labels_cache[seed] = out
        return labels_cache[seed]

    entries: _Entries = {}
    for policy in policies:
        for group, entry in group_breakdown(by_policy[policy], labels).items():
            entries[(group, policy)] = entry
    rank = _trait_order(sorted({g for g, _ in entries}))
    return entries, sorted({g for g, _ in entries}, key=lambda g: rank[g])


def profile_table(
    world: str,
    rows: Sequence[dict[str, Any]],
    policies: Sequence[str],
    students: StudentsFn,
) -> ProfileTable | None:
    """Per-profile breakdown of ``policies`` on ``world``.

    Worlds with at most `MAX_PROFILES` distinct profiles use
    `profile_breakdown` on each arrival's hidden profile;
    template rosters (hundreds of distinct ``trait/trait/...`` profiles) are grouped by each
    trait value and quirk instead.

    Args:
        world: World name.
        rows: Policy rows of ``world`` with usable curves.
        policies: Policies to break down, display order.
        students: ``(world, seed) -> (students, student_index)``.

    Returns:
        The table, or None when the students carry no profile.

    Raises:
        PrefduelError: the students cannot be read (locked roster, missing stored world)
            or the rows have another number of arrivals than the world.
    """
    seeds = sorted({int(r["seed"]) for r in rows})
    if not seeds:
        return None
    tables = {s: students(world, s) for s in seeds}
    _check_arrivals(rows, tables)
    profiles = {
        str(studs[int(i)].get("profile", "unknown")) if studs else "unknown"
        for studs, index in tables.values()
        for i in index
    }
    if profiles == {"unknown"}:
        return None
    by_policy = defaultdict(list)
    for row in rows:
        by_policy[row["policy"]].append(row)
    policies = [p for p in policies if by_policy.get(p)]
    if len(profiles) <= MAX_PROFILES:
        grouping = "profile"
        entries, groups = _by_profile(tables, by_policy, policies)
    else:
        grouping = "trait"
        entries, groups = _by_trait(tables, by_policy, policies, profiles)
    return ProfileTable(
        world=world,
        grouping=grouping,
        groups=groups,
        policies=list(policies),
        entries=entries,
        seeds={p: len({int(r["seed"]) for r in by_policy[p]}) for p in policies},
        overall={
            p: float(np.concatenate([r["excess_per_arrival"] for r in by_policy[p]]).mean())
            for p in policies
        },
    )


def cached_students(allow_test: bool) -> StudentsFn:
    """``(world, seed) -> (students, student_index)`` (`WorldSpec.students`), memoized per
    ``(world, seed)`` (each seed of a stored world is its own arrival order)."""
    cache: dict[tuple[str, int], tuple[list[dict[str, Any]], np.ndarray]] = {}

    def load(world: str, seed: int) -> tuple[list[dict[str, Any]], np.ndarray]:
        key = (world, int(seed))
        if key not in cache:
            cache[key] = parse_world(world).students(int(seed), allow_test=allow_test)
        return cache[key]

    return load


#: ``{(world, policy): {seed: row}}``.
_SeedRows = dict[tuple[str, str], dict[int, dict[str, Any]]]


def _missing_gain_notes(
    gains: list[dict[str, Any]], seeds: _SeedRows, worlds: Sequence[str], competitor: str
) -> list[str]:
    """Why a policy of a world has no paired gain (no competitor, no shared seed, excess 0)."""
    notes = []
    have = {(g["world"], g["policy"]) for g in gains}
    for world in worlds:
        base = seeds.get((world, competitor))
        policies = [p for (w, p) in seeds if w == world and p != competitor]
        if not base:
            if policies:
                notes.append(
                    f"world {world}: no rows of competitor {competitor!r}, so no paired gains "
                    f"(policies there: {', '.join(sorted(policies))}; choose one with "
                    "--competitor)"
                )
            continue
        for policy in policies:
            if (world, policy) in have:
                continue
            common = sorted(set(seeds[(world, policy)]) & set(base))
            if not common:
                notes.append(
                    f"world {world}: {policy} shares no seed with {competitor!r}, so no paired gain"
                )
            else:
                bad = [s for s in common if base[s]["excess"] <= 0]
                notes.append(
                    f"world {world}: no paired gain for {policy}: {competitor!r} has excess "
                    f"regret <= 0 on seed(s) {', '.join(map(str, bad[:10]))}, so the relative "
                    "change is undefined"
                )
    return notes


def _pairing_notes(gains: list[dict[str, Any]], competitor: str) -> list[str]:
    """Gains on fewer seeds than one side has, and gains pairing rows of two versions."""
    notes = []
    partial: dict[tuple[int, int, int], list[str]] = defaultdict(list)
    for g in gains:
        if g["n"] < max(g["policy_seeds"], g["competitor_seeds"]):
            key = (g["policy_seeds"], g["competitor_seeds"], g["n"])
            partial[key].append(f"{g['policy']} on {g['world']}")
    for (mine, theirs, n), which in partial.items():
        notes.append(
            f"{len(which)} paired gain(s) use only the {n} seeds both sides have ({mine} seeds "
            f"for the policy, {theirs} for {competitor!r}): {', '.join(which)}"
        )
    for g in gains:
        if g["cross_version"]:
            notes.append(
                f"world {g['world']}: {g['policy']} vs {competitor!r}: {g['cross_version']} of "
                f"{g['n']} paired seeds compare rows written by different package versions"
            )
    return notes


def _gains(
    data: ReportInput, competitor: str, level: float, shown: set[str] | None = None
) -> tuple[list[dict[str, Any]], list[str]]:
    """Paired gains of every policy vs ``competitor`` on every world, with the notes they need.

    Only policies in ``shown`` (all when None) get an entry or a note. Each entry also gets
    ``policy_seeds``, ``competitor_seeds`` (seeds each side has) and ``cross_version``.

    Raises:
        SpecError: the competitor has no rows at all (names the policies that exist).
    """
    pool = [r for r in data.rows if r["kind"] == "policy" or r["policy"] == competitor]
    try:
        gains = paired_gains(pool, competitor, level)
        if shown is not None:
            gains = [g for g in gains if g["policy"] in shown]
            pool = [r for r in pool if r["policy"] in shown or r["policy"] == competitor]
    except ValueError as exc:
        present = sorted({r["policy"] for r in data.rows})
        raise SpecError(
            f"--competitor: competitor {competitor!r} has no rows in {data.path}; "
            f"policies present: {', '.join(present)}"
        ) from exc
    seeds: _SeedRows = defaultdict(dict)
    for row in pool:
        seeds[(row["world"], row["policy"])][int(row["seed"])] = row
    for g in gains:
        mine, base = seeds[(g["world"], g["policy"])], seeds[(g["world"], competitor)]
        common = sorted(set(mine) & set(base))
        g["policy_seeds"] = len(mine)
        g["competitor_seeds"] = len(base)
        g["cross_version"] = sum(row_version(mine[s]) != row_version(base[s]) for s in common)
    worlds = list(dict.fromkeys(r["world"] for r in pool))
    notes = _missing_gain_notes(gains, seeds, worlds, competitor)
    return gains, notes + _pairing_notes(gains, competitor)


def _mixed_versions(rows: Sequence[dict[str, Any]]) -> dict[str, list[str]]:
    """``{policy: versions}`` of the policies whose rows come from several package versions."""
    versions: dict[str, set[str]] = defaultdict(set)
    for row in rows:
        versions[row["policy"]].add(row_version(row))
    return {p: sorted(v) for p, v in versions.items() if len(v) > 1}


def _add_curves(
    report: WorldReport, curve_rows: Sequence[dict[str, Any]], window: int, level: float
) -> None:
    """Learning and per-round curves of each policy of ``report`` (a note when it has none)."""
    for policy in report.policies:
        mine = [r for r in curve_rows if r["policy"] == policy]
        if not mine:
            report.notes.append(f"{policy}: no rows with usable curves on {report.world}")
            continue
        report.curves[policy] = learning_curve(mine, report.world, policy, window, level)
        report.rounds[policy] = round_curve(mine, level)


def compute_report(
    data: ReportInput,
    *,
    competitor: str = "random",
    window: int = 25,
    level: float = 0.95,
    students: StudentsFn | None = None,
    allow_test: bool = False,
) -> tuple[list[WorldReport], list[str]]:
    """All numbers of a report.

    Args:
        data: Checked rows (`load_input`).
        competitor: Canonical name of the policy paired gains are measured against.
        window: Moving-mean window of the learning curves (arrivals).
        level: Confidence level of every interval.
        students: ``(world, seed) -> (students, student_index)``; default
            `cached_students` (cheap students tables, no world generation).
        allow_test: Allow reading the students of locked ``test-*`` rosters.

    Returns:
        One `WorldReport` per world (order of first appearance, the ask tracks of a world
        together by budget) and the notes of the
        paired gains (seeds used, missing competitor, versions).

    Raises:
        SpecError: the competitor has no rows at all.
    """
    if window < 1:
        raise SpecError(f"--window must be a positive number of arrivals, got {window}")
    students = students or cached_students(allow_test)
    shown = data.shown
    gains, gain_notes = _gains(data, competitor, level, shown)
    rows_shown = data.rows if shown is None else [r for r in data.rows if r["policy"] in shown]
    summary = summarize_rows(rows_shown)
    curve_ok = data.curve_ok
    reports = []
    for world in order_worlds(r["world"] for r in rows_shown):
        rows = [r for r in rows_shown if r["world"] == world]
        board = [e for e in summary if e["world"] == world]
        policies = [e["policy"] for e in board if e["kind"] != "reference"]
        report = WorldReport(
            world=world,
            seeds=sorted({int(r["seed"]) for r in rows}),
            leaderboard=board,
            policies=policies,
            gains=[g for g in gains if g["world"] == world],
            mixed_versions=_mixed_versions(rows),
        )
        curve_rows = [r for r in rows if id(r) in curve_ok and r["kind"] == "policy"]
        _add_curves(report, curve_rows, window, level)
        report.profiles = _profiles(world, curve_rows, policies, students, report.notes)
        reports.append(report)
    return reports, gain_notes


def _profiles(
    world: str,
    rows: list[dict[str, Any]],
    policies: list[str],
    students: StudentsFn,
    notes: list[str],
) -> ProfileTable | None:
    """`profile_table`, or None with a note saying why the breakdown is missing."""
    if not rows:
        return None
    if world_kind(world) is None:
        notes.append(
            f"no per-profile breakdown for {world}: it is neither a roster id nor a stored "
            "world found from the current directory, so its students cannot be read"
        )
        return None
    try:
        table = profile_table(world, rows, policies, students)
    except PrefduelError as exc:  # locked roster, unreadable stored world
        notes.append(f"no per-profile breakdown for {world}: {exc}")
        return None
    if table is None:
        notes.append(f"no per-profile breakdown for {world}: its students carry no profile")
    return table
