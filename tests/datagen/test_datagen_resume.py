"""Kill datagen mid-stage, re-run: every call completes exactly once, none is lost, and the
world is identical to an uninterrupted run's."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pb_datagen_helpers import (
    InterruptOnCall,
    cache_rows,
    expected_calls,
    ok_per_key,
    tiny_config,
)

from prefduel.datagen import ScriptedWorld, generate
from prefduel.llm import LLMClient, ResponseCache, ScriptedBackend


class InterruptingBackend(InterruptOnCall, ScriptedBackend):
    """A scripted backend that raises KeyboardInterrupt (Ctrl-C) on its k-th call."""

    def __init__(self, handlers, k: int) -> None:
        super().__init__(handlers)
        self.k = k


def test_interrupt_mid_judge_stage_then_resume(tmp_path):
    reference = generate(tiny_config(tmp_path / "ref"), progress=False)
    config = tiny_config(tmp_path / "run")
    total = sum(expected_calls(config).values())
    k = expected_calls(config)["questions"] + expected_calls(config)["answers"] + 7 + 300
    backend = InterruptingBackend(ScriptedWorld(config).handlers(), k)
    client = LLMClient(
        backend, cache=config.llm.cache, call_log=config.llm.call_log, max_connections=8
    )
    with pytest.raises(KeyboardInterrupt), client:
        generate(config, client=client, progress=False)
    done = cache_rows(config.llm.cache)
    assert 0 < done < total and not (tmp_path / "run" / "world").exists()

    resumed = generate(config, progress=False)
    assert resumed.complete
    assert sum(s.sent for s in resumed.stages) == total - done  # nothing answered twice
    assert sum(s.cached for s in resumed.stages) == done
    assert cache_rows(config.llm.cache) == total  # nothing lost
    counts = ok_per_key(config.llm.call_log)
    assert len(counts) == total and set(counts.values()) == {1}  # each call answered once
    assert resumed.world.digest() == reference.world.digest()


BATCH = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from pb_datagen_helpers import tiny_config
from prefduel.datagen import generate
config = tiny_config(Path(sys.argv[2]), scripted={"latency": 0.002})
generate(config, progress=False)
"""


def test_sigkill_mid_run_then_resume(tmp_path):
    config = tiny_config(tmp_path)
    total = sum(expected_calls(config).values())
    before_judge = total - expected_calls(config)["judge"]
    here = str(Path(__file__).parent)
    proc = subprocess.Popen([sys.executable, "-c", BATCH, here, str(tmp_path)])
    deadline = time.monotonic() + 60
    try:
        while True:
            assert proc.poll() is None, "the run ended before it could be killed"
            assert time.monotonic() < deadline, "the run made no progress"
            if cache_rows(config.llm.cache) > before_judge:
                break
            time.sleep(0.01)
    finally:
        os.kill(proc.pid, signal.SIGKILL)  # no cleanup: a real crash
        proc.wait()
    with ResponseCache(config.llm.cache) as cache:
        done = len(cache)
    assert before_judge < done < total

    resumed = generate(tiny_config(tmp_path, scripted={"latency": 0.002}), progress=False)
    assert resumed.complete and resumed.stage("questions").sent == 0
    assert cache_rows(config.llm.cache) == total
    counts = ok_per_key(config.llm.call_log)
    # an answer is committed to the cache in the step it arrives in, before its log line: no
    # call answered before the kill is answered again (replies still in flight were never
    # received, so never logged); the kill may fall between one answer's commit and its line
    assert set(counts.values()) == {1}
    assert total - 1 <= len(counts) <= total
    assert (
        resumed.world.digest()
        == generate(tiny_config(tmp_path / "ref"), progress=False).world.digest()
    )
