"""The LLM layer: call any OpenAI-compatible endpoint with cache, concurrency, retries, costs.

Build frozen, hashable `LLMRequest` objects (their SHA-256 `key` over
a canonical JSON form, sample index included, is the cache key), pick a backend, and let an
`LLMClient` answer them::

    from prefduel.llm import LLMClient, LLMRequest, OpenAIBackend, ScriptedBackend

    requests = [LLMRequest.chat("gpt-4o-mini", prompt, role="judge", sample=s, temperature=1.0)
                for prompt in prompts for s in range(4)]
    backend = OpenAIBackend(base_url="http://localhost:8000/v1", api_key_env="MY_KEY")
    # backend = ScriptedBackend(handlers={"judge": my_judge})   # offline, deterministic
    with LLMClient(backend, cache="llm-cache.sqlite", call_log="calls.jsonl",
                   max_connections=32) as client:
        responses = client.run(requests)       # async: await client.complete_many(requests)
    texts = [r.text for r in responses if r.ok]  # failures are recorded; re-run to retry them

Modules:

* `request`: `LLMRequest`, `LLMResponse`,
  `Params`, `Message`, `Usage`; protocols `Completer`, `Backend`.
* `client`: `LLMClient` (cache, semaphore, retries, budget,
  call log); `clientstats`: `ClientStats`; `loops`: `run_sync`.
* `stages`: the one stage engine for LLM batches (`Stage`, `StageEngine`, `ask`, `each`,
  `ProgressBar`); `senders`: `ClientSender` (live), `CacheSender` (dry run);
  `concurrency`: `each` and `gather_or_cancel` (a failure cancels and awaits the rest).
* `estimate`: `estimate_cost`, `CostEstimate` (dry runs).
* `openai_backend`: `OpenAIBackend` (``openai`` SDK v3; needs
  ``pip install "prefduel[llm]"``; imported lazily); `connection`: the wording of its
  connection errors from what the endpoint did earlier in the run; `redaction`: `scrub_reply`
  (every string of a reply rid of the key); `urls`: `public_url`, `check_base_url`.
* `scripted`: `ScriptedBackend`, `request_rng`.
* `cache`: `ResponseCache` (SQLite, WAL, multi-process); `cachefile`: what may be opened as
  the cache, checked read-only first; `cachestats`: `CacheStats`, what a cache holds.
* `retry`: `RetryPolicy`.
* `prices`: `PriceTable`, `load_prices`.
* `calllog`: `CallLog` (JSONL).
* `config`: `LLMConfig` (YAML section / CLI flags),
  `add_llm_arguments`, `config_from_args`, `make_client`.
* `structured`: structured outputs (`AnswerFormat`, `StructuredMode`: ``response_format``
  with a JSON schema or a constrained choice, the free-text parser as the fallback).
* `logprobs`: `choice_probabilities` (a pick's probability from ``top_logprobs``).
* `testserver`: `OpenAITestServer`; `testfaults`: its fault schedules; `testanswers`: its
  structured answers, sampled first tokens and logprobs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from prefduel.llm.cache import (
    CacheEndpointWarning,
    CacheStats,
    ResponseCache,
    default_cache_path,
)
from prefduel.llm.calllog import CallLog, read_call_log
from prefduel.llm.client import (
    ClientStats,
    CostEstimate,
    LLMClient,
    estimate_cost,
    run_sync,
)
from prefduel.llm.config import (
    LLMConfig,
    add_llm_arguments,
    config_from_args,
    make_backend,
    make_client,
)
from prefduel.llm.errors import (
    CacheError,
    LLMCallError,
    LLMConfigError,
    LLMError,
    PriceTableError,
    RequestError,
)
from prefduel.llm.logprobs import choice_probabilities, logprob_params
from prefduel.llm.prices import (
    ModelPrice,
    PriceTable,
    UnknownModelPriceWarning,
    default_prices,
    estimate_tokens,
    load_prices,
)
from prefduel.llm.request import (
    Backend,
    Completer,
    LLMRequest,
    LLMResponse,
    Message,
    Params,
    TokenLogprob,
    Usage,
)
from prefduel.llm.retry import RetryPolicy
from prefduel.llm.scripted import DEFAULT_HANDLERS, Handler, ScriptedBackend, request_rng
from prefduel.llm.structured import (
    STRUCTURED_MODES,
    AnswerFormat,
    StructuredMode,
    structure,
    unstructured,
)

if TYPE_CHECKING:
    from prefduel.llm.openai_backend import OpenAIBackend


def __getattr__(name: str) -> Any:
    """``OpenAIBackend`` is imported on first use (it needs the ``llm`` extra)."""
    if name == "OpenAIBackend":
        from prefduel.llm.openai_backend import OpenAIBackend

        return OpenAIBackend
    raise AttributeError(f"module 'prefduel.llm' has no attribute {name!r}")


__all__ = [
    "DEFAULT_HANDLERS",
    "STRUCTURED_MODES",
    "AnswerFormat",
    "Backend",
    "CacheEndpointWarning",
    "CacheError",
    "CacheStats",
    "CallLog",
    "ClientStats",
    "Completer",
    "CostEstimate",
    "Handler",
    "LLMCallError",
    "LLMClient",
    "LLMConfig",
    "LLMConfigError",
    "LLMError",
    "LLMRequest",
    "LLMResponse",
    "Message",
    "ModelPrice",
    "OpenAIBackend",
    "Params",
    "PriceTable",
    "PriceTableError",
    "RequestError",
    "ResponseCache",
    "RetryPolicy",
    "ScriptedBackend",
    "StructuredMode",
    "TokenLogprob",
    "UnknownModelPriceWarning",
    "Usage",
    "add_llm_arguments",
    "choice_probabilities",
    "config_from_args",
    "default_cache_path",
    "default_prices",
    "estimate_cost",
    "estimate_tokens",
    "load_prices",
    "logprob_params",
    "make_backend",
    "make_client",
    "read_call_log",
    "request_rng",
    "run_sync",
    "structure",
    "unstructured",
]
