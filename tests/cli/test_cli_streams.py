"""The command under unusual streams: a C locale, a closed stdout, a reader that goes away."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from prefduel.cli.main import main

PREFDUEL = [sys.executable, "-m", "prefduel.cli.main"]


@pytest.fixture
def results(toy_world, tmp_path):
    out = tmp_path / "r.jsonl"
    argv = ["run", "--worlds", toy_world, "--seeds", "0-1", "--policies", "random", "--jobs",
            "1", "--no-progress", "--out", str(out)]
    assert main(argv) == 0
    return out


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "LANG"))}
    env.pop("PYTHONIOENCODING", None)
    env.pop("PYTHONUTF8", None)
    return {**env, **extra}


@pytest.mark.parametrize("utf8_mode", ["0", None])
def test_a_c_locale_still_prints_the_table(results, utf8_mode):
    """With Python's UTF-8 mode off, a C locale gives ASCII streams, which cannot carry ±."""
    extra = {"LC_ALL": "C"} | ({"PYTHONUTF8": utf8_mode} if utf8_mode else {})
    done = subprocess.run([*PREFDUEL, "stats", str(results)], capture_output=True,
                          env=_env(**extra), timeout=120)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert "score (mean ± s.e.)".encode() in done.stdout
    assert b"Traceback" not in done.stderr


def test_a_closed_stdout_is_a_named_error(results):
    done = subprocess.run([*PREFDUEL, "stats", str(results)], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, env=_env(), timeout=120,
                          preexec_fn=lambda: os.close(1))
    assert done.returncode == 2
    assert b"prefduel: error: standard output is closed" in done.stderr


def test_a_reader_that_goes_away_ends_the_command_quietly(results):
    proc = subprocess.Popen([*PREFDUEL, "stats", str(results), "--curves"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env())
    proc.stdout.close()  # like `| head` exiting before the command writes
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 141
    assert b"Traceback" not in err and b"Exception ignored" not in err
