"""How the sweep cuts its grid into units: a world built once per sweep on a grid with enough
(world, seed) pairs to keep the workers busy, one unit per cell on a small grid, same rows."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from pb_toys import fake_reference_rows, strip_wall
from prefduel.core.errors import PolicyError
from prefduel.runner.references import REFERENCES
from prefduel.runner.store import ResultsStore
from prefduel.runner.sweep import Unit, plan_units, sweep
from prefduel.worlds.spec import WorldSpec

POLICIES = ["random", "notransfer"]


def _cells(units: list[Unit]) -> list[tuple]:
    """Every cell the units run: policy cells, and ``ref`` for a pair's reference rows."""
    out = [(u.world, u.seed, spec) for u in units for spec in u.policies]
    return out + [(u.world, u.seed, "ref") for u in units if u.references]


def _plan(store: ResultsStore, world: str, seeds: list[int], workers: int) -> list[Unit]:
    return plan_units(store, [world], seeds, POLICIES, workers=workers)


def test_a_small_grid_keeps_one_unit_per_cell(toy_world: str, tmp_path: Path):
    store = ResultsStore(tmp_path / "r.jsonl")
    units = _plan(store, toy_world, [0], workers=2)
    # one world, one seed: both workers still get cells
    assert [(u.policies, u.references) for u in units] == [
        (("random",), False),
        (("notransfer",), False),
        ((), True),
    ]
    # as many pairs as workers: still one unit per cell
    units = _plan(store, toy_world, [0, 1], workers=2)
    assert [len(u.policies) + u.references for u in units] == [1] * 6


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_many_pairs_get_one_unit_each_but_the_last_ones(toy_world: str, tmp_path: Path, workers):
    store = ResultsStore(tmp_path / "r.jsonl")
    seeds = list(range(7))
    units = _plan(store, toy_world, seeds, workers=workers)
    grouped = [u for u in units if len(u.policies) + u.references > 1]
    per_cell = [u for u in units if len(u.policies) + u.references == 1]
    if workers == 1:  # one worker builds each world once anyway: every row stored at once
        assert not grouped
    else:
        # a pair's cells in one unit, in grid order; the last `workers` pairs cut per cell so
        # every worker has work until the end
        assert [(u.seed, u.policies, u.references) for u in grouped] == [
            (s, tuple(POLICIES), True) for s in seeds[:-workers]
        ]
        assert {u.seed for u in per_cell} == set(seeds[-workers:])
    expected = [(toy_world, s, c) for s in seeds for c in [*POLICIES, "ref"]]
    assert sorted(_cells(units)) == sorted(expected)  # every cell exactly once
    assert len({u.sweep_id for u in units}) == 1


def test_a_resumed_grid_plans_only_the_missing_cells(toy_world: str, tmp_path: Path):
    out = tmp_path / "r.jsonl"
    seeds = list(range(6))
    sweep([toy_world], seeds, ["random"], out, progress=False, reference_fn=fake_reference_rows)
    with ResultsStore(out) as store:
        units = _plan(store, toy_world, seeds, workers=2)
    # the references and `random` are stored: only `notransfer` is left in each pair
    assert [u.policies for u in units] == [("notransfer",)] * 6
    assert not any(u.references for u in units)
    lines = out.read_text().splitlines()
    kept = [line for line in lines if json.loads(line)["seed"] != 5]  # seed 5 was lost
    out.write_text("\n".join(kept) + "\n")
    with ResultsStore(out) as store:
        units = _plan(store, toy_world, [*seeds, 6], workers=2)
    assert sorted(_cells(units)) == sorted(
        [(toy_world, s, "notransfer") for s in [*seeds, 6]]
        + [(toy_world, s, c) for s in (5, 6) for c in ("random", "ref")]
    )
    # seeds 0-4 lack one cell each (one unit); the last two pairs with work are cut per cell
    assert Counter(u.seed for u in units) == {0: 1, 1: 1, 2: 1, 3: 1, 4: 1, 5: 3, 6: 3}


def _count_builds(monkeypatch: pytest.MonkeyPatch, log: Path) -> None:
    """Log every world a (forked) worker builds to ``log``, one line per build."""
    make = WorldSpec.make

    def logged(self: WorldSpec, seed: int, **kwargs):
        with open(log, "a", encoding="utf-8") as handle:  # one short append per build
            handle.write(f"{self.label} {seed}\n")
        return make(self, seed, **kwargs)

    monkeypatch.setattr(WorldSpec, "make", logged)


def test_two_workers_build_each_world_once_and_write_the_same_rows(
    toy_world: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    seeds = list(range(6))
    one = sweep(
        [toy_world],
        seeds,
        POLICIES,
        tmp_path / "one.jsonl",
        progress=False,
        reference_fn=fake_reference_rows,
    )
    log = tmp_path / "builds.log"
    _count_builds(monkeypatch, log)
    two = sweep(
        [toy_world],
        seeds,
        POLICIES,
        tmp_path / "two.jsonl",
        jobs=2,
        progress=False,
        reference_fn=fake_reference_rows,
    )
    builds = Counter(int(line.split()[-1]) for line in log.read_text().splitlines())
    assert {s: builds[s] for s in seeds[:-2]} == {s: 1 for s in seeds[:-2]}
    assert all(1 <= builds[s] <= 2 for s in seeds[-2:])  # the last pairs: once per worker
    assert strip_wall(two) == strip_wall(one)
    keys = [(r["kind"], r["seed"], r["policy"]) for r in two]
    assert keys == [(r["kind"], r["seed"], r["policy"]) for r in one]  # grid order
    stored = [json.loads(line) for line in (tmp_path / "two.jsonl").read_text().splitlines()]
    assert strip_wall(stored) == strip_wall(one)
    assert len(stored) == len(seeds) * (len(POLICIES) + len(REFERENCES))


def test_the_bar_counts_cells_of_grouped_units(toy_world: str, tmp_path: Path, capsys):
    sweep(
        [toy_world],
        list(range(6)),
        POLICIES,
        tmp_path / "r.jsonl",
        jobs=2,
        reference_fn=fake_reference_rows,
    )
    err = capsys.readouterr().err
    counts = [int(n) for n in re.findall(r"(\d+)/12\b", err)]
    assert "cell" in err and counts[0] == 0 and counts[-1] == 12
    assert counts == sorted(counts)  # advances by the cells each unit finished, never past 12


def test_an_error_in_a_grouped_unit_names_the_cell_and_keeps_its_finished_rows(
    toy_world: str, user_policies: str, tmp_path: Path
):
    out, spec = tmp_path / "r.jsonl", f"{user_policies}:Raises"
    with pytest.raises(PolicyError, match=r"arrival 2, round 3: select\(\) raised") as info:
        sweep([toy_world], list(range(5)), ["random", spec], out, jobs=2, progress=False)
    message = str(info.value)
    assert f"policy {spec!r}" in message and f"world {toy_world!r}" in message
    failed_seed = int(re.search(r"seed (\d+)", message).group(1))
    assert failed_seed in (0, 1)  # the first units: each a whole pair
    keys = {(r["kind"], r["seed"], r["policy"]) for r in ResultsStore(out).rows()}
    assert ("policy", failed_seed, "random") in keys  # run before the failing cell, stored
    assert not any(policy == spec for _, _, policy in keys)
