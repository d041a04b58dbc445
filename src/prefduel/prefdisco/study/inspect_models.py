"""inspect models as PrefDisco clients, and inspect's mock model playing our scripted roles.

`InspectCompleter` lets PrefDisco's episode and scoring code (which talk to a `Completer`)
send their requests to an inspect `Model`; `scripted_model` is inspect's mock model
(``mockllm/model``) answering as our scripted backend (`prefduel.prefdisco.study.scripted`),
so the inspect task (`prefduel.prefdisco.study.inspect_task`) runs offline and reproduces
``prefduel prefdisco run``. Needs inspect-ai (the ``inspect`` extra).
"""

from __future__ import annotations

from typing import Any

from prefduel.prefdisco.study.inspect_log import needs_inspect

try:
    from inspect_ai.model import (
        ChatMessage,
        ChatMessageAssistant,
        ChatMessageSystem,
        ChatMessageUser,
        GenerateConfig,
        Model,
        ModelOutput,
        ModelUsage,
        get_model,
    )
except ImportError as exc:  # pragma: no cover - the message is the point
    raise needs_inspect("the PrefDisco inspect task", exc) from None

from prefduel.llm.prices import estimate_tokens
from prefduel.llm.request import LLMRequest, LLMResponse, Usage
from prefduel.prefdisco.dataset.folder import Dataset
from prefduel.prefdisco.study.scripted import scripted_handlers, server_answer

#: The attribute that marks a `scripted_model` (its backend is recorded as ``scripted``, so
#: the report says the run tested the pipeline, not a model).
SCRIPTED = "prefdisco_scripted"
#: inspect's stop reasons that mean "cut by the token limit" (our ``length``).
_FINISH = {"max_tokens": "length", "model_length": "length"}


class InspectCompleter:
    """A `Completer` that answers PrefDisco's requests with an inspect `Model` (the request's
    model name only labels the rows: the inspect model answers).

    Args:
        model: The inspect model.
    """

    def __init__(self, model: Model) -> None:
        self.model = model

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """One generate call; its token usage and cost as inspect reports them."""
        output = await self.model.generate(_messages(request), config=_config(request))
        usage = output.usage
        return LLMResponse(
            request=request,
            text=output.completion,
            model=str(self.model),
            finish_reason=_FINISH.get(output.stop_reason, output.stop_reason),
            usage=Usage(usage.input_tokens, usage.output_tokens) if usage else Usage(),
            cost=float(usage.total_cost or 0.0) if usage else 0.0,
        )


def _messages(request: LLMRequest) -> list[ChatMessage]:
    kinds = {
        "system": ChatMessageSystem,
        "user": ChatMessageUser,
        "assistant": ChatMessageAssistant,
    }
    return [kinds[m.role](content=m.content) for m in request.messages]


def _config(request: LLMRequest) -> GenerateConfig:
    """Temperature, token limit (under either name) and seed of a request."""
    params = request.params
    tokens = params.get("max_tokens", params.get("max_completion_tokens"))
    return GenerateConfig(
        temperature=params.get("temperature"), max_tokens=tokens, seed=request.seed
    )


def scripted_model(dataset: Dataset, name: str) -> Model:
    """inspect's mock model (``mockllm/model``) answering as our scripted backend's model
    ``name`` (``scripted-ask3``, ``scripted-judge``; `prefduel.prefdisco.study.scripted`):
    evaluated with it, and judged by ``scripted_model(dataset, "scripted-judge")`` as the
    grader, the task reproduces ``prefduel prefdisco run`` offline. Each answer carries the
    scripted backend's token estimate as its usage (a mock answer without usage makes inspect
    count tokens with a tokenizer it downloads)."""
    answer = server_answer(scripted_handlers(dataset.taxonomy, list(dataset.tasks.values())))

    def respond(messages: list[ChatMessage], *_: Any) -> ModelOutput:
        body = {"model": name, "messages": [{"role": m.role, "content": m.text} for m in messages]}
        text = answer(body)
        output = ModelOutput.from_content("mockllm/model", text)
        asked = sum(estimate_tokens(m.text) for m in messages)
        told = estimate_tokens(text)
        output.usage = ModelUsage(input_tokens=asked, output_tokens=told, total_tokens=asked + told)
        return output

    model = get_model("mockllm/model", custom_outputs=respond, memoize=False)
    setattr(model, SCRIPTED, True)
    return model


def backend_of(model: Model) -> str:
    """How a role group's answers were made, for ``run.json`` (the user routes by keywords)."""
    return "scripted" if getattr(model, SCRIPTED, False) else "inspect"


__all__ = ["SCRIPTED", "InspectCompleter", "backend_of", "scripted_model"]
