"""Sweeps on a Dask cluster: same rows as a local run, resume, a worker killed mid-run, the CLI
``--scheduler`` path, Ctrl-C, and clear errors (unreachable scheduler, no workers, unsuitable
workers, ``distributed`` missing).

One real ``LocalCluster`` (2 worker processes, 1 thread each) serves the whole module.
"""

from __future__ import annotations

import builtins
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from concurrent.futures import as_completed
from pathlib import Path
from types import SimpleNamespace

import pytest

distributed = pytest.importorskip("distributed")

from pb_toys import fake_reference_rows, make_world, strip_wall  # noqa: E402
from prefduel.cli.main import main  # noqa: E402
from prefduel.core.errors import PolicyError  # noqa: E402
from prefduel.runner import distributed as dask_module  # noqa: E402
from prefduel.runner import sweep as sweep_module  # noqa: E402
from prefduel.runner.distributed import (  # noqa: E402
    INSTALL_HINT,
    ClusterError,
    DaskExecutor,
    check_workers,
    dask_executor,
    worker_needs,
)
from prefduel.runner.references import REFERENCES  # noqa: E402
from prefduel.runner.store import ResultsStore  # noqa: E402
from prefduel.runner.sweep import sweep  # noqa: E402

N_WORKERS = 2

#: A policy that sleeps in every select and leaves a marker file (named by its process id) when
#: a run starts, so a test can kill the worker process while it runs a unit.
SLOW_POLICY = """
import os
import time
from pathlib import Path

from prefduel.policies.base import Policy

MARKERS = Path({markers!r})


class Slow(Policy):
    name = "slow"

    def __init__(self, delay=0.005):
        self.delay = float(delay)

    def reset(self, rng, context):
        super().reset(rng, context)
        # the coordinator first checks a user policy on check_policy's synthetic problem
        # (24 rounds); the grid's units run on the 12-round world
        what = "check" if context["S"] == 24 else "unit"
        (MARKERS / f"{{os.getpid()}}-{{what}}-{{time.monotonic_ns()}}").touch()

    def select(self, Phi):
        time.sleep(self.delay)
        a, b = self.rng.choice(self.K, size=2, replace=False)
        return int(a), int(b)
"""


@pytest.fixture(scope="module")
def cluster():
    """A local cluster of worker processes (like ``dask worker --nthreads 1``) for the module."""
    with distributed.LocalCluster(
        n_workers=N_WORKERS,
        processes=True,
        threads_per_worker=1,
        dashboard_address=":0",
        silence_logs=logging.CRITICAL,  # the killed worker's restart is expected
    ) as local:
        yield local


@pytest.fixture
def address(cluster) -> str:
    """The scheduler address, with all workers up (a previous test may have killed one)."""
    with distributed.Client(cluster, set_as_default=False) as client:
        client.wait_for_workers(N_WORKERS, timeout=30)
    return cluster.scheduler_address


@pytest.fixture(scope="module")
def small_world(tmp_path_factory) -> str:
    """A stored world of 6 arrivals x 12 rounds (absolute path: workers read it too)."""
    return str(make_world(0, n=6, s=12).save(tmp_path_factory.mktemp("dask") / "small"))


def _keys(rows: list[dict]) -> list[tuple]:
    return [(r["kind"], r["world"], r["seed"], r["policy"]) for r in rows]


def _file_rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# -- (a), (b): rows and resume ---------------------------------------------------------------


def test_dask_rows_equal_local_rows_and_resume(
    address: str, small_world: str, user_policies: str, tmp_path: Path, capsys
):
    grid = ([small_world], [0, 1, 2], ["random", f"{user_policies}:Fixed:a=1,b=3"])
    local = sweep(*grid, tmp_path / "local.jsonl", progress=False, reference_fn=fake_reference_rows)
    out = tmp_path / "dask.jsonl"
    with dask_executor(address, timeout=10, worlds=grid[0], policies=grid[2]) as executor:
        assert isinstance(executor, DaskExecutor)
        rows = sweep(*grid, out, executor=executor, reference_fn=fake_reference_rows)
        assert "prefduel" in capsys.readouterr().err  # the progress bar, as locally
        assert strip_wall(rows) == strip_wall(local)
        assert _keys(rows) == _keys(local)  # grid order, whatever the completion order
        assert strip_wall(_file_rows(out)) == strip_wall(rows)
        assert len(rows) == 3 * (2 + len(REFERENCES))

        # (b) resume: nothing new to run, nothing appended
        before = out.read_bytes()
        again = sweep(
            *grid, out, progress=False, executor=executor, reference_fn=fake_reference_rows
        )
        assert out.read_bytes() == before and again == rows

        # an interrupted file: the missing cells run again, once
        lines = before.splitlines(keepends=True)
        out.write_bytes(b"".join(lines[:4]))
        resumed = sweep(
            *grid, out, progress=False, executor=executor, reference_fn=fake_reference_rows
        )
    assert strip_wall(resumed) == strip_wall(local)
    keys = _keys(_file_rows(out))
    assert len(keys) == len(set(keys)) == len(rows)
    assert not executor._pending  # every result released on the cluster


# -- (c): a worker killed mid-run ------------------------------------------------------------


def test_killed_worker_loses_and_duplicates_nothing(
    cluster, address: str, small_world: str, tmp_path: Path
):
    markers = tmp_path / "markers"
    markers.mkdir()
    policy_file = tmp_path / "slow_policy.py"
    policy_file.write_text(SLOW_POLICY.format(markers=str(markers)))
    grid = ([small_world], [0, 1, 2, 3], [f"{policy_file}:Slow", "random"])
    out = tmp_path / "dask.jsonl"
    with distributed.Client(cluster, set_as_default=False) as client:
        pids = client.run(os.getpid)
    outcome: dict = {}

    def run() -> None:
        try:
            with dask_executor(address, timeout=10, worlds=grid[0], policies=grid[2]) as ex:
                outcome["rows"] = sweep(
                    *grid, out, progress=False, executor=ex, reference_fn=fake_reference_rows
                )
        except BaseException as exc:  # reported below
            outcome["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    victim = None
    deadline = time.monotonic() + 20
    while victim is None and time.monotonic() < deadline:
        started = {int(p.name.split("-")[0]) for p in markers.glob("*-unit-*")}
        victim = next((pid for pid in pids.values() if pid in started), None)
        time.sleep(0.005)
    assert victim is not None, "no worker started a unit"
    os.kill(victim, signal.SIGKILL)  # mid-unit: a unit lasts 72 x 5 ms
    thread.join(60)
    assert not thread.is_alive()
    assert "error" not in outcome, outcome.get("error")

    # the policy was checked on this machine (in a child of this process), not on the cluster
    checks = {int(p.name.split("-")[0]) for p in markers.glob("*-check-*")}
    assert len(checks) == 1 and not checks & set(pids.values())
    runs = Counter(int(p.name.split("-")[0]) for p in markers.glob("*-unit-*"))
    assert os.getpid() not in runs  # every unit ran on the cluster ...
    assert runs[victim] >= 1 and sum(runs.values()) >= 4 + 1  # ... the killed one twice
    with distributed.Client(cluster, set_as_default=False) as client:
        assert victim not in client.run(os.getpid).values()
    file_keys = Counter(_keys(_file_rows(out)))
    assert set(file_keys.values()) == {1}  # no cell twice ...
    assert len(file_keys) == 4 * (2 + len(REFERENCES))  # ... and none lost
    undisturbed = sweep(
        *grid, tmp_path / "local.jsonl", progress=False, reference_fn=fake_reference_rows
    )
    assert strip_wall(outcome["rows"]) == strip_wall(undisturbed)
    assert strip_wall(_file_rows(out)) == strip_wall(undisturbed)


# -- errors, cancellation, Ctrl-C ------------------------------------------------------------


def test_policy_error_on_the_cluster_keeps_finished_rows(
    address: str, small_world: str, user_policies: str, tmp_path: Path
):
    out = tmp_path / "r.jsonl"
    spec = f"{user_policies}:Raises"
    with dask_executor(address, timeout=10) as executor:
        sweep([small_world], [0], ["random"], out, progress=False, executor=executor)
        with pytest.raises(PolicyError, match="boom in misbehave"):
            sweep([small_world], [0], ["random", spec], out, progress=False, executor=executor)
        future = executor.submit(int, "not a number")  # other exceptions come back as they are
        with pytest.raises(ValueError, match="invalid literal"):
            future.result(timeout=10)
    store = ResultsStore(out)
    assert ("policy", small_world, 0, "random") in store
    assert not any(row["policy"] == spec for row in store)  # nothing of the failed cell


def _blocker(flag: str):
    """A task that waits (at most 10 s) until ``flag`` exists; pickled by value (a closure)."""

    def block() -> None:
        deadline = time.monotonic() + 10
        while not os.path.exists(flag) and time.monotonic() < deadline:
            time.sleep(0.01)

    return block


def test_cancel_wakes_waiters_and_lost_tasks_fail_clearly(address: str, tmp_path: Path):
    flag = tmp_path / "release"
    block = _blocker(str(flag))
    try:
        with dask_executor(address, timeout=10) as executor:
            blocked = [executor.submit(block) for _ in range(N_WORKERS + 1)]
            start = time.monotonic()
            assert all(f.cancel() for f in blocked)
            assert len(list(as_completed(blocked, timeout=5))) == len(blocked)
            assert all(f.cancelled() for f in blocked)
            assert time.monotonic() - start < 5
            assert not executor._pending

            lost = executor.submit(block)
            executor.client.cancel(list(executor._pending))  # behind prefduel's back
            with pytest.raises(ClusterError, match="was lost on the Dask cluster"):
                lost.result(timeout=10)
            assert not lost.cancelled()  # an error: sweep cannot mistake it for its own cancel
            flag.touch()
            assert executor.submit(sum, [1, 2]).result(timeout=10) == 3
    finally:
        flag.touch()  # free the workers
    with pytest.raises(RuntimeError, match="after shutdown"):
        executor.submit(sum, [1])


def test_workers_dying_again_and_again_is_a_cluster_error():
    executor = DaskExecutor(client=None, address="tcp://h:8786")
    killed = distributed.KilledWorker("run_unit-1", SimpleNamespace(address="tcp://w:1"), 3)
    error = executor._translate(killed, "error", "unit world 'w' seed 0")
    assert isinstance(error, ClusterError) and error.__cause__ is killed
    assert "unit world 'w' seed 0: Dask workers of tcp://h:8786 died" in str(error)
    assert "re-running resumes" in str(error)
    own = ValueError("a bug in a policy")
    assert executor._translate(own, "error", "unit") is own


def test_ctrl_c_cancels_the_rest_and_resume_completes(
    address: str, small_world: str, tmp_path: Path, monkeypatch
):
    out = tmp_path / "r.jsonl"
    grid = ([small_world], [0, 1, 2, 3], ["random"])
    record = sweep_module._record

    def interrupted(store, bar, result):
        record(store, bar, result)
        raise KeyboardInterrupt

    monkeypatch.setattr(sweep_module, "_record", interrupted)
    with dask_executor(address, timeout=10) as executor:
        with pytest.raises(KeyboardInterrupt):
            sweep(*grid, out, progress=False, executor=executor, reference_fn=fake_reference_rows)
        assert not executor._pending  # the other units are cancelled on the cluster
    # the one finished unit is kept: a policy cell or the references of a (world, seed)
    assert len(_file_rows(out)) in (1, len(REFERENCES))
    monkeypatch.setattr(sweep_module, "_record", record)
    with dask_executor(address, timeout=10) as executor:
        rows = sweep(
            *grid, out, progress=False, executor=executor, reference_fn=fake_reference_rows
        )
    keys = _keys(_file_rows(out))
    assert len(keys) == len(set(keys)) == len(rows) == 4 * (1 + len(REFERENCES))


# -- (d): the command line -------------------------------------------------------------------


def test_cli_scheduler_matches_local_run(address: str, small_world: str, tmp_path: Path, capsys):
    def args(out: Path, *extra: str) -> list[str]:
        grid = ["--worlds", small_world, "--seeds", "0-1", "--policies", "random"]
        return ["run", *grid, "--out", str(out), "--no-progress", *extra]

    local, remote = tmp_path / "local.jsonl", tmp_path / "dask.jsonl"
    assert main(args(local, "--jobs", "1")) == 0
    table = capsys.readouterr().out
    assert main(args(remote, "--scheduler", address, "--jobs", "3")) == 0  # --jobs ignored
    assert capsys.readouterr().out == table
    assert strip_wall(_file_rows(remote)) == strip_wall(_file_rows(local))

    md, csv = tmp_path / "board.md", tmp_path / "board.csv"
    board = ["leaderboard", "--worlds", small_world, "--seeds", "0-1", "--policies", "random"]
    before = remote.read_bytes()
    files = ["--results", str(remote), "--md", str(md), "--csv", str(csv)]
    assert main([*board, *files, "--scheduler", address, "--no-progress"]) == 0
    assert remote.read_bytes() == before  # resumed: nothing to run
    assert "random" in md.read_text()


# -- (e): clear errors -----------------------------------------------------------------------


def test_unreachable_scheduler(tmp_path: Path, small_world: str, capsys):
    address = f"tcp://127.0.0.1:{_free_port()}"
    start = time.monotonic()
    with pytest.raises(ClusterError, match=f"cannot reach the Dask scheduler at {address}"):
        with dask_executor(address, timeout=0.5):
            pass
    assert time.monotonic() - start < 10
    with pytest.raises(ClusterError, match="invalid Dask scheduler address 'HOST'"):
        with dask_executor("HOST", timeout=0.5):
            pass

    import dask.config

    with dask.config.set({"distributed.comm.timeouts.connect": "0.5s"}):
        argv = ["run", "--worlds", small_world, "--seeds", "0", "--policies", "random"]
        out = tmp_path / "r.jsonl"
        assert main([*argv, "--out", str(out), "--scheduler", address]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"prefduel: error: cannot reach the Dask scheduler at {address}")
    assert "Traceback" not in err and not out.exists()


def test_scheduler_without_workers():
    with distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=":0") as empty:
        address = empty.scheduler_address
        with pytest.raises(ClusterError, match=f"{address} has no workers") as info:
            with dask_executor(address, timeout=0.5):
                pass
    assert f"dask worker {address} --nworkers N --nthreads 1" in str(info.value)


def test_unsuitable_workers_are_named(address: str, tmp_path: Path):
    with distributed.Client(address, set_as_default=False) as client:
        assert check_workers(client, address) == N_WORKERS
        with pytest.raises(ClusterError, match="cannot import no_such_package_xyz") as info:
            check_workers(client, address, package="no_such_package_xyz")
        assert INSTALL_HINT in str(info.value)
        with pytest.raises(ClusterError, match=r"runs prefduel .*, this client 0\.0\.0"):
            check_workers(client, address, version="0.0.0")
        with pytest.raises(ClusterError, match="cannot read /no/such/world") as info:
            check_workers(client, address, paths=["/no/such/world"], modules=["no_mod_xyz"])
        assert "cannot import no_mod_xyz" in str(info.value)
        assert str(info.value).count("worker tcp://") == 2 * N_WORKERS


def test_worker_needs(small_world: str, user_policies: str):
    paths, modules = worker_needs(
        ["dev", small_world, small_world + "/world.json", "missing/world"],
        ["random", f"{user_policies}:Fixed:a=1", "pb_toys:Fixed", "nope.py:X"],
    )
    assert paths == [small_world, user_policies]
    assert modules == ["pb_toys"]


def test_missing_distributed(monkeypatch, small_world: str, tmp_path: Path, capsys):
    real_import = builtins.__import__

    def no_distributed(name, globals=None, *args, **kwargs):
        # only prefduel's import fails: the running cluster's threads keep theirs
        if name == "distributed" and (globals or {}).get("__name__") == dask_module.__name__:
            raise ImportError("No module named 'distributed'")
        return real_import(name, globals, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_distributed)
    with pytest.raises(ClusterError, match="optional dependency 'distributed'") as info:
        with dask_executor("tcp://127.0.0.1:8786"):
            pass
    assert INSTALL_HINT in str(info.value)
    argv = ["run", "--worlds", small_world, "--seeds", "0", "--policies", "random"]
    assert main([*argv, "--out", str(tmp_path / "r.jsonl"), "--scheduler", "tcp://x:1"]) == 2
    err = capsys.readouterr().err
    assert INSTALL_HINT in err and "Traceback" not in err


def test_a_cluster_without_workers_fails_the_run_instead_of_waiting_forever(
    small_world: str, tmp_path: Path
):
    """Issue 15: a Dask cluster with no workers left waited forever; say so after a timeout."""
    out = tmp_path / "r.jsonl"
    with distributed.LocalCluster(
        n_workers=1,
        processes=True,
        threads_per_worker=1,
        dashboard_address=":0",
        silence_logs=logging.CRITICAL,
    ) as lonely:
        policy = tmp_path / "gate.py"
        policy.write_text(
            "import time\nfrom prefduel.policies import Policy\n"
            "class Gate(Policy):\n"
            "    def select(self, Phi):\n"
            "        time.sleep(0.05)\n"
            "        return 0, 1\n"
        )
        grid = ([small_world], list(range(40)), [f"{policy}:Gate"])
        started = time.monotonic()
        with dask_executor(lonely.scheduler_address, timeout=3) as executor:
            lonely.scale(0)  # the last worker leaves while units wait
            with pytest.raises(ClusterError, match=r"no Dask workers .* for 3 s"):
                sweep(*grid, out, progress=False, executor=executor)
        assert time.monotonic() - started < 30


def test_a_lost_scheduler_is_one_named_line(small_world: str, tmp_path: Path):
    """Issue 15: scheduler loss printed Dask's own tracebacks before prefduel's message."""
    policy = tmp_path / "slow.py"
    policy.write_text(
        "import time\nfrom prefduel.policies import Policy\n"
        "class Slow(Policy):\n"
        "    def select(self, Phi):\n"
        "        time.sleep(0.02)\n"
        "        return 0, 1\n"
    )
    with distributed.LocalCluster(
        n_workers=1,
        processes=True,
        threads_per_worker=1,
        dashboard_address=":0",
        silence_logs=logging.CRITICAL,
    ) as doomed:
        cmd = [
            sys.executable, "-m", "prefduel.cli.main", "run", "--worlds", small_world,
            "--seeds", "0-99", "--policies", f"{policy}:Slow",
            "--scheduler", doomed.scheduler_address, "--out", str(tmp_path / "r.jsonl"),
            "--no-progress",
        ]  # fmt: skip
        proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        out = tmp_path / "r.jsonl"
        while time.monotonic() < deadline and not (out.exists() and out.read_text()):
            time.sleep(0.1)  # the run is under way
    _, err = proc.communicate(timeout=90)  # the cluster (and its scheduler) is gone
    assert proc.returncode == 2
    assert "Traceback" not in err
    assert "prefduel: error:" in err and "rows stored so far are kept" in err
