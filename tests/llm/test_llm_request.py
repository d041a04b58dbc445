"""Requests: frozen, hashable, canonical JSON and a stable SHA-256 key."""

from __future__ import annotations

import dataclasses
import json
import pickle
import subprocess
import sys

import numpy as np
import pytest

from prefduel.llm import LLMCallError, LLMRequest, LLMResponse, Message, Params, RequestError


def _judge(**changes):
    base = {
        "model": "gpt-4o-mini",
        "user": "Which is better, A or B?",
        "system": "You are Ana.",
        "role": "judge",
        "sample": 2,
        "seed": 7,
    }
    params = changes.pop("params", {"temperature": 0.7, "max_tokens": 4})
    base.update(changes)
    return LLMRequest.chat(base.pop("model"), base.pop("user"), **base, **params)


GOLDEN_CANONICAL = (
    '{"format":"prefduel/llm-request/1","messages":[["system","You are Ana."],'
    '["user","Which is better, A or B?"]],"model":"gpt-4o-mini","params":{"max_tokens":4,'
    '"temperature":0.7},"role":"judge","sample":2,"seed":7}'
)
GOLDEN_KEY = "19660ea5a79427cbf2078113dd70be360b837bc79b4d5956f77581c33b119063"


def test_canonical_form_and_key_are_pinned():
    """A change of the canonical form would orphan every cache: it must be deliberate."""
    request = _judge()
    assert request.canonical == GOLDEN_CANONICAL
    assert request.key == GOLDEN_KEY
    assert len(request.key) == 64


def test_key_is_the_same_in_another_process():
    code = (
        "from prefduel.llm import LLMRequest\n"
        "r = LLMRequest.chat('gpt-4o-mini', 'Which is better, A or B?', system='You are Ana.', "
        "role='judge', sample=2, seed=7, max_tokens=4, temperature=0.7)\n"
        "print(r.key)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "123", "PATH": ""},
    )
    assert out.stdout.strip() == GOLDEN_KEY


@pytest.mark.parametrize(
    "change",
    [
        {"sample": 3},
        {"role": "rater"},
        {"seed": 8},
        {"seed": None},
        {"model": "gpt-4o"},
        {"user": "Which is better, B or A?"},
        {"system": "You are Ben."},
        {"system": None},
        {"params": {"temperature": 0.7, "max_tokens": 5}},
        {"params": {"temperature": 0.7}},
        {"params": {"temperature": 0.7, "max_tokens": 4, "top_p": 0.9}},
    ],
)
def test_everything_that_changes_the_answer_changes_the_key(change):
    assert _judge(**change).key != GOLDEN_KEY


def test_repeated_samples_are_distinct_requests():
    requests = {_judge(sample=s) for s in range(5)}
    assert len(requests) == 5
    assert len({r.key for r in requests}) == 5


def test_equal_settings_hash_equal():
    a = _judge(params={"temperature": 1.0, "max_tokens": 4.0, "stop": ["\n", "."]})
    b = _judge(params={"stop": ("\n", "."), "max_tokens": 4, "temperature": 1})
    c = _judge(
        params={"temperature": np.float64(1.0), "max_tokens": np.int64(4), "stop": ["\n", "."]}
    )
    assert a == b == c
    assert hash(a) == hash(b) == hash(c)
    assert a.key == b.key == c.key
    assert {a: 1}[b] == 1
    assert a.params["stop"] == ("\n", ".")


def test_nested_params_are_frozen_and_sent_as_json():
    request = _judge(params={"response_format": {"type": "json_object"}, "logit_bias": {"50": 5}})
    assert isinstance(request.params["response_format"], Params)
    assert request.params.to_json() == {
        "logit_bias": {"50": 5},
        "response_format": {"type": "json_object"},
    }
    hash(request)


def test_requests_and_params_are_immutable():
    request = _judge()
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.sample = 4  # type: ignore[misc]
    with pytest.raises(AttributeError):
        request.params._items = ()  # type: ignore[misc]
    with pytest.raises(TypeError):
        request.params["temperature"] = 0.1  # type: ignore[index]


def test_messages_from_pairs_and_lists():
    a = LLMRequest("m", (("system", "s"), ("user", "u")))
    b = LLMRequest("m", [Message("system", "s"), ["user", "u"]])  # type: ignore[list-item]
    assert a == b and a.messages == (Message("system", "s"), Message("user", "u"))
    assert isinstance(a.messages, tuple) and all(isinstance(m, Message) for m in a.messages)


def test_unicode_is_kept_exactly():
    a = LLMRequest.chat("m", "caf\u00e9")  # NFC
    b = LLMRequest.chat("m", "cafe\u0301")  # NFD: different bytes sent, different key
    assert "café" in a.canonical and a.key != b.key


def test_round_trips_through_json_and_pickle():
    request = _judge(params={"temperature": 0.5, "stop": ["x"], "response_format": {"type": "t"}})
    again = LLMRequest.from_json(json.loads(request.canonical))
    assert again == request and again.key == request.key
    assert pickle.loads(pickle.dumps(request)) == request


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"model": ""}, "model"),
        ({"messages": ()}, "at least one message"),
        ({"messages": "hello"}, "messages"),
        ({"messages": (("user",),)}, "messages[0]"),
        ({"messages": (("", "x"),)}, "messages[0]"),
        ({"params": {"temperature": float("nan")}}, "params.temperature"),
        ({"params": {"n": 2}}, "params.n"),
        ({"params": {"seed": 1}}, "'seed'"),
        ({"params": {"stream": True}}, "'stream'"),
        ({"params": {"x": object()}}, "params.x"),
        ({"params": {1: 2}}, "keys must be strings"),
        ({"sample": -1}, "sample"),
        ({"sample": True}, "sample"),
        ({"seed": 1.5}, "seed"),
        ({"role": ""}, "role"),
    ],
)
def test_malformed_requests_name_the_field(kwargs, fragment):
    args = {"model": "m", "messages": (("user", "hi"),), **kwargs}
    with pytest.raises(RequestError, match=None) as info:
        LLMRequest(args.pop("model"), args.pop("messages"), **args)
    assert fragment in str(info.value)


def test_failed_response_unwrap_names_the_call():
    request = _judge()
    failed = LLMResponse(request=request, text=None, ok=False, attempts=3, error="HTTP 503")
    with pytest.raises(LLMCallError, match=r"judge call to gpt-4o-mini .*sample 2.*HTTP 503"):
        failed.unwrap()
    assert LLMResponse(request=request, text="A").unwrap() == "A"
