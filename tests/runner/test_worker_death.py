"""A policy that ends its process: the run names it instead of dying without a word."""

from __future__ import annotations

import textwrap

from prefduel.cli.main import main
from prefduel.runner.store import ResultsStore

POLICIES = textwrap.dedent(
    """
    import os
    import signal

    from prefduel.policies.base import Policy


    class Exits(Policy):
        name = "exits"

        def select(self, Phi):
            os._exit(3)


    class KilledLate(Policy):
        '''Killed by SIGKILL (as the out-of-memory killer does) at the 10th arrival, which the
        check's 6-student problem never reaches.'''

        name = "killed-late"

        def reset(self, rng, context):
            super().reset(rng, context)
            self.arrivals = 0

        def start_student(self):
            self.arrivals += 1
            if self.arrivals == 10:
                os.kill(os.getpid(), signal.SIGKILL)

        def select(self, Phi):
            return 0, 1
    """
)


def _run(toy_world, tmp_path, policy, jobs):
    path = tmp_path / "mine.py"
    path.write_text(POLICIES)
    out = tmp_path / "r.jsonl"
    argv = ["run", "--worlds", toy_world, "--seeds", "0-1", "--policies", f"random,{path}:{policy}",
            "--jobs", str(jobs), "--no-progress", "--out", str(out)]
    return main(argv), out


def test_a_policy_calling_os_exit_is_named_before_the_run(toy_world, tmp_path, capsys):
    code, out = _run(toy_world, tmp_path, "Exits", jobs=1)
    err = capsys.readouterr().err
    assert code == 2
    assert "mine.py:Exits' ended the process (exit status 3" in err
    assert not out.exists() or out.read_text() == ""  # refused before any work


def test_a_worker_killed_from_outside_names_its_cell_and_keeps_the_rows(toy_world, tmp_path,
                                                                         capsys):
    code, out = _run(toy_world, tmp_path, "KilledLate", jobs=2)
    err = capsys.readouterr().err
    assert code == 2
    assert "a worker process died while running world" in err
    assert "mine.py:KilledLate" in err and "out-of-memory killer" in err
    assert "re-running the same command resumes" in err
    assert "BrokenProcessPool" not in err
    kept = ResultsStore(out).rows()  # what finished is stored whole
    assert all(row["policy"] != f"{tmp_path / 'mine.py'}:KilledLate" for row in kept)
