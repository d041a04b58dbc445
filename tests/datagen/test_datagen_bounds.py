"""Every size a datagen config can set is bounded, with a named error before anything is
allocated or sent: counts, arrivals, tokens, connections, seconds, knobs, the calls of a run and
the memory of the world it builds."""

from __future__ import annotations

import pytest
from pb_datagen_helpers import tiny_mapping

from prefduel.cli.main import main
from prefduel.datagen import DatagenConfigError, config_from_mapping
from prefduel.worlds.world import MAX_ARRIVALS

HUGE = 10**12


def _error(data: dict) -> str:
    with pytest.raises(DatagenConfigError) as info:
        config_from_mapping(data, source="sizes.yaml")
    return str(info.value)


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        ({"world": {"arrivals": HUGE}}, "world.arrivals", f"<= {MAX_ARRIVALS}"),
        ({"world": {"arrivals": MAX_ARRIVALS + 1}}, "world.arrivals", f"<= {MAX_ARRIVALS}"),
        ({"world": {"rounds": HUGE}}, "world.rounds", "at most 6"),
        ({"samples": HUGE}, "samples", "<= 1000"),
        ({"retries": {"judge": HUGE}}, "retries.judge", "<= 20"),
        ({"retries": {"answer": 21}}, "retries.answer", "<= 20"),
        ({"models": {"answer": {"max_tokens": HUGE}}}, "models.answer.max_tokens", "<= 16384"),
        (
            {"models": {"answer": {"expected_tokens": HUGE}}},
            "models.answer.expected_tokens",
            "<= 16384",
        ),
        (
            {"models": {"answer": {"max_tokens": 100, "expected_tokens": 200}}},
            "models.answer.expected_tokens",
            "at most max_tokens (100)",
        ),
        ({"models": {"judge": {"temperature": 1e300}}}, "models.judge.temperature", "<= 100"),
        ({"models": {"judge": {"seed": 2**40}}}, "models.judge.seed", "< 4294967296"),
        ({"llm": {"max_connections": HUGE}}, "llm.max_connections", "<= 1024"),
        ({"llm": {"max_attempts": HUGE}}, "llm.max_attempts", "<= 100"),
        ({"llm": {"timeout": 1e300}}, "llm.timeout", "<= 3600"),
        ({"scripted": {"latency": 1e300}}, "scripted.latency", "<= 60"),
        ({"scripted": {"judge_beta": 1e300}}, "scripted.judge_beta", "<= 1000"),
        ({"scripted": {"rater_gain": 1e300}}, "scripted.rater_gain", "<= 1000"),
        ({"rater": {"scale": [-1e300, 1e300]}}, "rater.scale", "1e+06"),
        ({"bt": {"ridge": 1e300}}, "bt.ridge", "<= 1000"),
        ({"bt": {"ridge": 1e-300}}, "bt.ridge", ">= 1e-06"),  # the fit's matrix is singular
        ({"bt": {"scale": 1e300}}, "bt.scale", "<= 1000"),
        ({"students": {"template": HUGE}}, "students.template", "at most 3072"),
        ({"students": {"template": 2, "quirks": HUGE}}, "students.quirks", "at most"),
        ({"judge": {"mode": "logprobs", "top_logprobs": HUGE}}, "judge.top_logprobs", "<= 20"),
    ],
)
def test_every_size_is_bounded(change, field, words):
    message = _error({**tiny_mapping(), **change})
    assert message.startswith(f"sizes.yaml: {field}: ") and words in message, message


def test_the_calls_of_a_run_are_bounded_with_their_factors():
    data = tiny_mapping(
        topics={"builtin": "dev"},
        students={"template": 40},
        questions={"cues_per_question": 13},
        samples=1000,
    )
    message = _error(data)
    assert message.startswith("sizes.yaml: judge calls: ")
    assert "40 students x 936 questions x 15 persona pairs x 4 orders and labels x 1000 samples" \
        in message
    assert "at most 10,000,000" in message


def test_the_world_in_memory_is_bounded():
    personas = [{"id": f"p{i}", "prompt": f"You are tutor {i}."} for i in range(8)]
    world = {"arrivals": MAX_ARRIVALS, "rounds": 24}
    topics = {"builtin": "dev", "take": 4}
    message = _error(tiny_mapping(personas=personas, world=world, topics=topics))
    assert message.startswith("sizes.yaml: world: ")
    assert "100,000 arrivals x 24 rounds x 8 personas" in message and "at most 2 GB" in message
    # the largest world of the TutorSim rosters fits: 100,000 arrivals of 24 rounds, 6 personas
    data = tiny_mapping(
        topics={"builtin": "dev", "take": 4}, world={"arrivals": MAX_ARRIVALS, "rounds": 24}
    )
    assert config_from_mapping(data, source="sizes.yaml").layout.arrivals == MAX_ARRIVALS


@pytest.mark.parametrize(
    ("flag", "words"),
    [
        (["--max-connections", str(HUGE)], "max_connections"),
        (["--max-attempts", str(HUGE)], "max_attempts"),
        (["--timeout", "1e300"], "timeout"),
    ],
)
def test_command_line_sizes_are_bounded(tmp_path, monkeypatch, capsys, flag, words):
    import yaml

    monkeypatch.chdir(tmp_path)
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(tiny_mapping()))
    assert main(["datagen", str(config), "--dry-run", *flag]) == 2
    err = capsys.readouterr().err
    assert err.startswith("prefduel: error: ") and words in err and "Traceback" not in err


LONG = "x" * 20_001


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"personas": [{"id": "a", "prompt": LONG}, {"id": "b", "prompt": "B."}]},
         "personas[0].prompt"),
        ({"students": [{"id": "s", "description": LONG}]}, "students[0].description"),
        ({"topics": [{"id": "t", "name": "T", "chains": [{"concept": LONG}, "c"]}]},
         "topics[0].chains[0].concept"),
        ({"prompts": {"judge_system": "{student}" + LONG[9:]}}, "prompts.judge_system"),
    ],
)
def test_every_text_of_a_prompt_is_bounded(change, field):
    """A judge request holds a template, a description and two answers, and thousands of
    requests are built at once: a text of megabytes would take gigabytes."""
    message = _error({**tiny_mapping(), **change})
    assert message.startswith(f"sizes.yaml: {field}: ")
    assert "20,001 characters; at most 20,000" in message


@pytest.mark.parametrize(
    ("params", "words"),
    [
        ({"top_p": float("nan")}, "params.top_p: expected a finite number"),
        ({"stop": [1, {"a": float("inf")}]}, "params.stop[1].a: expected a finite number"),
        ({"logit_bias": {1: 2}}, "keys must be strings"),
    ],
)
def test_request_parameters_are_checked_with_the_config(params, words):
    """Not when the role's first request is built: the judge's come after every other stage
    was paid for."""
    message = _error(tiny_mapping(models={"judge": {"params": params}}))
    assert message.startswith("sizes.yaml: models.judge.params: ") and words in message, message


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"students": [{"id": "s", "description": "You.", "cue_following": 1e12}]},
         "students[0].cue_following"),
        ({"students": {"file": "people.yaml"}}, "students[1].cue_following"),
    ],
)
def test_every_number_of_a_collection_is_bounded(tmp_path, change, field):
    """The scripted judge exponentiates them: a huge one overflowed in the middle of a run."""
    import yaml

    people = [{"id": "a", "description": "A."}, {"id": "b", "description": "B.",
                                                 "cue_following": 2e3}]
    (tmp_path / "people.yaml").write_text(yaml.safe_dump({"profiles": people}))
    with pytest.raises(DatagenConfigError) as info:
        config_from_mapping({**tiny_mapping(), **change}, source="sizes.yaml", base=tmp_path)
    message = str(info.value)
    assert message.startswith(f"sizes.yaml: {field}: ") and "at most 1000 in size" in message
