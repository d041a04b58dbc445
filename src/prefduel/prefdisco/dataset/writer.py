"""The writer: the dataset's optional LLM stages, persona backstories and sharpened rubrics.

Each is one stage of the stage engine (`prefduel.llm.stages`), run over all its items at once:

* `enrich_personas` (``generate.enrich``, role ``"persona"``): a 3-5 sentence backstory per
  persona (`backstory_stage`); a reply that is not a backstory is shown back and asked again,
  and after ``attempts`` requests the failure is recorded on the persona, never invented;
* `refine_rubrics` (``generate.refine_rubrics``, role ``"rubric"``): sharper anchors for the
  rubrics in use (`rubric_stage`); a refined rubric is kept only if it passes
  `prefduel.prefdisco.dataset.rubrics.validate_anchors`, otherwise the template stays and the
  rejection is recorded in `Rubric.error`.

A call that fails after the client's retries is an `EpisodeError` naming the first such item;
the answers received so far are in the client's cache, so running again resumes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TypeVar

from prefduel.llm.request import Completer, LLMRequest
from prefduel.llm.stages import ClientSender, Outcome, Stage, StageEngine
from prefduel.prefdisco.dataset import prompts
from prefduel.prefdisco.dataset.personas import Persona
from prefduel.prefdisco.dataset.rubrics import Rubric, validate_anchors
from prefduel.prefdisco.dataset.taxonomy import Taxonomy
from prefduel.prefdisco.errors import EpisodeError

Item = TypeVar("Item")


async def _run(stage: Stage[Item], items: Sequence[Item], client: Completer) -> list[Outcome]:
    """Every item of ``stage`` through ``client``, malformed replies asked again in waves."""
    engine = StageEngine(ClientSender(client, price_hits=False))
    return await engine.run(stage, list(items))


# -- backstories --------------------------------------------------------------------------------


def backstory_request(
    persona: Persona, model: str, *, temperature: float = 0.7, previous: Sequence[str] = ()
) -> LLMRequest:
    """The request for ``persona``'s backstory (role ``"persona"``).

    Args:
        persona: The persona.
        model: The writer model.
        temperature: Sampling temperature.
        previous: Earlier replies that were not a backstory (each adds a retry turn).
    """
    messages = prompts.persona_messages(persona.describe())
    for text in previous:
        messages = (*messages, *prompts.retry_turn(text, prompts.BACKSTORY_FORMAT))
    return LLMRequest(
        model,
        messages,
        {"temperature": temperature, "max_tokens": 400},
        sample=len(previous),
        role="persona",
    )


def backstory_stage(model: str, *, temperature: float = 0.7, attempts: int = 2) -> Stage[Persona]:
    """Asking for a persona's backstory, as a stage of the stage engine: a reply that is not
    one (`prompts.parse_backstory`) is shown back, up to ``attempts`` requests; then the
    failure is recorded on the persona (``backstory_error``), never invented. The value of an
    item is the persona with its backstory (or its error) set."""

    def read(persona: Persona, text: str) -> Persona | None:
        backstory = prompts.parse_backstory(text)
        if backstory is None:
            return None
        return replace(persona, backstory=backstory, backstory_model=model, backstory_error=None)

    def give_up(persona: Persona, replies: tuple[str, ...]) -> Persona:
        error = f"no backstory after {attempts} attempt(s); last reply {replies[-1][:80]!r}"
        return replace(persona, backstory=None, backstory_model=model, backstory_error=error)

    return Stage(
        "persona",
        request=lambda persona, previous: backstory_request(
            persona, model, temperature=temperature, previous=previous
        ),
        parse=read,
        fallback=give_up,
        describe=lambda persona: {"item": persona.id},
        tries=attempts,
    )


async def enrich_personas(
    personas: Sequence[Persona],
    client: Completer,
    model: str,
    *,
    temperature: float = 0.7,
    attempts: int = 2,
) -> list[Persona]:
    """Add an LLM-written backstory to each persona (validated; failures recorded).

    The personas are the items of one stage (`backstory_stage`) run by the stage engine
    (`prefduel.llm.stages.StageEngine`): every persona is asked at once, and those whose reply
    was not a backstory are asked again, with the reply shown back.

    Args:
        personas: The personas.
        client: Answers requests (an `LLMClient`).
        model: The writer model.
        temperature: Sampling temperature (the paper samples personas at 0.7).
        attempts: Requests per persona before the failure is recorded.

    Returns:
        The personas with ``backstory`` (or ``backstory_error``) set.

    Raises:
        EpisodeError: A call failed after the client's retries (names the first such persona;
            nothing is recorded for it; run again to retry).
    """
    if attempts < 1:
        raise ValueError(f"attempts: expected >= 1, got {attempts!r}")
    stage = backstory_stage(model, temperature=temperature, attempts=attempts)
    outcomes = await _run(stage, personas, client)
    for persona, outcome in zip(personas, outcomes, strict=True):
        if outcome.failed:
            raise EpisodeError(f"backstory of persona {persona.id}: {outcome.error}")
    return [outcome.value for outcome in outcomes]


# -- rubrics ------------------------------------------------------------------------------------


def rubric_request(
    rubric: Rubric, taxonomy: Taxonomy, model: str, *, previous: Sequence[str] = ()
) -> LLMRequest:
    """The refinement request of a templated rubric (role ``"rubric"``)."""
    attribute = taxonomy[rubric.attribute]
    messages = prompts.rubric_messages(attribute, attribute.value(rubric.value), rubric.anchors)
    for text in previous:
        messages = (*messages, *prompts.retry_turn(text, prompts.ANCHORS_FORMAT))
    return LLMRequest(
        model,
        messages,
        {"temperature": 0, "max_tokens": 700},
        sample=len(previous),
        role="rubric",
    )


def _anchors(rubric: Rubric, taxonomy: Taxonomy, text: str) -> tuple[tuple[str, ...], list[str]]:
    """The anchors a reply proposes for ``rubric`` and their problems (none: usable)."""
    anchors = prompts.parse_anchors(text)
    if anchors is None:
        return (), ["not a JSON object with anchors '1'-'5'"]
    label = taxonomy[rubric.attribute].value(rubric.value).label
    return anchors, validate_anchors(anchors, label)


def rubric_stage(taxonomy: Taxonomy, model: str, *, attempts: int = 2) -> Stage[Rubric]:
    """Refining a templated rubric, as a stage of the stage engine: a reply whose anchors are
    not a JSON object of five valid anchors (`validate_anchors`) is shown back, up to
    ``attempts`` requests; then the template stays, with the last reply's problems recorded in
    ``error``. The value of an item is the rubric, refined or not."""

    def read(rubric: Rubric, text: str) -> Rubric | None:
        anchors, problems = _anchors(rubric, taxonomy, text)
        if problems:
            return None
        return replace(rubric, anchors=anchors, source="llm", model=model, error=None)

    def give_up(rubric: Rubric, replies: tuple[str, ...]) -> Rubric:
        _, problems = _anchors(rubric, taxonomy, replies[-1])
        return replace(rubric, model=model, error=f"refinement rejected: {'; '.join(problems)}")

    return Stage(
        "rubric",
        request=lambda rubric, previous: rubric_request(rubric, taxonomy, model, previous=previous),
        parse=read,
        fallback=give_up,
        describe=lambda rubric: {"item": f"{rubric.attribute}={rubric.value}"},
        tries=attempts,
    )


async def refine_rubrics(
    rubrics: Mapping[tuple[str, str], Rubric],
    taxonomy: Taxonomy,
    client: Completer,
    model: str,
    *,
    attempts: int = 2,
) -> dict[tuple[str, str], Rubric]:
    """Sharpen rubrics with an LLM; keep the template where the answer fails validation.

    The rubrics are the items of one stage (`rubric_stage`) run by the stage engine.

    Args:
        rubrics: Templated rubrics by (attribute, value).
        taxonomy: The taxonomy.
        client: Answers requests.
        model: The rubric-writing model.
        attempts: Requests per rubric before the template is kept.

    Returns:
        The rubrics, refined (``source="llm"``) or templated with ``error`` set.

    Raises:
        EpisodeError: A call failed after the client's retries (names the first such rubric;
            run again to retry it).
    """
    if attempts < 1:
        raise ValueError(f"attempts: expected >= 1, got {attempts!r}")
    for key in rubrics:
        taxonomy.check_value(*key)
    items = list(rubrics.values())
    outcomes = await _run(rubric_stage(taxonomy, model, attempts=attempts), items, client)
    for rubric, outcome in zip(items, outcomes, strict=True):
        if outcome.failed:
            raise EpisodeError(f"rubric {rubric.attribute}={rubric.value}: {outcome.error}")
    return {outcome.value.key: outcome.value for outcome in outcomes}
