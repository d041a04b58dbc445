"""core.schema: pydantic validation whose errors are prefduel errors naming file, field and
what is allowed."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from prefduel.core.errors import PrefduelError, SpecError
from prefduel.core.schema import (
    BlankText,
    Integer,
    Noun,
    Number,
    Real,
    Text,
    describe,
    error_at,
    field_path,
    first_problem,
    frozen_dataclass,
    load,
    validate,
)


class ToyError(PrefduelError, ValueError):
    """The error class the toy configs raise."""


@frozen_dataclass(error=ToyError, path="judge")
class Judge:
    model: Text
    temperature: Annotated[Real, Field(ge=0.0)] = 1.0
    max_tokens: Annotated[Integer, Field(ge=1)] | None = None


@frozen_dataclass(error=ToyError, keys="settings")
class Endpoint:
    backend: Literal["openai", "scripted"] = "scripted"
    timeout: Annotated[Number, Field(gt=0), Noun("seconds")] = 60.0
    budget: Annotated[Number, Field(ge=0), Noun("an amount")] | None = None


class Study(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: Text = "study"
    models: dict[str, Judge] = Field(default_factory=dict)
    endpoint: Endpoint = Field(default_factory=Endpoint)
    notes: BlankText = ""


def _message(data, **kwargs) -> str:
    with pytest.raises(ToyError) as info:
        validate(Study, data, error=ToyError, source="run.yaml", **kwargs)
    return str(info.value)


def test_valid_data_becomes_typed_frozen_models():
    study = validate(
        Study,
        {"name": 2024, "models": {"judge": {"model": " gpt ", "temperature": 1}}},
        error=ToyError,
    )
    assert study.name == "2024"  # numbers are accepted as text
    judge = study.models["judge"]
    assert (judge.model, judge.temperature, type(judge.temperature)) == ("gpt", 1.0, float)
    with pytest.raises(dataclasses.FrozenInstanceError):
        judge.model = "other"  # type: ignore[misc]
    assert validate(Study, {}, error=ToyError) == Study()


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (
            {"models": {"judge": {"model": "m", "temperature": -1}}},
            "run.yaml: models.judge.temperature: expected a number >= 0.0, got -1",
        ),
        (
            {"models": {"judge": {"model": "m", "max_tokens": 2.5}}},
            "run.yaml: models.judge.max_tokens: expected an integer, got 2.5",
        ),
        (
            {"models": {"judge": {"model": "m", "max_tokens": True}}},
            "run.yaml: models.judge.max_tokens: expected an integer, got True",
        ),
        ({"models": {"judge": {}}}, "run.yaml: models.judge: missing required keys ['model']"),
        ({"models": {"judge": "m"}}, "run.yaml: models.judge: expected a mapping, got str"),
        ({"name": "  "}, "run.yaml: name: expected a non-empty string"),
        ({"name": None}, "run.yaml: name: expected a string, got null"),
        (
            {"endpoint": {"backend": "carrier-pigeon"}},
            "run.yaml: endpoint.backend: expected one of 'openai' or 'scripted', "
            "got 'carrier-pigeon'",
        ),
        ({"endpoint": {"timeout": "fast"}}, "run.yaml: endpoint.timeout: expected seconds, got"),
        ({"endpoint": {"timeout": 0}}, "run.yaml: endpoint.timeout: expected seconds > 0, got 0"),
        ({"endpoint": {"budget": -1}}, "run.yaml: endpoint.budget: expected an amount >= 0"),
        ({"endpoint": {"budget": float("inf")}}, "run.yaml: endpoint.budget: expected a finite"),
    ],
)
def test_messages_name_the_file_the_field_path_and_what_is_allowed(data, expected):
    assert _message(data).startswith(expected)


def test_unknown_keys_list_the_allowed_ones_and_suggest_a_close_one():
    message = _message({"nmae": "x", "colour": 1})
    assert message == (
        "run.yaml: unknown keys ['colour', 'nmae']; expected ['endpoint', 'models', 'name', "
        "'notes']"
    )
    message = _message({"models": {"judge": {"model": "m", "temprature": 1}}})
    assert message == (
        "run.yaml: models.judge: unknown keys ['temprature']; expected ['max_tokens', 'model', "
        "'temperature']; did you mean 'temperature'?"
    )
    # a model can name its keys, and the root can be named
    assert "endpoint: unknown settings ['colour']" in _message({"endpoint": {"colour": 1}})
    root = _message([1], root="(top level)")
    assert root == "run.yaml: (top level): expected a mapping, got list"


def test_prefix_places_a_section_inside_its_file():
    with pytest.raises(ToyError, match=r"^cfg.yaml: llm.timeout: expected seconds > 0, got -1$"):
        validate(Endpoint, {"timeout": -1}, error=ToyError, source="cfg.yaml", prefix="llm")


def test_number_keeps_ints_and_real_makes_floats():
    endpoint = Endpoint(timeout=5, budget=2)
    assert (endpoint.timeout, type(endpoint.timeout), type(endpoint.budget)) == (5, int, int)
    assert type(Endpoint(timeout=5.5).timeout) is float
    assert type(Judge(model="m", temperature=1).temperature) is float


def test_frozen_dataclasses_raise_the_projects_error_on_construction_and_replace():
    with pytest.raises(ToyError, match=r"^judge\.temperature: expected a number >= 0\.0, got -2$"):
        Judge(model="m", temperature=-2)
    judge = Judge(model="m")
    with pytest.raises(ToyError, match=r"^judge\.max_tokens: expected an integer >= 1, got 0$"):
        dataclasses.replace(judge, max_tokens=0)
    with pytest.raises(ToyError, match=r"unknown keys \['colour'\]"):
        Judge(model="m", colour=1)  # type: ignore[call-arg]
    assert dataclasses.replace(judge, max_tokens=3).max_tokens == 3
    assert dataclasses.asdict(judge) == {"model": "m", "temperature": 1.0, "max_tokens": None}
    assert hash(judge) == hash(Judge(model="m"))
    assert issubclass(ToyError, ValueError)  # callers may also catch ValueError


def test_load_reads_yaml_files_and_names_them(tmp_path):
    good = tmp_path / "good.yaml"
    good.write_text("models:\n  judge: {model: m, max_tokens: 4}\n", encoding="utf-8")
    assert load(Study, good, error=ToyError).models["judge"].max_tokens == 4
    bad = tmp_path / "bad.yaml"
    bad.write_text("models:\n  judge: {model: m, max_tokens: 0}\n", encoding="utf-8")
    with pytest.raises(ToyError, match=rf"^{bad}: models\.judge\.max_tokens: expected an integer"):
        load(Study, bad, error=ToyError)
    with pytest.raises(SpecError, match=r"config file .*nope.yaml does not exist"):
        load(Study, tmp_path / "nope.yaml", error=SpecError)
    broken = tmp_path / "broken.yaml"
    broken.write_text("models: [unclosed\n", encoding="utf-8")
    with pytest.raises(ToyError, match="is not valid YAML"):
        load(Study, broken, error=ToyError)


class Scores(BaseModel):
    model_config = ConfigDict(extra="forbid")

    scores: dict[str, int]

    @field_validator("scores", mode="before")
    @classmethod
    def _small(cls, value):
        for key, number in value.items():
            if number > 9:
                raise error_at((key,), f"score of {key!r} must be below 10, got {number}", value)
        return value


def test_validators_can_point_at_a_part_of_their_value():
    with pytest.raises(ValidationError) as info:
        Scores.model_validate({"scores": {"a": 1, "b": 12}})
    problem = first_problem(info.value, Scores)
    assert problem.loc == ("scores", "b")
    assert problem.message == "score of 'b' must be below 10, got 12"
    assert describe(info.value, Scores, source="s.yaml") == (
        "s.yaml: scores.b: score of 'b' must be below 10, got 12"
    )


def test_field_path():
    assert field_path(("models", "judge", "temperature")) == "models.judge.temperature"
    assert field_path((0, "style", "brevity"), "personas") == "personas[0].style.brevity"
    assert field_path(()) == "" and field_path((), "llm") == "llm"
