"""The scripted backend: a pure, deterministic function of (role, messages, sample index)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from pb_llm_helpers import make_requests

from prefduel.llm import (
    DEFAULT_HANDLERS,
    Backend,
    Completer,
    LLMCallError,
    LLMClient,
    LLMRequest,
    ScriptedBackend,
    request_rng,
    run_sync,
)


def _answers(backend, requests):
    return [backend.respond(r) for r in requests]


def test_same_request_same_answer_and_samples_differ():
    backend = ScriptedBackend()
    requests = make_requests(20, samples=8)
    first = _answers(backend, requests)
    assert first == _answers(ScriptedBackend(), requests)
    assert set(first) == {"A", "B"}
    # across the 8 samples of one prompt the picks are not all equal for most prompts
    per_prompt = [set(first[i * 8 : (i + 1) * 8]) for i in range(20)]
    assert sum(len(s) == 2 for s in per_prompt) >= 15


def test_answers_depend_only_on_role_messages_and_sample():
    backend = ScriptedBackend()
    base = LLMRequest.chat("model-a", "q", role="judge", sample=1, temperature=0.1)
    rng_draws = request_rng(base).random(4)
    for other in (
        LLMRequest.chat("model-b", "q", role="judge", sample=1, temperature=0.1),
        LLMRequest.chat("model-a", "q", role="judge", sample=1, temperature=1.5, seed=3),
    ):
        assert other.key != base.key
        assert backend.respond(other) == backend.respond(base)
        assert np.array_equal(request_rng(other).random(4), rng_draws)
    for other in (
        LLMRequest.chat("model-a", "q", role="rater", sample=1),
        LLMRequest.chat("model-a", "q2", role="judge", sample=1),
        LLMRequest.chat("model-a", "q", role="judge", sample=2),
    ):
        assert not np.array_equal(request_rng(other).random(4), rng_draws)
    assert not np.array_equal(request_rng(base, "sub").random(4), rng_draws)


def test_answers_are_the_same_in_another_process():
    requests = make_requests(10, samples=3)
    code = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "from pb_llm_helpers import make_requests\n"
        "from prefduel.llm import ScriptedBackend\n"
        "b = ScriptedBackend()\n"
        "print('|'.join(b.respond(r) for r in make_requests(10, samples=3)))"
    )
    import pb_llm_helpers

    here = str(pb_llm_helpers.__file__).rsplit("/", 1)[0]
    out = subprocess.run(
        [sys.executable, "-c", code, here], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "|".join(ScriptedBackend().respond(r) for r in requests)


def test_default_handlers_for_every_role():
    backend = ScriptedBackend()
    system = "You are Socrates.\nAsk questions back."
    answers = {
        role: backend.respond(LLMRequest.chat("m", "photosynthesis", system=system, role=role))
        for role in (*DEFAULT_HANDLERS, "other")
    }
    assert "photosynthesis" in answers["question"] and answers["question"].endswith("#0)")
    assert answers["answer"].startswith("[You are Socrates.]")
    assert 1 <= int(answers["rater"]) <= 10
    assert answers["judge"] in ("A", "B")
    assert answers["other"].startswith("[scripted other #")


def test_registered_handlers_replace_defaults():
    def judge(request: LLMRequest) -> str:
        # e.g. a TutorSim-following judge: P(first wins) from the prompt; here a fixed 0.9
        return "A" if request_rng(request).random() < 0.9 else "B"

    backend = ScriptedBackend(handlers={"judge": judge})
    picks = _answers(backend, make_requests(50, samples=4))
    assert 0.8 < picks.count("A") / len(picks) < 0.97
    assert backend.respond(make_requests(1, role="rater")[0]).isdigit()  # default kept
    bare = ScriptedBackend(handlers={"judge": judge}, use_defaults=False, fail_unknown_roles=True)
    with pytest.raises(
        LLMCallError, match="no handler for role 'rater'; known roles: \\['judge'\\]"
    ):
        bare.respond(make_requests(1, role="rater")[0])


def test_handler_errors_are_recorded_failures_not_fatal():
    def broken(request):
        if request.messages[-1].content == "q 1":
            raise KeyError("persona")
        return "fine"

    client = LLMClient(ScriptedBackend(handlers={"judge": broken, "rater": lambda r: 7}))
    responses = client.run(make_requests(3) + make_requests(1, role="rater"))
    assert [r.ok for r in responses] == [True, False, True, False]
    assert "'judge' handler broken raised KeyError" in responses[1].error
    assert "returned int, expected str" in responses[3].error
    assert responses[1].attempts == 1  # not retried


def test_protocols_and_latency():
    backend = ScriptedBackend(latency=0.001)
    assert isinstance(backend, Backend) and isinstance(backend, Completer)
    assert isinstance(LLMClient(backend), Completer)
    response = run_sync(backend.complete(make_requests(1)[0]))
    assert response.ok and response.finish_reason == "stop" and response.usage.total_tokens > 0
