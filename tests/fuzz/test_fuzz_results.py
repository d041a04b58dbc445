"""Results files with generated damage, fed to ``stats``, ``run`` (resume) and ``report``.

Every case must end in a named error or in the result the undamaged rows give: never a
traceback, never exit 0 with a number no run produced.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from fuzz_harness import (
    Case,
    failures,
    jsonl_field_damage,
    long_line,
    run_cases,
    structural_damage,
)

from pb_toys import save_world
from prefduel.cli.main import main

RUN = ["--worlds", "toy", "--seeds", "0-1", "--policies", "random", "--jobs", "1",
       "--no-progress"]


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> tuple[dict[str, bytes], bytes]:
    """A toy world's files, and the results of one small run on it."""
    folder = tmp_path_factory.mktemp("fuzz-results")
    save_world(folder / "toy")
    cwd = Path.cwd()
    try:
        import os

        os.chdir(folder)
        assert main([*["run"], *RUN, "--out", "r.jsonl"]) == 0
    finally:
        os.chdir(cwd)
    files = {f"toy/{p.name}": p.read_bytes() for p in (folder / "toy").iterdir()}
    return files, (folder / "r.jsonl").read_bytes()


def _damaged(results: bytes) -> list[tuple[str, bytes]]:
    rows = [json.loads(line) for line in results.splitlines()]
    damage = [*jsonl_field_damage(rows, 0), *jsonl_field_damage(rows, len(rows) - 1)]
    return [*damage, *structural_damage(results, seed=0), ("long-line", long_line(results))]


#: Damage after which the file still holds exactly the original rows (for ``stats``; a run
#: refuses to resume from rows of another version, which is right too).
SAME = ("crlf", "duplicated-line", "wall_time=zero", "wall_time=huge", "wall_time=huge-int",
        "wall_time=tiny",
        "version=text", "version=empty-text", "version=missing", "version=null",
        "line1.seed=zero")
#: Damage that may legitimately make another, self-consistent row (a renamed world or
#: policy, a changed byte inside a name); the row checks still guard the numbers.
ANY = ("world=text", "policy=text", "flipped-bytes")


def _expectation(label: str, data: bytes, lines: int) -> tuple[tuple[int, ...], bytes | None]:
    """Allowed exit statuses, and for exit 0 the undamaged file that must give the same table.

    A last line that is not valid JSON is taken for an interrupted write and left out (a
    crash can leave any bytes there), so the rows before it must give the table.
    """
    field = label.split(".", 1)[-1]
    if label.startswith("cut-at-"):
        return (0, 1, 2), data[: data.rfind(b"\n") + 1]
    if label.startswith(f"line{lines}.") and field.endswith("=nested"):
        return (0,), b"".join(data.splitlines(keepends=True)[:-1])
    if field in SAME or label in SAME:
        return (0,), None
    if field in ANY or label in ANY:
        return (0, 1, 2), b"any"
    if label in ("empty", "blank-lines"):
        return (1, 2), None
    return (2,), None


def _table(stdout: str) -> str:
    return "\n".join(line for line in stdout.splitlines() if not line.startswith("prefduel"))


def test_stats_and_run_on_damaged_results_files(base):
    world, results = base
    originals = {"full": results}
    commands = {"stats": ["stats", "r.jsonl"], "run": ["run", *RUN, "--out", "r.jsonl"]}
    reference = [
        Case(f"ref:{cmd}:{name}", argv, {"r.jsonl": data}, allowed=(0,))
        for cmd, argv in commands.items()
        for name, data in originals.items()
    ]
    done = run_cases(reference, world)
    assert not failures(reference, done)
    expected = {
        "stats": {_table(done["ref:stats:full"]["stdout"])},
        "run": {_table(done["ref:run:full"]["stdout"])},  # a resumed run recomputes the cell
    }

    def oracle(command: str):
        def check(result):
            if _table(result["stdout"]) not in expected[command]:
                return "exit 0 with a table that the undamaged rows do not give:\n" + result[
                    "stdout"
                ][-1500:]
            return None

        return check

    damage = _damaged(results)
    lines = len(results.splitlines())
    prefixes = [
        Case(f"ref:stats:{label}", commands["stats"], {"r.jsonl": prefix},
             allowed=(0, 1, 2))
        for label, data in damage
        if (prefix := _expectation(label, data, lines)[1]) not in (None, b"any")
    ]
    done.update(run_cases(prefixes, world))
    rng = np.random.default_rng(0)
    sample = set(rng.choice(len(damage), size=min(120, len(damage)), replace=False).tolist())
    cases = []
    for i, (label, data) in enumerate(damage):
        allowed, prefix = _expectation(label, data, lines)
        check = None if prefix == b"any" else oracle("stats")
        if prefix not in (None, b"any"):
            table = _table(done[f"ref:stats:{label}"]["stdout"])
            check = (lambda t: lambda r: None if _table(r["stdout"]) == t else
                     "exit 0 with a table that the complete lines do not give")(table)
        cases.append(Case(f"stats:{label}", commands["stats"], {"r.jsonl": data},
                          allowed=allowed, oracle=check))
        if i in sample:
            run_allowed = tuple(sorted({*allowed, 0} - {1})) if prefix else allowed
            if "version=" in label:  # rows of another version are never resumed from
                run_allowed = (0, 2)
            run_check = None if prefix == b"any" else oracle("run")
            cases.append(Case(f"run:{label}", commands["run"], {"r.jsonl": data},
                              allowed=run_allowed, oracle=run_check))
    results = run_cases(cases, world)
    problems = failures(cases, results)
    summary = "\n".join(p.splitlines()[0][:160] for p in problems)
    assert not problems, (
        f"{len(problems)} of {len(cases)} cases failed:\n{summary}\n\n" + "\n\n".join(problems[:5])
    )
