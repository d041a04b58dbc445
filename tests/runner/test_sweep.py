"""The sweep: validation, resume, determinism across runs and processes, policy errors."""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from pb_toys import (
    BAD_ARRIVAL,
    BAD_CASES,
    BAD_ROUND,
    fake_reference_rows,
    save_world,
    strip_wall,
)
from prefduel.core.errors import (
    LockedRosterError,
    PolicyError,
    SpecError,
    UnknownIdError,
    WorldFormatError,
)
from prefduel.runner.references import REFERENCES
from prefduel.runner.store import ResultsFileWarning, ResultsStore
from prefduel.runner.sweep import sweep
from prefduel.worlds import world_label


def _keys(rows: list[dict]) -> list[tuple]:
    return [(r["kind"], r["world"], r["seed"], r["policy"]) for r in rows]


def _file_rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _expected_keys(world: str, seeds: list[int], policies: list[str]) -> set[tuple]:
    return {("policy", world, s, p) for s in seeds for p in policies} | {
        ("reference", world, s, r) for s in seeds for r in REFERENCES
    }


def test_grid_is_complete_and_second_run_recomputes_nothing(toy_world: str, tmp_path: Path):
    out = tmp_path / "results.jsonl"
    policies = ["random", "random"]  # duplicates collapse
    rows = sweep([toy_world], [0, 1], policies, out, progress=False)
    assert set(_keys(rows)) == _expected_keys(toy_world, [0, 1], ["random"])
    assert len(rows) == len(set(_keys(rows))) == 2 * (1 + len(REFERENCES))
    assert _keys(rows)[:2] == [
        ("policy", toy_world, 0, "random"),
        ("reference", toy_world, 0, REFERENCES[0]),
    ]
    before = out.read_bytes()
    again = sweep([toy_world], [0, 1], ["random"], out, progress=False)
    assert out.read_bytes() == before  # nothing recomputed or appended
    assert again == rows
    # seeds of a stored world vary the policy's random stream
    random_rows = [r for r in rows if r["policy"] == "random"]
    assert random_rows[0]["R"] != random_rows[1]["R"]


def test_same_command_twice_gives_identical_rows(toy_world: str, tmp_path: Path):
    first = sweep([toy_world], [0, 1], ["random"], tmp_path / "a.jsonl", progress=False)
    second = sweep([toy_world], [0, 1], ["random"], tmp_path / "b.jsonl", progress=False)
    assert strip_wall(first) == strip_wall(second)
    assert strip_wall(_file_rows(tmp_path / "a.jsonl")) == strip_wall(first)


def test_resume_after_simulated_kill(toy_world: str, tmp_path: Path):
    full_path, out = tmp_path / "full.jsonl", tmp_path / "partial.jsonl"
    full = sweep([toy_world], [0, 1, 2], ["random"], full_path, progress=False)
    lines = full_path.read_bytes().splitlines(keepends=True)
    kept = lines[:5]
    out.write_bytes(b"".join(kept) + lines[5][: len(lines[5]) // 2])  # killed mid-write
    old = {key: row for row in map(json.loads, kept) for key in _keys([row])}
    with pytest.warns(ResultsFileWarning, match="incomplete"):
        rows = sweep([toy_world], [0, 1, 2], ["random"], out, progress=False)
    stored = _file_rows(out)
    assert sorted(_keys(stored)) == sorted(set(_keys(stored)))  # each cell exactly once
    assert set(_keys(stored)) == _expected_keys(toy_world, [0, 1, 2], ["random"])
    assert strip_wall(rows) == strip_wall(full)
    for row in stored:  # finished cells were not recomputed: their rows are byte-identical
        key = (row["kind"], row["world"], row["seed"], row["policy"])
        if key in old:
            assert row == old[key]
            assert row["wall_time"] == old[key]["wall_time"]


def test_missing_reference_rows_are_completed(toy_world: str, tmp_path: Path):
    out = tmp_path / "results.jsonl"
    sweep([toy_world], [0], ["random"], out, progress=False, reference_fn=fake_reference_rows)
    lines = out.read_text().splitlines()
    out.write_text("\n".join(lines[:-2]) + "\n")  # lose two reference rows
    rows = sweep(
        [toy_world], [0], ["random"], out, progress=False, reference_fn=fake_reference_rows
    )
    assert len(out.read_text().splitlines()) == len(lines)
    assert strip_wall(rows) == strip_wall(_file_rows(out))
    ref = next(r for r in rows if r["kind"] == "reference")
    assert ref["world"] == toy_world and ref["seed"] == 0


def test_two_processes_give_the_same_rows(toy_world: str, tmp_path: Path):
    args = ([toy_world], [0, 1, 2], ["random"])
    one = sweep(
        *args, tmp_path / "one.jsonl", jobs=1, progress=False, reference_fn=fake_reference_rows
    )
    two = sweep(
        *args, tmp_path / "two.jsonl", jobs=2, progress=False, reference_fn=fake_reference_rows
    )
    assert strip_wall(one) == strip_wall(two)
    assert _keys(one) == _keys(two)  # returned in grid order whatever the completion order
    assert strip_wall(_file_rows(tmp_path / "two.jsonl")) == strip_wall(two)


def test_any_executor_can_run_the_units(toy_world: str, tmp_path: Path):
    with ThreadPoolExecutor(max_workers=2) as pool:
        rows = sweep(
            [toy_world], [0, 1], ["random"], tmp_path / "r.jsonl", progress=False, executor=pool
        )
        assert pool.submit(int, "3").result() == 3  # a passed executor is not shut down
    ref = sweep([toy_world], [0, 1], ["random"], tmp_path / "s.jsonl", progress=False)
    assert strip_wall(rows) == strip_wall(ref)


@pytest.mark.parametrize("cls", sorted(BAD_CASES))
def test_policy_error_names_the_culprit_and_keeps_finished_rows(
    cls: str, toy_world: str, user_policies: str, tmp_path: Path
):
    out = tmp_path / "results.jsonl"
    spec = f"{user_policies}:{cls}"
    with pytest.raises(PolicyError) as info:
        sweep([toy_world], [0, 1], ["random", spec], out, progress=False)
    message = str(info.value)
    for part in (
        f"policy {spec!r}",
        f"world {toy_world!r}",
        "seed 0",
        f"arrival {BAD_ARRIVAL}",
        f"round {BAD_ROUND}",
        BAD_CASES[cls],
    ):
        assert part in message, (part, message)
    keys = _keys(ResultsStore(out).rows())
    assert ("policy", toy_world, 0, "random") in keys
    assert not any(k[3] == spec for k in keys)


def test_policy_error_in_a_worker_process(toy_world: str, user_policies: str, tmp_path: Path):
    out = tmp_path / "results.jsonl"
    spec = f"{user_policies}:Raises"
    sweep([toy_world], [0, 1], ["random"], out, progress=False)  # finished earlier
    with pytest.raises(
        PolicyError, match=r"arrival 2, round 3: select\(\) raised RuntimeError"
    ) as info:
        sweep([toy_world], [0, 1, 2, 3], ["random", spec], out, jobs=2, progress=False)
    failed_seed = int(re.search(r"seed (\d+)", str(info.value)).group(1))
    keys = set(_keys(ResultsStore(out).rows()))
    assert _expected_keys(toy_world, [0, 1], ["random"]) <= keys
    # the failing unit's rows finished before the error were stored too
    assert ("policy", toy_world, failed_seed, "random") in keys
    assert not any(k[3] == spec for k in keys)


@pytest.mark.parametrize(
    ("worlds", "policies", "error", "match"),
    [
        (["nope"], ["random"], UnknownIdError, r"unknown roster 'nope'\. Known rosters: dev, "),
        (["dev"], ["nope"], UnknownIdError, r"unknown policy 'nope'\. Known polic\w+: .*random"),
        (["dev"], ["random:x"], SpecError, r"setting 'x' in 'random:x' is not of the form"),
        (["dev"], ["random:bank=3"], SpecError, r"policy 'random:bank=3': unknown setting 'bank'"),
        (["dev"], ["missing.py:Cls"], SpecError, r"file missing\.py does not exist"),
        (["test-topics"], ["random"], LockedRosterError, r"'test-topics'.*--allow-test"),
        (["no/such/world"], ["random"], WorldFormatError, r"no/such/world: missing file"),
    ],
)
def test_invalid_grid_fails_before_any_work(worlds, policies, error, match, tmp_path: Path):
    out = tmp_path / "results.jsonl"
    with pytest.raises(error, match=match):
        sweep(worlds, [0], policies, out, progress=False)
    assert not out.exists()


def test_invalid_seeds_and_jobs(toy_world: str, tmp_path: Path):
    with pytest.raises(SpecError, match="non-negative"):
        sweep([toy_world], [-1], ["random"], tmp_path / "r.jsonl", progress=False)
    with pytest.raises(SpecError, match="non-empty list"):
        sweep([toy_world], [], ["random"], tmp_path / "r.jsonl", progress=False)
    with pytest.raises(SpecError, match="jobs"):
        sweep([toy_world], [0], ["random"], tmp_path / "r.jsonl", jobs=0, progress=False)


def test_progress_bar_goes_to_stderr(toy_world: str, tmp_path: Path, capsys):
    sweep([toy_world], [0, 1], ["random"], tmp_path / "a.jsonl", progress=True)
    captured = capsys.readouterr()
    assert "2/2" in captured.err and "cell" in captured.err and captured.out == ""
    sweep([toy_world], [0, 1], ["random"], tmp_path / "b.jsonl", progress=False)
    assert capsys.readouterr().err == ""


def test_world_labels(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    save_world(tmp_path / "dev")  # a stored world in a directory named like a roster
    save_world(tmp_path / "w")
    assert world_label("dev") == "dev"
    assert world_label("./dev/") == "./dev"
    assert world_label("w/world.json") == world_label("./w/") == "w"
    rows = sweep(["./dev", "w/"], [0], ["random"], "r.jsonl", progress=False)
    assert {r["world"] for r in rows} == {"./dev", "w"}
