"""Requests, responses and the ``complete(request) -> response`` protocol.

An `LLMRequest` is frozen, typed and hashable: model, messages (a tuple of
`Message`), sampling parameters (a frozen `Params` mapping), seed, **sample index**
and role tag. Its canonical JSON form (`LLMRequest.canonical`) and the SHA-256 of that form
(`LLMRequest.key`) are stable across processes, platforms and Python versions; the key is
the cache key. Every field is part of the key, so repeated samples of one prompt (``sample=0, 1,
...``) are distinct cache entries, and nothing that changes the answer is left out. Example::

    req = LLMRequest.chat("gpt-4o-mini", "Which answer is better, A or B? ...",
                          system="You are the student ...", role="judge", sample=3,
                          temperature=1.0, max_tokens=4)
    req.key        # '5f0c...' (64 hex digits)
    req.canonical  # '{"format":"prefduel/llm-request/1","messages":[["system",...]],...}'
"""

from __future__ import annotations

import hashlib
import json
import math
import numbers
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, NamedTuple, Protocol, TypeAlias, runtime_checkable

from prefduel.llm.errors import LLMCallError, RequestError

#: Version tag inside the canonical form; bumping it changes every key on purpose.
CANONICAL_FORMAT = "prefduel/llm-request/1"

#: Values allowed in `Params`: JSON scalars, tuples of values, nested ``Params``.
ParamValue: TypeAlias = "bool | int | float | str | tuple[ParamValue, ...] | Params | None"


class Message(NamedTuple):
    """One chat message: ``role`` (``"system"``, ``"user"``, ``"assistant"``, ...) and text."""

    role: str
    content: str


def _freeze(value: Any, where: str) -> Any:
    """Turn a JSON-like value into its frozen, normalized form (see `Params`)."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        number = float(value)
        if not math.isfinite(number):
            raise RequestError(f"{where}: expected a finite number, got {number!r}")
        return int(number) if number.is_integer() else number
    if isinstance(value, Mapping):
        return Params._build(value, where)
    if isinstance(value, list | tuple):
        return tuple(_freeze(v, f"{where}[{i}]") for i, v in enumerate(value))
    raise RequestError(
        f"{where}: expected a JSON value (None, bool, number, str, list, mapping), "
        f"got {type(value).__name__}"
    )


def _thaw(value: Any) -> Any:
    """The plain JSON form of a frozen value (dicts and lists)."""
    if isinstance(value, Params):
        return value.to_json()
    if isinstance(value, tuple):
        return [_thaw(v) for v in value]
    return value


class Params(Mapping[str, Any]):
    """A frozen, hashable mapping of request parameters (``temperature``, ``max_tokens``, ...).

    Keys are strings, kept sorted. Values are normalized so that equal settings hash equally:
    integral floats become ints (``1.0 -> 1``), lists become tuples, mappings become nested
    ``Params``; NaN and infinities are refused. Parameters are sent to the endpoint as given
    (in the JSON body), so any OpenAI-compatible extension (``top_k``, ``min_p``,
    ``response_format``, ...) can be used.

    Args:
        items: A mapping or ``(key, value)`` pairs.
        **kwargs: More parameters.

    Raises:
        RequestError: A key is not a string or a value is not a JSON value.
    """

    __slots__ = ("_hash", "_items")

    def __init__(
        self, items: Mapping[str, Any] | Iterable[tuple[str, Any]] = (), /, **kwargs: Any
    ) -> None:
        pairs = dict(items.items() if isinstance(items, Mapping) else items)
        pairs.update(kwargs)
        self._fill(pairs, "params")

    @classmethod
    def _build(cls, pairs: Mapping[Any, Any], where: str) -> Params:
        params = cls.__new__(cls)
        params._fill(dict(pairs), where)
        return params

    def _fill(self, pairs: dict[Any, Any], where: str) -> None:
        frozen = []
        for key in sorted(pairs, key=lambda k: (not isinstance(k, str), str(k))):
            if not isinstance(key, str):
                raise RequestError(f"{where}: keys must be strings, got {key!r}")
            frozen.append((key, _freeze(pairs[key], f"{where}.{key}")))
        object.__setattr__(self, "_items", tuple(frozen))
        object.__setattr__(self, "_hash", hash(self._items))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Params is immutable")

    def __getitem__(self, key: str) -> Any:
        for k, v in self._items:
            if k == key:
                return v
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return (k for k, _ in self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Params):
            return self._items == other._items
        if isinstance(other, Mapping):
            return self == Params(other)
        return NotImplemented

    def __repr__(self) -> str:
        return "Params(" + ", ".join(f"{k}={v!r}" for k, v in self._items) + ")"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Params, (self._items,))

    def to_json(self) -> dict[str, Any]:
        """The parameters as a plain JSON-ready ``dict`` (nested dicts and lists)."""
        return {k: _thaw(v) for k, v in self._items}


#: The empty parameter set (the default of `LLMRequest.params`).
NO_PARAMS = Params()


@dataclass(frozen=True)
class LLMRequest:
    """One chat-completion request: what is asked, of which model, which sample, for what role.

    Construction normalizes ``messages`` (pairs become `Message`) and ``params`` (any
    mapping becomes `Params`), so requests built from lists and dicts are still hashable.

    Attributes:
        model: Model name as the endpoint knows it (also the price-table key).
        messages: The conversation, at least one message.
        params: Sampling parameters sent with the request (``temperature``, ``max_tokens``,
            ``top_p``, ``stop``, ...); ``n`` other than 1, ``stream``, ``model``, ``messages``
            and ``seed`` are refused here (``seed`` has its own field).
        seed: Sent as the API's ``seed`` when given. Sent verbatim: to get different samples
            from a seeded endpoint, vary it with ``sample`` yourself.
        sample: Sample index (0, 1, ...): repeated samples of one prompt are different requests
            and different cache entries. Not sent to the endpoint.
        role: Role tag, e.g. ``"question"``, ``"answer"``, ``"rater"``, ``"judge"``: selects
            the scripted handler, groups cache statistics and the call log. Not sent.

    Raises:
        RequestError: A field has the wrong type or value (the message names it).
    """

    model: str
    messages: tuple[Message, ...]
    params: Params = NO_PARAMS
    seed: int | None = None
    sample: int = 0
    role: str = "default"

    def __post_init__(self) -> None:
        if not isinstance(self.model, str) or not self.model:
            raise RequestError(f"model: expected a non-empty string, got {self.model!r}")
        if isinstance(self.messages, str | Message) or not isinstance(self.messages, Sequence):
            raise RequestError(
                "messages: expected a sequence of (role, content) pairs, "
                f"got {type(self.messages).__name__}"
            )
        messages = []
        for i, m in enumerate(self.messages):
            if (
                not isinstance(m, tuple | list)
                or len(m) != 2
                or not all(isinstance(x, str) for x in m)
            ):
                raise RequestError(
                    f"messages[{i}]: expected a (role, content) pair of str, got {m!r}"
                )
            if not m[0]:
                raise RequestError(f"messages[{i}]: the role is empty")
            messages.append(Message(m[0], m[1]))
        if not messages:
            raise RequestError("messages: expected at least one message, got none")
        object.__setattr__(self, "messages", tuple(messages))
        if not isinstance(self.params, Params):
            if not isinstance(self.params, Mapping):
                raise RequestError(f"params: expected a mapping, got {type(self.params).__name__}")
            object.__setattr__(self, "params", Params(self.params))
        for name in ("model", "messages", "seed", "stream"):
            if name in self.params:
                raise RequestError(f"params: {name!r} is not a parameter (it is set elsewhere)")
        if self.params.get("n", 1) != 1:
            raise RequestError(
                f"params.n: expected 1 (use the sample index for repeated samples), "
                f"got {self.params['n']!r}"
            )
        if self.seed is not None and (
            isinstance(self.seed, bool) or not isinstance(self.seed, int)
        ):
            raise RequestError(f"seed: expected an int or None, got {self.seed!r}")
        if isinstance(self.sample, bool) or not isinstance(self.sample, int) or self.sample < 0:
            raise RequestError(f"sample: expected a non-negative int, got {self.sample!r}")
        if not isinstance(self.role, str) or not self.role:
            raise RequestError(f"role: expected a non-empty string, got {self.role!r}")

    @classmethod
    def chat(
        cls,
        model: str,
        user: str,
        *,
        system: str | None = None,
        role: str = "default",
        sample: int = 0,
        seed: int | None = None,
        **params: Any,
    ) -> LLMRequest:
        """Build a one-turn request: an optional system prompt and one user message.

        Args:
            model: Model name.
            user: The user message.
            system: The system prompt, if any.
            role: Role tag (``"question"``, ``"answer"``, ``"rater"``, ``"judge"``, ...).
            sample: Sample index.
            seed: API seed, or None.
            **params: Sampling parameters (``temperature=0.7``, ``max_tokens=256``, ...).

        Returns:
            The request.
        """
        messages = ([Message("system", system)] if system is not None else []) + [
            Message("user", user)
        ]
        return cls(model, tuple(messages), Params(params), seed=seed, sample=sample, role=role)

    def to_json(self) -> dict[str, Any]:
        """The canonical content as a JSON-ready ``dict`` (see `canonical`)."""
        return {
            "format": CANONICAL_FORMAT,
            "model": self.model,
            "messages": [[m.role, m.content] for m in self.messages],
            "params": self.params.to_json(),
            "seed": self.seed,
            "sample": self.sample,
            "role": self.role,
        }

    @cached_property
    def canonical(self) -> str:
        """Canonical JSON: sorted keys, no whitespace, UTF-8 text kept as is, a format tag."""
        return json.dumps(
            self.to_json(),
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
            allow_nan=False,
        )

    @cached_property
    def key(self) -> str:
        """SHA-256 (64 hex digits) of `canonical`: the cache key of this request."""
        return hashlib.sha256(self.canonical.encode("utf-8")).hexdigest()

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LLMRequest:
        """Rebuild a request from `to_json` output (or the parsed `canonical`).

        Raises:
            RequestError: ``data`` is not a request of this format.
        """
        if data.get("format") != CANONICAL_FORMAT:
            raise RequestError(
                f"expected a request of format {CANONICAL_FORMAT!r}, got {data.get('format')!r}"
            )
        return cls(
            data["model"],
            tuple(Message(*m) for m in data["messages"]),
            Params(data.get("params") or {}),
            seed=data.get("seed"),
            sample=data.get("sample", 0),
            role=data.get("role", "default"),
        )


@dataclass(frozen=True)
class Usage:
    """Token counts of one answer, as reported by the endpoint (0 when it reports none)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens


class TokenLogprob(NamedTuple):
    """One generated token with its log-probability and the most likely alternatives.

    Attributes:
        token: The token as generated.
        logprob: Its natural-log probability.
        top: ``(token, logprob)`` of the most likely tokens at this position (the endpoint's
            ``top_logprobs``; may be empty).
    """

    token: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class LLMResponse:
    """The outcome of one request: an answer, or a recorded failure.

    Attributes:
        request: The request answered.
        text: The answer text (None when ``ok`` is False); from an endpoint, scrubbed of the
            API key (see `prefduel.llm.openai_backend`).
        ok: Whether an answer arrived.
        model: The model name the endpoint reported (may be more specific than the request's).
        finish_reason: ``"stop"``, ``"length"``, ... as reported.
        usage: Token counts of the answer (the original call's counts for a cache hit).
        cost: What this call spent, in the price table's currency; 0 for a cache hit.
        cached: Whether the answer came from the cache (no call was made).
        attempts: Attempts sent for this call (0 for a cache hit).
        latency: Seconds from the first attempt to the outcome, backoff included.
        created: Unix time at which the answer was produced (for a hit: when it was cached).
        error: Why the call failed (None when ``ok``); never contains the API key.
        status: The HTTP status of the last failed attempt, when the endpoint answered with one.
        error_kind: The `LLMCallError` kind of the last failed attempt (``"http"``,
            ``"connection"``, ``"timeout"``, ...; None when ``ok``).
        retryable: Whether the same request may succeed when sent again (False for a
            permanent error such as 401 or 404; None when ``ok``).
        logprobs: Per generated token, its log-probability and top alternatives, when the
            request asked for them (``logprobs=True``) and the endpoint returned them.
    """

    request: LLMRequest
    text: str | None
    ok: bool = True
    model: str = ""
    finish_reason: str | None = None
    usage: Usage = Usage()
    cost: float = 0.0
    cached: bool = False
    attempts: int = 0
    latency: float = 0.0
    created: float = 0.0
    error: str | None = None
    status: int | None = None
    error_kind: str | None = None
    retryable: bool | None = None
    logprobs: tuple[TokenLogprob, ...] | None = None

    @property
    def key(self) -> str:
        """The request's cache key."""
        return self.request.key

    def unwrap(self) -> str:
        """The answer text.

        Raises:
            LLMCallError: The call failed (the message names role, model, key and error).
        """
        if self.ok and self.text is not None:
            return self.text
        raise LLMCallError(
            f"{self.request.role} call to {self.request.model} (key {self.key[:12]}, sample "
            f"{self.request.sample}) failed after {self.attempts} attempt(s): {self.error}",
            kind="failed",
            retryable=True,
        )


@runtime_checkable
class Completer(Protocol):
    """Anything that answers requests: ``await completer.complete(request) -> LLMResponse``.

    Both backends (one attempt, may raise `LLMCallError`) and
    `LLMClient` (cache, retries, never raises for a failed call)
    satisfy it; code that only needs answers (e.g. ``datagen``) should accept a ``Completer``.
    """

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """Answer one request."""
        ...


@runtime_checkable
class Backend(Completer, Protocol):
    """A source of answers that `LLMClient` drives.

    ``complete`` makes ONE attempt and returns an ``ok`` response, or raises
    `LLMCallError` (``retryable`` says whether to retry);
    the client adds cache, retries, concurrency limits, cost and the call log.

    Attributes:
        namespace: Cache namespace: answers of different backends never mix in one cache
            (``"openai"`` for endpoints, ``"scripted"`` for the scripted backend).
        billable: Whether answers cost money (False for the scripted backend).
    """

    namespace: str
    billable: bool

    async def aclose(self) -> None:
        """Release resources bound to the running event loop (the backend stays usable)."""
        ...


def messages_of(pairs: Iterable[tuple[str, str]]) -> tuple[Message, ...]:
    """Messages from ``(role, content)`` pairs (a convenience for building requests)."""
    return tuple(Message(r, c) for r, c in pairs)


__all__ = [
    "CANONICAL_FORMAT",
    "NO_PARAMS",
    "Backend",
    "Completer",
    "LLMRequest",
    "LLMResponse",
    "Message",
    "ParamValue",
    "Params",
    "TokenLogprob",
    "Usage",
    "messages_of",
]
