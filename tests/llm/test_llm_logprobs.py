"""Choice probabilities from logprobs: the test server's logprobs agree with its sampling, the
reader finds the label position (structured answers too), and cache hits keep the logprobs."""

from __future__ import annotations

import math

import pytest
from pb_llm_helpers import FAKE_KEY, KEY_ENV, RecordingSleep

from prefduel.llm import (
    LLMClient,
    LLMRequest,
    TokenLogprob,
    choice_probabilities,
    logprob_params,
)
from prefduel.llm.openai_backend import OpenAIBackend
from prefduel.llm.structured import AnswerFormat, structure
from prefduel.llm.testserver import OpenAITestServer

P_A = 0.7


def _distribution(body):
    return {"A": P_A, "B": 1 - P_A} if "judge" in str(body) else None


def _request(sample=0, **params):
    return LLMRequest.chat(
        "gpt-4o-mini", "judge: A or B?", role="judge", sample=sample, max_tokens=4, **params
    )


def _client(server, tmp_path, name="c.sqlite"):
    backend = OpenAIBackend(server.base_url, api_key_env=KEY_ENV, timeout=5.0)
    return LLMClient(backend, cache=tmp_path / name, sleep=RecordingSleep())


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)


def test_the_reader_finds_the_label_and_renormalises():
    lp = math.log
    tokens = (
        TokenLogprob('{"', 0.0, (('{"', 0.0),)),
        TokenLogprob("pick", 0.0, (("pick", 0.0),)),
        TokenLogprob('":"', 0.0, (('":"', 0.0),)),
        TokenLogprob("B", lp(0.3), (("A", lp(0.45)), ("B", lp(0.3)), (" a", lp(0.15)))),
    )
    probs = choice_probabilities(tokens, ("A", "B"))
    assert probs == pytest.approx({"A": 0.6 / 0.9, "B": 0.3 / 0.9})
    assert choice_probabilities(None, ("A", "B")) is None
    assert choice_probabilities((TokenLogprob("Hmm", 0.0, (("Hmm", 0.0),)),), "AB") is None
    # only the drawn token known (no top_logprobs): nothing to renormalise
    assert choice_probabilities((TokenLogprob("A", lp(0.7)),), ("A", "B")) is None
    with pytest.raises(ValueError, match=r"1\.\.20"):
        logprob_params(0)


def test_one_logprob_call_gives_the_probability_that_sampling_estimates(tmp_path):
    with OpenAITestServer(distribution=_distribution) as server:
        with _client(server, tmp_path) as client:
            (answer,) = client.run([_request(**logprob_params(5))])
            samples = client.run([_request(sample=s) for s in range(400)])
            again = client.run([_request(**logprob_params(5))])[0]
    probs = choice_probabilities(answer.logprobs, ("A", "B"))
    assert probs == pytest.approx({"A": P_A, "B": 1 - P_A})
    share = sum(r.text == "A" for r in samples) / len(samples)
    assert abs(share - P_A) < 4 * math.sqrt(P_A * (1 - P_A) / len(samples))
    assert again.cached and again.logprobs == answer.logprobs  # kept by the cache


def test_a_structured_pick_carries_its_logprobs_at_the_label(tmp_path):
    pick = AnswerFormat.choice("pick", ("A", "B"))
    request = structure(_request(**logprob_params(3)), pick, "auto")
    with OpenAITestServer(distribution=_distribution) as server:
        with _client(server, tmp_path) as client:
            (answer,) = client.run([request])
    assert pick.unwrap(answer.text)[1]
    assert choice_probabilities(answer.logprobs, "AB") == pytest.approx({"A": P_A, "B": 1 - P_A})


def test_an_endpoint_without_logprobs_returns_none(tmp_path):
    with OpenAITestServer(distribution=_distribution, logprobs=False) as server:
        with _client(server, tmp_path) as client:
            (answer,) = client.run([_request(**logprob_params(5))])
    assert answer.ok and answer.logprobs is None
    assert choice_probabilities(answer.logprobs, "AB") is None
