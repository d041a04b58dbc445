"""Recovering a stored cell's pairs and clicks by re-running it (`prefduel.runner.trajectories`)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from pb_toys import fake_reference_rows, save_world
from prefduel import __version__
from prefduel.core.errors import ResultsFileError, SpecError, UnknownIdError
from prefduel.policies.loading import resolve_spec
from prefduel.runner import run_cell
from prefduel.runner.sweep import sweep
from prefduel.runner.trajectories import (
    CellClicks,
    CellNotFoundError,
    ReplayMismatchError,
    StoredCell,
    check_trajectory,
    find_cell,
    find_row,
    load_rows,
    replay_cell,
    replay_trajectory,
)
from prefduel.worlds import parse_world


@pytest.fixture(scope="module")
def toy_run(tmp_path_factory) -> tuple[str, Path]:
    """A stored toy world (12 arrivals x 24 rounds x 6 personas) and a results file with
    random and notransfer on seeds 0-1."""
    base = tmp_path_factory.mktemp("trajectories")
    world = save_world(base / "toy")
    results = base / "results.jsonl"
    sweep(
        [world],
        [0, 1],
        ["random", "notransfer"],
        results,
        progress=False,
        reference_fn=fake_reference_rows,
    )
    return world, results


@pytest.mark.parametrize(("seed", "policy"), [(0, "random"), (1, "notransfer")])
def test_replay_reproduces_the_cell_that_was_run(toy_run, seed, policy):
    path, results = toy_run
    cell = find_cell(results, path, seed, policy)
    assert isinstance(cell, StoredCell)
    assert (cell.world.name, cell.world.seed, cell.policy) == (path, seed, policy)
    assert cell.row["kind"] == "policy" and cell.row["policy"] == policy
    arrivals: list[int] = []
    clicks = replay_cell(cell, on_arrival=arrivals.append)
    assert isinstance(clicks, CellClicks)
    assert clicks.world is cell.world and clicks.policy == policy
    assert arrivals == list(range(cell.world.N))
    fresh = run_cell(parse_world(path).make(seed), policy, keep_trajectory=True)["trajectory"]
    for name in ("first", "second", "outcome"):
        got, want = getattr(clicks.trajectory, name), getattr(fresh, name)
        assert got.shape == (12, 24)
        np.testing.assert_array_equal(got, want)


def test_any_spelling_of_world_and_policy_finds_the_cell(toy_run):
    path, results = toy_run
    rows = load_rows(results)
    by_rows = find_cell(rows, os.path.join(path, "world.json"), 1, "notransfer")
    by_spec = find_cell(results, path + os.sep, 1, resolve_spec("notransfer"))
    assert by_rows.world.name == by_spec.world.name == path
    assert by_rows.row == by_spec.row == find_row(rows, path, 1, "notransfer")


def test_missing_cells_are_named_errors_that_say_what_is_there(toy_run):
    path, results = toy_run
    rows = load_rows(results)
    with pytest.raises(CellNotFoundError, match=r"policies with seed 0: notransfer, random"):
        find_cell(rows, path, 0, "coduel")
    with pytest.raises(CellNotFoundError, match=r"seeds with policy 'random': 0, 1"):
        find_row(rows, path, 7, "random")
    with pytest.raises(CellNotFoundError, match=r"no row for world 'dev' .*worlds: "):
        find_row(rows, "dev", 0, "random")
    with pytest.raises(CellNotFoundError, match=r"\(it is empty\)"):
        find_row([], path, 0, "random")
    assert issubclass(CellNotFoundError, ResultsFileError)


def test_bad_inputs_fail_before_any_rerun(toy_run, tmp_path):
    path, results = toy_run
    missing = tmp_path / "nosuch.jsonl"
    with pytest.raises(ResultsFileError, match=f"results file {missing} does not exist"):
        find_cell(missing, path, 0, "random")
    with pytest.raises(UnknownIdError):
        find_cell(results, path, 0, "no-such-policy")
    with pytest.raises(SpecError, match="not of the form key=value"):
        find_cell(results, path, 0, "random:bogus")


def test_a_row_that_is_not_reproduced_is_refused(toy_run):
    path, results = toy_run
    cell = find_cell(results, path, 0, "random")
    good = replay_cell(cell).trajectory
    shifted = [x + 0.5 for x in cell.row["excess_per_arrival"]]
    old = StoredCell(
        cell.world, cell.spec, {**cell.row, "version": "0.0.1", "excess_per_arrival": shifted}
    )
    with pytest.raises(ReplayMismatchError, match=r"excess_per_arrival of arrival 0: stored"):
        replay_cell(old)
    with pytest.raises(ReplayMismatchError, match=r"written by prefduel 0\.0\.1, this is"):
        replay_trajectory(old.world, old.row)
    same = {**old.row, "version": __version__}
    with pytest.raises(ReplayMismatchError, match="world or the policy code has changed"):
        check_trajectory(cell.world, same, good)
    with pytest.raises(ReplayMismatchError, match="3 entries, the world has 12 arrivals"):
        check_trajectory(cell.world, {**cell.row, "excess_per_arrival": [1.0, 2.0, 3.0]}, good)
    with pytest.raises(ReplayMismatchError, match=r"score: stored"):
        check_trajectory(cell.world, {**cell.row, "score": cell.row["score"] + 1}, good)
    assert issubclass(ReplayMismatchError, ResultsFileError)
    check_trajectory(cell.world, cell.row, good)  # the true row passes
