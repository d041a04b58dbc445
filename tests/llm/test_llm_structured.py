"""Structured outputs through the stage engine and the real HTTP path: the schema honoured,
ignored (free text) and refused (asked again one rung down), per call, with the path recorded."""

from __future__ import annotations

import asyncio

import pytest
from pb_llm_helpers import FAKE_KEY, KEY_ENV, RecordingSleep

from prefduel.llm import AnswerFormat, LLMClient, LLMRequest, ResponseCache, structure
from prefduel.llm.openai_backend import OpenAIBackend
from prefduel.llm.stages import ClientSender, Stage, StageEngine
from prefduel.llm.structured import RESPONSE_FORMAT, is_structured, rejected, unstructured
from prefduel.llm.testserver import OpenAITestServer

PICK = AnswerFormat.choice("pick", ("A", "B"))
PROSE = AnswerFormat.text("answer")


def _pick(item, text):
    letter = text.strip().strip(".")
    return letter if letter in ("A", "B") else None


def _judge_request(item, previous):
    return LLMRequest.chat(
        "gpt-4o-mini", f"judge {item}: A or B?", role="judge", sample=len(previous)
    )


def _answer(body):
    return "B." if "judge 1" in str(body) else "I prefer A."


def _run(server, stage, items, tmp_path):
    backend = OpenAIBackend(server.base_url, api_key_env=KEY_ENV, timeout=5.0)
    client = LLMClient(backend, cache=tmp_path / "c.sqlite", sleep=RecordingSleep())
    engine = StageEngine(ClientSender(client))

    async def main():
        try:
            return await engine.run(stage, items)
        finally:
            await backend.aclose()

    outcomes = asyncio.run(main())
    client.close()
    return engine, outcomes


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)


def test_response_formats_of_each_mode():
    assert PICK.response_format("off") is None
    auto = PICK.response_format("auto")
    assert auto["type"] == "json_schema" and auto["json_schema"]["name"] == "pick"
    assert auto["json_schema"]["schema"]["properties"]["pick"]["enum"] == ["A", "B"]
    assert PICK.response_format("json_schema") == auto
    assert PICK.response_format("choice")["json_schema"]["schema"] == {
        "type": "string",
        "enum": ["A", "B"],
    }
    assert PROSE.response_format("auto") is None  # prose is left alone by auto
    assert PROSE.response_format("json_schema")["json_schema"]["schema"]["required"] == ["answer"]
    with pytest.raises(ValueError, match="'choice' needs an answer with choices"):
        PROSE.response_format("choice")
    with pytest.raises(ValueError, match="expected one of"):
        PICK.response_format("always")
    with pytest.raises(ValueError, match="choice"):
        Stage("prose", _judge_request, answer=PROSE, structured="choice")


def test_the_cache_key_changes_only_when_a_schema_is_sent():
    plain = _judge_request(0, ())
    assert structure(plain, PICK, "off") is plain
    assert structure(plain, PROSE, "auto") is plain
    asked = structure(plain, PICK, "auto")
    assert asked.key != plain.key and is_structured(asked)
    assert unstructured(asked) == plain and unstructured(asked).key == plain.key


def test_unwrap_reads_the_schema_and_passes_free_text_through():
    assert PICK.unwrap('{"pick": "B"}') == ("B", True)
    assert PICK.unwrap('"A"') == ("A", True)
    assert PICK.unwrap('```json\n{"pick": "A"}\n```') == ("A", True)
    assert PICK.unwrap('{"pick": "C"}') == ('{"pick": "C"}', False)
    assert PICK.unwrap("A") == ("A", False)
    scores = AnswerFormat.scores("scores", ["x", "y"], minimum=1, maximum=10)
    assert scores.unwrap('{"x": 3, "y": 4}') == ('{"x": 3, "y": 4}', True)
    assert scores.unwrap('{"x": 3}')[1] is False


@pytest.mark.parametrize("mode", ["auto", "json_schema", "choice"])
def test_an_honouring_server_answers_in_the_schema(tmp_path, mode):
    stage = Stage("judge", _judge_request, _pick, answer=PICK, structured=mode)
    with OpenAITestServer(answer=_answer) as server:
        engine, outcomes = _run(server, stage, [0, 1], tmp_path)
        bodies = [r.body for r in server.requests]
    assert [o.value for o in outcomes] == ["A", "B"]
    assert [o.path for o in outcomes] == ["schema", "schema"]
    assert all(b[RESPONSE_FORMAT]["type"] == "json_schema" for b in bodies)
    report = engine.reports["judge"]
    assert (report.structured, report.structure_ignored, report.structure_rejected) == (2, 0, 0)
    assert report.malformed == 0 and report.calls == 2


def test_a_server_that_ignores_the_schema_is_read_as_free_text(tmp_path):
    stage = Stage("judge", _judge_request, _pick, answer=PICK, structured="auto", tries=2)
    with OpenAITestServer(answer=_answer, structured="ignore") as server:
        engine, outcomes = _run(server, stage, [0, 1], tmp_path)
    # "I prefer A." is not a bare letter: malformed, asked again (and again free text)
    assert [o.path for o in outcomes] == ["ignored", "ignored"]
    assert outcomes[1].value == "B" and outcomes[0].value is not None
    report = engine.reports["judge"]
    assert report.structured == 0 and report.structure_ignored == 3 and report.malformed == 2


def test_a_server_that_refuses_the_schema_is_asked_again_without_it(tmp_path):
    stage = Stage("judge", _judge_request, _pick, answer=PICK, structured="auto")
    with OpenAITestServer(answer=lambda body: "B", structured="reject") as server:
        engine, outcomes = _run(server, stage, [0, 1, 2], tmp_path)
        received = server.requests
    assert [o.value for o in outcomes] == ["B", "B", "B"]
    assert [o.path for o in outcomes] == ["rejected"] * 3
    # the first item probes the ladder alone (json_schema, then json_object, both refused);
    # the others start where it ended, without response_format
    formats = [r.body.get(RESPONSE_FORMAT, {}).get("type") for r in received]
    assert formats == ["json_schema", "json_object", None, None, None]
    report = engine.reports["judge"]
    assert report.structure_rejected == 2 and report.failed == 0 and engine.failures == []
    assert report.calls == 5 and report.sent == 3
    # the fallback is the request of mode "off": an unstructured run reuses its answers
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        assert set(cache.keys()) == {_judge_request(i, ()).key for i in range(3)}


def test_llama_cpp_pythons_refusal_is_not_retried_and_its_older_format_is_used(tmp_path):
    """llama-cpp-python's server answers a json_schema format with HTTP 500 (a validation
    error naming response_format) and honours {"type": "json_object", "schema": ...}."""
    stage = Stage("judge", _judge_request, _pick, answer=PICK, structured="auto")
    with OpenAITestServer(answer=_answer, structured="json_object") as server:
        engine, outcomes = _run(server, stage, [0, 1, 2], tmp_path)
        received = server.requests
    assert [o.value for o in outcomes] == ["A", "B", "A"]
    assert [o.path for o in outcomes] == ["schema"] * 3
    formats = [r.body[RESPONSE_FORMAT]["type"] for r in received]
    assert formats == ["json_schema", "json_object", "json_object", "json_object"]
    assert all(r.attempt == 0 for r in received)  # the 500 was not retried as transient
    report = engine.reports["judge"]
    assert (report.structured, report.structure_rejected, report.failed) == (3, 1, 0)


@pytest.mark.parametrize("mode", ["json_object"])
def test_the_json_object_mode_sends_the_older_form_at_once(tmp_path, mode):
    stage = Stage("judge", _judge_request, _pick, answer=PICK, structured=mode)
    with OpenAITestServer(answer=_answer, structured="json_object") as server:
        _, outcomes = _run(server, stage, [0, 1], tmp_path)
        received = server.requests
    assert [o.value for o in outcomes] == ["A", "B"] and len(received) == 2
    fmt = received[0].body[RESPONSE_FORMAT]
    assert fmt["type"] == "json_object" and fmt["schema"]["properties"]["pick"]["enum"] == [
        "A",
        "B",
    ]


def test_worst_case_sends_per_mode():
    assert [PICK.sends_at_most(m) for m in ("auto", "json_schema", "choice")] == [3, 3, 3]
    assert PICK.sends_at_most("json_object") == 2 and PICK.sends_at_most("off") == 1
    assert PROSE.sends_at_most("auto") == 1 and PROSE.sends_at_most("json_schema") == 3


def test_a_refusal_is_recognised_only_for_structured_requests():
    from prefduel.llm import LLMResponse

    plain = _judge_request(0, ())
    failed = LLMResponse(plain, None, ok=False, error="HTTP 400", status=400, retryable=False)
    assert not rejected(failed)
    asked = structure(plain, PICK, "auto")
    assert rejected(LLMResponse(asked, None, ok=False, status=422, retryable=False))
    assert not rejected(LLMResponse(asked, None, ok=False, status=401, retryable=False))


def test_what_ask_learns_of_refused_formats_lives_with_its_client(tmp_path):
    """A conversation stage probes the ladder once per client; a new client (a new run on the
    same endpoint, perhaps restarted with other settings) probes again."""
    from prefduel.llm.stages import ask

    stage = Stage("judge", _judge_request, _pick, answer=PICK, structured="auto")

    def one_run(cache: str, items: list[int]) -> list[str | None]:
        backend = OpenAIBackend(server.base_url, api_key_env=KEY_ENV, timeout=5.0)
        with LLMClient(backend, cache=tmp_path / cache, sleep=RecordingSleep()) as client:

            async def go():
                return [await ask(stage, i, client) for i in items]

            asyncio.run(go())
        return [r.body.get(RESPONSE_FORMAT, {}).get("type") for r in server.requests]

    with OpenAITestServer(answer=lambda body: "B", structured="reject") as server:
        first = one_run("a.sqlite", [0, 1])
        assert first == ["json_schema", "json_object", None, None]
        second = one_run("b.sqlite", [2])[len(first):]
    assert second == ["json_schema", "json_object", None]  # probed afresh, not remembered
