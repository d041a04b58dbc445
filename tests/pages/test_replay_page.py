"""The "watch the policy learn" page: recomputing trajectories, embedded data, ``replay`` CLI."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import numpy as np
import pytest

from prefduel import __version__
from prefduel.cli.main import main
from prefduel.core.errors import ResultsFileError, SpecError
from prefduel.pages import (
    find_row,
    replay_data,
    replay_page,
    replay_trajectory,
    replay_widget,
)
from prefduel.runner import run_cell
from prefduel.runner.store import ResultsStore
from prefduel.stats.paired import centered_moving_mean
from prefduel.worlds import World, get_world


def embedded(fragment: str, element_id: str) -> dict:
    match = re.search(
        rf'<script type="application/json" id="{element_id}-data">(.*?)</script>', fragment, re.S
    )
    assert match, "no embedded data"
    return json.loads(match.group(1))


@pytest.fixture(scope="module")
def toy_run(tmp_path_factory) -> tuple[str, Path]:
    """A stored toy world and a results file with random and notransfer on seeds 0-1."""
    from pb_toys import save_world

    base = tmp_path_factory.mktemp("replay")
    world = save_world(base / "toy")
    results = base / "results.jsonl"
    args = ["run", "--worlds", world, "--seeds", "0-1", "--policies", "random,notransfer"]
    assert main([*args, "--out", str(results), "--jobs", "1", "--no-progress"]) == 0
    return world, results


def toy_world(path: str, seed: int) -> World:
    """The world as the sweep labels it (stored worlds take the requested seed)."""
    return dataclasses.replace(get_world(path, seed), roster=path, seed=seed)


def test_trajectory_reproduces_the_row_and_is_embedded(toy_run):
    path, results = toy_run
    world = toy_world(path, 1)
    row = find_row(ResultsStore(results, repair=False).rows(), path, 1, "notransfer")
    traj = replay_trajectory(world, row)
    fresh = run_cell(world, "notransfer", keep_trajectory=True)["trajectory"]
    np.testing.assert_array_equal(traj.first, fresh.first)
    np.testing.assert_array_equal(traj.outcome, fresh.outcome)

    fragment = replay_widget(world, row, traj, arrival=4, element_id="rp")
    data = embedded(fragment, "rp")
    assert (data["world"], data["seed"], data["policy"]) == (path, 1, "notransfer")
    assert data["start"] == 4 and data["N"] == world.N and data["S"] == world.S
    assert data["first"] == traj.first.tolist() and data["second"] == traj.second.tolist()
    winners = np.where(traj.outcome == 1, traj.first, traj.second)
    assert data["winner"] == winners.tolist()
    best = np.argsort(-world.U, axis=-1)[..., :2]
    assert data["best"] == best.tolist()
    assert data["excess"] == row["excess_per_arrival"]
    smooth = centered_moving_mean(np.array(row["excess_per_arrival"]), 25)
    np.testing.assert_allclose(data["ma"], smooth, atol=1e-6)
    np.testing.assert_allclose(
        np.array(data["rx"]).sum(axis=1), row["excess_per_arrival"], atol=1e-3
    )
    assert data == replay_data(world, row, traj, arrival=4)
    ids = re.findall(r'\bid="([^"]+)"', fragment)
    assert ids[0] == "rp" and all(i.startswith("rp-") for i in ids[1:])
    for external in ("<link", "src=", "https://", "@import", "url("):
        assert external not in fragment
    page = replay_page(world, row, traj)
    assert page.startswith("<!DOCTYPE html>") and 'id="replay-data"' in page


def test_a_row_that_is_not_reproduced_is_refused(toy_run):
    path, results = toy_run
    world = toy_world(path, 0)
    row = find_row(ResultsStore(results, repair=False).rows(), path, 0, "random")
    traj = replay_trajectory(world, row)
    old = {
        **row,
        "version": "0.0.1",
        "excess_per_arrival": [x + 0.5 for x in row["excess_per_arrival"]],
    }
    with pytest.raises(ResultsFileError, match=r"written by prefduel 0\.0\.1, this is"):
        replay_trajectory(world, old)
    with pytest.raises(ResultsFileError, match="does not reproduce the stored row"):
        replay_widget(world, old, traj)
    same = {**old, "version": __version__}
    with pytest.raises(ResultsFileError, match="world or the policy code has changed"):
        replay_page(world, same, traj)
    with pytest.raises(ResultsFileError, match="3 entries, the world has 12 arrivals"):
        replay_page(world, {**row, "excess_per_arrival": [1.0, 2.0, 3.0]}, traj)
    with pytest.raises(SpecError, match="arrival 12 is out of range"):
        replay_page(world, row, traj, arrival=12)


def test_find_row_explains_what_is_there(toy_run):
    path, results = toy_run
    rows = ResultsStore(results, repair=False).rows()
    with pytest.raises(ResultsFileError, match=r"policies with seed 0: notransfer, random"):
        find_row(rows, path, 0, "coduel")
    with pytest.raises(ResultsFileError, match=r"seeds with policy 'random': 0, 1"):
        find_row(rows, path, 7, "random")
    with pytest.raises(ResultsFileError, match=r"no row for world 'dev' .*worlds: "):
        find_row(rows, "dev", 0, "random")


# -- prefduel replay --------------------------------------------------------------------


def test_cli_replay_writes_the_page(toy_run, tmp_path: Path, capsys):
    path, results = toy_run
    out = tmp_path / "replay.html"
    argv = ["replay", str(results), "--world", path, "--seed", "1", "--policy", "notransfer"]
    assert main([*argv, "--arrival", "11", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert f"wrote {out}" in captured.out and "re-running notransfer" in captured.err
    data = embedded(out.read_text(encoding="utf-8"), "replay")
    assert (data["seed"], data["policy"], data["start"]) == (1, "notransfer", 11)


def test_cli_replay_refuses_a_row_it_cannot_reproduce(toy_run, tmp_path: Path, capsys):
    path, results = toy_run
    rows = ResultsStore(results, repair=False).rows()
    changed = tmp_path / "old.jsonl"
    with changed.open("w") as handle:
        other = next(r for r in rows if r["policy"] == "random" and r["seed"] == 1)
        numbers = {k: v for k, v in other.items() if k not in ("seed", "world", "policy")}
        for row in rows:
            if row["policy"] == "random" and row["seed"] == 0:
                # consistent on its own, but not what this version computes for seed 0
                row = {**row, **numbers, "version": "0.0.9"}
            handle.write(json.dumps(row) + "\n")
    out = tmp_path / "r.html"
    argv = ["replay", str(changed), "--world", path, "--policy", "random", "--out", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "prefduel: error: re-running policy 'random'" in err
    assert "written by prefduel 0.0.9" in err and "refusing" in err
    assert not out.exists()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--policy", "coduel"], "no row for world {path!r}, seed 0, policy 'coduel'"),
        (["--seed", "5", "--policy", "random"], "seeds with policy 'random': 0, 1"),
        (["--policy", "random", "--arrival", "12"], "arrival 12 is out of range"),
        (["--policy", "nosuchpolicy"], "nosuchpolicy"),
    ],
)
def test_cli_replay_errors(toy_run, extra, message, tmp_path: Path, capsys):
    path, results = toy_run
    out = tmp_path / "r.html"
    assert main(["replay", str(results), "--world", path, *extra, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("prefduel: error: ")
    assert message.format(path=path) in err
    assert not out.exists()


def test_cli_replay_missing_file_and_locked_roster(tmp_path: Path, capsys):
    missing = tmp_path / "nope.jsonl"
    assert main(["replay", str(missing), "--out", str(tmp_path / "r.html")]) == 2
    assert f"results file {missing} does not exist" in capsys.readouterr().err
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    argv = ["replay", str(empty), "--world", "test-profiles", "--out", str(tmp_path / "r.html")]
    assert main(argv) == 2
    assert "roster 'test-profiles' is a locked held-out roster" in capsys.readouterr().err
    assert main(["replay", str(empty), "--out", str(tmp_path / "r.html")]) == 2
    assert "no row for world 'dev' in the results file (it is empty)" in capsys.readouterr().err


@pytest.mark.parametrize("field", ["R", "G", "R_rand", "excess", "score", "excess_per_round"])
def test_a_row_with_an_edited_total_is_refused(tmp_path, field):
    """Replay checked only the per-arrival values, so an edited R/excess/score passed."""
    from pb_toys import make_world
    from prefduel.runner.trajectories import check_trajectory

    world = make_world(0)
    row = run_cell(world, "random", keep_trajectory=True)
    trajectory = row.pop("trajectory")
    check_trajectory(world, row, trajectory)  # the true row passes
    edited = dict(row)
    edited[field] = [v + 1.0 for v in row[field]] if field == "excess_per_round" else row[field] + 1
    with pytest.raises(ResultsFileError, match=f"does not reproduce the stored row.*{field}"):
        check_trajectory(world, edited, trajectory)


def test_a_user_policy_is_titled_by_its_short_name(toy_run):
    path, _ = toy_run
    world = toy_world(path, 0)
    example = Path(__file__).resolve().parents[2] / "examples" / "my_policy.py"
    spec = f"{example}:RaterWithWins:weight=3"
    row = run_cell(world, spec, keep_trajectory=True)
    traj = row.pop("trajectory")
    page = replay_page(world, row, traj)
    data = embedded(page, "replay")
    assert data["policy"] == row["policy"] == spec  # the spec stays the identity
    assert "<title>Watch rater-with-wins:weight=3 learn" in page
    heading = re.search(r'<h2 class="replay-title"[^>]*>(.*?)</h2>', page, re.S).group(1)
    assert heading.startswith("rater-with-wins:weight=3 on ")
    assert spec in page.split("</header>")[0]  # the spec is on the page, under the heading
