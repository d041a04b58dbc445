"""Stopping a run: SIGTERM behaves like Ctrl-C, exits fast with one clean line, and worker
processes never outlive their coordinator (issue 15, items 3 and 5)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

SLOW = textwrap.dedent(
    """
    import os, time
    from pathlib import Path

    class Slow:
        def reset(self, rng, context):
            self.rng, self.k = rng, context["K"]
            if context["N"] == 12:  # the toy world, not the pre-run check (6 students)
                Path(os.environ["PIDS"], str(os.getpid())).touch()
        def start_student(self): pass
        def select(self, Phi):
            time.sleep(0.02)
            i, j = self.rng.choice(self.k, size=2, replace=False)
            return int(i), int(j)
        def update(self, outcome): pass
        def end_student(self): pass
    """
)


def _default_sigint() -> None:
    """Give the run Ctrl-C's default handling, as in a terminal: a shell starts background
    jobs with SIGINT ignored, and a process that inherits that (pytest launched with ``&``)
    would ignore the test's Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start(toy_world: str, tmp_path: Path) -> tuple[subprocess.Popen, Path, Path]:
    (tmp_path / "slow.py").write_text(SLOW)
    pids = tmp_path / "pids"
    pids.mkdir()
    out = tmp_path / "r.jsonl"
    cmd = [
        sys.executable, "-m", "prefduel.cli.main", "run", "--worlds", toy_world,
        "--seeds", "0-7", "--policies", f"{tmp_path / 'slow.py'}:Slow", "--jobs", "2",
        "--out", str(out), "--no-progress",
    ]  # fmt: skip
    env = dict(os.environ, PIDS=str(pids), PYTHONFAULTHANDLER="1")  # SIGABRT dumps stacks
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True,
        preexec_fn=_default_sigint,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while len(list(pids.iterdir())) < 2 and time.monotonic() < deadline:  # both workers busy
        time.sleep(0.05)
    return proc, pids, out


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead for our purposes
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return True


def _workers(pids: Path, coordinator: int) -> set[int]:
    return {int(p.name) for p in pids.iterdir()} - {coordinator}


def _wait_gone(pids: set[int], seconds: float) -> set[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.05)
    return {p for p in pids if _alive(p)}


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_sigterm_and_ctrl_c_stop_fast_with_one_line(toy_world, tmp_path, sig):
    proc, pids, _ = _start(toy_world, tmp_path)
    workers = _workers(pids, proc.pid)
    assert workers, "the workers never started"
    start = time.monotonic()
    proc.send_signal(sig)
    try:
        _, err = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:  # hung: show where every thread of it is
        proc.send_signal(signal.SIGABRT)
        _, err = proc.communicate(timeout=20)
        pytest.fail(f"the run did not stop within 20 s of the signal; its stderr:\n{err}")
    assert proc.returncode == 130
    assert time.monotonic() - start < 4
    assert "Traceback" not in err
    assert "prefduel: interrupted; finished rows are kept in" in err
    assert not _wait_gone(workers, 3), "worker processes outlived the run"


def test_workers_die_with_a_killed_coordinator(toy_world, tmp_path):
    proc, pids, _ = _start(toy_world, tmp_path)
    workers = _workers(pids, proc.pid)
    assert workers
    proc.kill()
    proc.communicate(timeout=20)
    assert not _wait_gone(workers, 5), "worker processes outlived a killed coordinator"


def test_a_kill_loses_only_the_cells_in_flight(toy_world, tmp_path):
    """Each cell's row is stored as it finishes, not when its (world, seed) is done (issue 15,
    item 4): a kill while the slow policy runs keeps the fast policy's rows of that world."""
    (tmp_path / "slow.py").write_text(SLOW)
    pids = tmp_path / "pids"
    pids.mkdir()
    out = tmp_path / "r.jsonl"
    cmd = [
        sys.executable, "-m", "prefduel.cli.main", "run", "--worlds", toy_world, "--seeds", "0",
        "--policies", f"random,notransfer,{tmp_path / 'slow.py'}:Slow", "--jobs", "1",
        "--out", str(out), "--no-progress",
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, env=dict(os.environ, PIDS=str(pids)), stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not list(pids.iterdir()) and time.monotonic() < deadline:  # the slow cell started
        time.sleep(0.05)
    proc.kill()
    proc.communicate(timeout=20)
    stored = [json.loads(line)["policy"] for line in out.read_text().splitlines()]
    assert {"random", "notransfer"} <= set(stored)
