"""Backend for any OpenAI-compatible chat-completions endpoint, on the ``openai`` SDK (v3).

Works with OpenAI, vLLM, llama.cpp's server, Ollama, LM Studio, ...: give ``base_url`` (e.g.
``http://localhost:8000/v1``) and the NAME of the environment variable holding the API key::

    export MY_ENDPOINT_KEY=...            # never on the command line, never in a file we write
    backend = OpenAIBackend(base_url="https://api.example.com/v1", api_key_env="MY_ENDPOINT_KEY")

The key is read from the environment when the SDK client is built and handed to the SDK only:
it is not stored on this object, and it never appears in its ``repr``, in error messages (they
are redacted), in the cache or in the call log. An endpoint may also echo the key inside a
SUCCESSFUL reply: `OpenAIBackend.complete` scrubs every reply before returning it, so what
`LLMClient` caches and what callers write (datagen, PrefDisco) never holds it. Each occurrence
of the key the SDK sent, of the key in the environment variable, and of every credential header
value sent (``Authorization`` and the like, with and without its ``Bearer`` scheme) anywhere in
the reply is replaced by `REDACTED`: `scrub_reply` visits every string of every field (answer
text, reported model name, finish reason, logprobs tokens, and fields added later), and the
message of a failed attempt is redacted whatever part of the reply it quotes. Unlike
error messages, answers keep key-like text that is not one of these secrets (an answer may
legitimately explain ``Authorization: Bearer <token>``). The placeholder key ``EMPTY`` (sent
with ``api_key_env=None`` to servers that need no key) is not a secret and is not scrubbed.

The SDK's own retries are off (``max_retries=0``): each `OpenAIBackend.complete` is ONE
attempt, and `LLMClient` applies its retry policy. Failures
come out as `LLMCallError`:

* HTTP 408, 409, 429 and 5xx: ``kind="http"``, retryable, ``retry_after`` from the
  ``retry-after-ms`` / ``retry-after`` headers; except a structured request whose error names
  ``response_format`` (llama-cpp-python's HTTP 500 for a ``json_schema`` format): not
  retryable, the stage engine asks one rung down (`prefduel.llm.structured.fall_back`);
* other HTTP 4xx (400, 401, 403, 404, 422, ...): ``kind="http"``, not retryable;
* timeout: ``kind="timeout"``, retryable;
* connection refused, dropped, or a truncated body: ``kind="connection"``, retryable; the
  message says what happened given what the endpoint did earlier in the run
  (`prefduel.llm.connection`): "cannot reach URL ... is the server running?" only while it has
  neither answered nor accepted a connection, "the server at URL answered N requests and then
  stopped answering" after it has, and "the reply from URL was cut off" for a truncated body;
* malformed JSON, no ``choices``, no text: ``kind="malformed"``, retryable;
* content filter: ``kind="refused"``, not retryable.

HTTP errors and connection errors name the endpoint's base URL and keep the server's own
message (``error.message`` of OpenAI-style bodies, ``detail`` of FastAPI servers such as
llama-cpp-python's, or a plain-text body); a 404 from a base URL that does not end in ``/v1``
says that it usually does.

Sampling parameters are sent verbatim in the JSON body (``extra_body``), so endpoint-specific
ones (``top_k``, ``min_p``, ``repetition_penalty``, ``response_format``, ``logprobs``,
``top_logprobs``, ...) pass through; the ``logprobs`` of a reply are returned
(`LLMResponse.logprobs`).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import re
import time
import weakref
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from prefduel.llm.connection import EndpointHistory, classify, connection_message
from prefduel.llm.errors import LLMCallError, LLMConfigError
from prefduel.llm.redaction import REDACTED, scrub, scrub_reply
from prefduel.llm.request import LLMRequest, LLMResponse, TokenLogprob, Usage
from prefduel.llm.retry import is_retryable_status, parse_retry_after
from prefduel.llm.structured import refuses_format
from prefduel.llm.urls import check_base_url, public_url

#: Default name of the API-key environment variable.
DEFAULT_KEY_ENV = "OPENAI_API_KEY"
#: Where the SDK sends requests when neither ``base_url`` nor ``$OPENAI_BASE_URL`` is set.
SDK_DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: Key sent when ``api_key_env=None`` (servers that need no key ignore it).
NO_KEY = "EMPTY"
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SECRETS = (
    (re.compile(r"(?i)\b(bearer)\s+[^\s'\",})\]]+"), r"\1 ***"),
    (re.compile(r"\bsk-[A-Za-z0-9_\-*]{6,}"), "sk-***"),
)
_MESSAGE_LIMIT = 300
#: Names of extra headers whose values are credentials (scrubbed from replies too).
_SECRET_HEADER = re.compile(r"auth|key|token|secret|cookie|password|credential", re.IGNORECASE)


class OpenAIBackend:
    """One-attempt chat completions against an OpenAI-compatible endpoint.

    Args:
        base_url: The endpoint, e.g. ``http://127.0.0.1:8000/v1``; None uses the SDK default
            (``$OPENAI_BASE_URL`` or the OpenAI API).
        api_key_env: NAME of the environment variable with the API key (default
            ``OPENAI_API_KEY``); None for endpoints that need no key.
        timeout: Seconds per attempt (connect, read, write) before it fails as a timeout.
        pool_size: HTTP connections kept by the SDK's client (keep it >= the client's
            ``max_connections``).
        namespace: Cache namespace. Answers from endpoints that serve different weights under
            the same model name should use different namespaces (or cache files).
        headers: Extra HTTP headers sent with every request (not logged).

    Raises:
        LLMConfigError: The ``openai`` package is missing, ``api_key_env`` is not a variable
            name, or the variable is not set.
    """

    billable = True

    def __init__(
        self,
        base_url: str | None = None,
        *,
        api_key_env: str | None = DEFAULT_KEY_ENV,
        timeout: float = 60.0,
        pool_size: int = 256,
        namespace: str = "openai",
        headers: Mapping[str, str] | None = None,
    ) -> None:
        if importlib.util.find_spec("openai") is None:
            raise LLMConfigError(
                "the OpenAI-compatible backend needs the openai package: pip install "
                '"prefduel[llm]"'
            )
        if api_key_env is not None:
            if not isinstance(api_key_env, str) or not _ENV_NAME.match(api_key_env):
                raise LLMConfigError(
                    "api_key_env: expected the NAME of an environment variable (e.g. "
                    "OPENAI_API_KEY), got a value that is not a variable name"
                )
            if not os.environ.get(api_key_env):
                raise LLMConfigError(
                    f"environment variable {api_key_env} (the API key) is not set; export it, "
                    "or, for an endpoint that needs no key, use --no-api-key (api_key_env: "
                    "null in YAML, api_key_env=None in Python)"
                )
        if not timeout > 0:
            raise LLMConfigError(f"timeout: expected seconds > 0, got {timeout!r}")
        self._check_url(base_url)
        if not isinstance(pool_size, int) or pool_size < 1:
            raise LLMConfigError(f"pool_size: expected an int >= 1, got {pool_size!r}")
        self.base_url = base_url
        self.api_key_env = api_key_env
        self.timeout = float(timeout)
        self.pool_size = pool_size
        self.namespace = namespace
        self._headers = dict(headers or {})
        self._sdks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = (
            weakref.WeakKeyDictionary()
        )
        self._sent_to: str | None = None
        # what the endpoint did in this run, for the wording of connection errors
        self._history = EndpointHistory()

    @staticmethod
    def _check_url(base_url: str | None) -> None:
        """Refuse a base URL (or ``$OPENAI_BASE_URL``, the SDK's fallback) that cannot reach an
        endpoint, at once rather than after every retry."""
        where, url = "base_url", base_url
        if url is None and os.environ.get("OPENAI_BASE_URL") is not None:
            where, url = "$OPENAI_BASE_URL", os.environ["OPENAI_BASE_URL"]
        if url is None:
            return
        try:
            check_base_url(url, where)
        except ValueError as exc:
            raise LLMConfigError(f"{exc} (the base URL of the endpoint)") from None

    @property
    def endpoint(self) -> str:
        """The base URL requests go to, as `public_url` (never a key).

        The SDK's own resolved URL once it was built (a request was sent); before that,
        ``base_url``, else ``$OPENAI_BASE_URL``, else the OpenAI API (the SDK's defaults).
        """
        if self._sent_to is not None:
            return self._sent_to
        url = self.base_url or os.environ.get("OPENAI_BASE_URL") or SDK_DEFAULT_BASE_URL
        return public_url(url)

    def __repr__(self) -> str:
        return (
            f"OpenAIBackend(base_url={self.base_url!r}, api_key_env={self.api_key_env!r}, "
            f"timeout={self.timeout:g}, namespace={self.namespace!r})"
        )

    # -- secrets ---------------------------------------------------------------------------

    def redact(self, text: str) -> str:
        """``text`` without the API key, bearer tokens or ``sk-...`` strings."""
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        if key and len(key) >= 4:
            text = text.replace(key, "***")
        for pattern, replacement in _SECRETS:
            text = pattern.sub(replacement, text)
        for value in self._headers.values():
            if len(value) >= 4:
                text = text.replace(value, "***")
        return text

    def _reply_secrets(self, sdk: Any) -> list[str]:
        """The secret values a reply must not carry (see the module docstring)."""
        found: list[str] = []
        if self.api_key_env is not None:
            found += [getattr(sdk, "api_key", None) or "", os.environ.get(self.api_key_env, "")]
        for name, value in self._headers.items():
            if _SECRET_HEADER.search(name) and isinstance(value, str):
                parts = value.split(None, 1)
                found += [value, parts[1] if len(parts) == 2 else value]
        return [s for s in found if s and s != NO_KEY]

    def _scrubbed(self, response: LLMResponse, sdk: Any) -> LLMResponse:
        """``response`` without the secrets of `_reply_secrets` anywhere (`scrub_reply`)."""
        return scrub_reply(response, self._reply_secrets(sdk))

    def _short(self, text: str) -> str:
        text = " ".join(self.redact(text).split())
        return text if len(text) <= _MESSAGE_LIMIT else text[: _MESSAGE_LIMIT - 3] + "..."

    # -- the SDK client (one per event loop) -----------------------------------------------

    def _client(self) -> Any:
        loop = asyncio.get_running_loop()
        sdk = self._sdks.get(loop)
        if sdk is not None:
            return sdk
        import httpx2
        import openai

        if self.api_key_env is None:
            key = NO_KEY
        else:
            key = os.environ.get(self.api_key_env, "")
            if not key:
                raise LLMCallError(
                    f"environment variable {self.api_key_env} (the API key) is not set",
                    kind="config",
                    retryable=False,
                )
        http = openai.DefaultAsyncHttpxClient(
            limits=httpx2.Limits(
                max_connections=self.pool_size, max_keepalive_connections=self.pool_size
            ),
            timeout=httpx2.Timeout(self.timeout),
        )
        sdk = self._sdks[loop] = openai.AsyncOpenAI(
            api_key=key,
            base_url=self.base_url,
            max_retries=0,
            timeout=self.timeout,
            http_client=http,
            default_headers=self._headers or None,
        )
        self._sent_to = public_url(str(sdk.base_url))
        return sdk

    async def aclose(self) -> None:
        """Close the SDK client of the running loop (a new one is made on the next call).

        Each event loop gets its own SDK client (its connections belong to that loop).
        """
        sdk = self._sdks.pop(asyncio.get_running_loop(), None)
        if sdk is not None:
            await sdk.close()

    # -- one attempt -----------------------------------------------------------------------

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """Send ``request`` once.

        Returns:
            An ``ok`` response with text, reported model, finish reason and token usage,
            scrubbed of every secret (`scrub_reply`).

        Raises:
            LLMCallError: The attempt failed (see the module docstring for the kinds); its
                message is redacted (`redact`) whatever part of the reply it quotes.
        """
        try:
            return await self._complete(request)
        except LLMCallError as exc:
            raise LLMCallError(
                self.redact(str(exc)),
                kind=exc.kind,
                retryable=exc.retryable,
                status=exc.status,
                retry_after=exc.retry_after,
            ) from None

    async def _complete(self, request: LLMRequest) -> LLMResponse:
        import openai

        client = self._client()
        body = request.params.to_json()
        if request.seed is not None:
            body["seed"] = request.seed
        try:
            completion = await client.chat.completions.create(
                model=request.model,
                messages=[{"role": m.role, "content": m.content} for m in request.messages],
                extra_body=body or None,
            )
        except openai.APITimeoutError:
            raise LLMCallError(
                f"timeout: no answer within {self.timeout:g} s", kind="timeout", retryable=True
            ) from None
        except openai.APIConnectionError as exc:
            raise self._connection_error(exc) from None
        except openai.APIResponseValidationError as exc:
            self._history.record_answer()
            raise LLMCallError(
                f"malformed response: {self._short(exc.message)}",
                kind="malformed",
                retryable=True,
            ) from None
        except openai.APIStatusError as exc:
            self._history.record_answer()
            status = exc.status_code
            message = server_message(exc.body) or exc.message
            raise LLMCallError(
                f"HTTP {status} from {self.endpoint}: {self._short(message)}" + self._hint(status),
                kind="http",
                status=status,
                # a refused response_format is answered one rung down, not sent again
                retryable=is_retryable_status(status)
                and not refuses_format(request, status, message),
                retry_after=parse_retry_after(exc.response.headers),
            ) from None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            self._history.record_answer()
            raise LLMCallError(
                f"malformed response: not JSON ({self._short(str(exc))})",
                kind="malformed",
                retryable=True,
            ) from None
        self._history.record_answer()
        # scrubbed here, on the one path every reply takes before it is cached or written
        return self._scrubbed(self._parse(request, completion), client)

    def sdk(self) -> Any:
        """The ``openai`` SDK client of the running event loop (made at the first call; the
        Batch API client, `prefduel.llm.batchapi`, sends through it)."""
        return self._client()

    def read_completion(self, request: LLMRequest, completion: Any) -> LLMResponse:
        """A chat completion received otherwise (a line of a batch's output file, its objects
        readable as attributes) read as an online reply is: the same fields, scrubbed of every
        secret (`scrub_reply`).

        Raises:
            LLMCallError: As `complete`, for a completion without text (``malformed``) or one
                the content filter blocked (``refused``).
        """
        try:
            response = self._parse(request, completion)
        except LLMCallError as exc:
            raise LLMCallError(
                self.redact(str(exc)), kind=exc.kind, retryable=exc.retryable
            ) from None
        return self._scrubbed(response, self._client())

    def _connection_error(self, exc: Exception) -> LLMCallError:
        """The error of a failed connection, worded from what the endpoint did before."""
        cause = exc.__cause__
        detail = f"{type(cause).__name__}: {cause}" if cause is not None else str(exc)
        failure = classify(cause)
        self._history.record_failure(failure)
        message = connection_message(self.endpoint, failure, self._short(detail), self._history)
        return LLMCallError(message, kind="connection", retryable=True)

    def _hint(self, status: int) -> str:
        """What a permanent status usually means for this endpoint ("" when nothing)."""
        url = self.endpoint
        if status == 404 and not urlsplit(url).path.rstrip("/").endswith("/v1"):
            return (
                f"; the base URL of an OpenAI-compatible server usually ends in /v1: try "
                f"--base-url {url}/v1"
            )
        if status in (401, 403):
            if self.api_key_env is None:
                return "; the endpoint wants an API key: --api-key-env NAME"
            return f"; check the key in ${self.api_key_env}"
        return ""

    def _parse(self, request: LLMRequest, completion: Any) -> LLMResponse:
        if isinstance(completion, str):
            raise LLMCallError(
                f"malformed response: expected a JSON chat completion, got text "
                f"{self._short(completion[:80])!r}",
                kind="malformed",
                retryable=True,
            )
        try:
            choice = completion.choices[0]
            text = choice.message.content
            finish = choice.finish_reason
        except (AttributeError, IndexError, KeyError, TypeError):
            raise LLMCallError(
                "malformed response: no choices[0].message in the completion",
                kind="malformed",
                retryable=True,
            ) from None
        if not isinstance(text, str):
            if finish == "content_filter":
                raise LLMCallError(
                    "refused: the endpoint's content filter blocked the answer",
                    kind="refused",
                    retryable=False,
                )
            raise LLMCallError(
                f"malformed response: choices[0].message.content is {type(text).__name__} "
                f"(finish_reason {finish!r})",
                kind="malformed",
                retryable=True,
            )
        usage = getattr(completion, "usage", None)
        prompt = getattr(usage, "prompt_tokens", 0) if usage is not None else 0
        completion_tokens = getattr(usage, "completion_tokens", 0) if usage is not None else 0
        model = getattr(completion, "model", None)
        return LLMResponse(
            request=request,
            text=text,
            model=model if isinstance(model, str) and model else request.model,
            finish_reason=finish if isinstance(finish, str) else None,
            usage=Usage(
                prompt if isinstance(prompt, int) else 0,
                completion_tokens if isinstance(completion_tokens, int) else 0,
            ),
            created=time.time(),
            logprobs=token_logprobs(getattr(choice, "logprobs", None)),
        )


def server_message(body: Any) -> str | None:
    """The server's own words in an error body: OpenAI's ``message``, FastAPI's ``detail`` (a
    string, or a list of validation errors ``{"loc": [...], "msg": ...}``), or plain text."""
    if isinstance(body, str):
        return body.strip() or None
    if not isinstance(body, Mapping):
        return None
    for name in ("message", "detail", "error", "msg"):
        value = body.get(name)
        if isinstance(value, str) and value.strip():
            return value.strip()
        if isinstance(value, Mapping):
            return server_message(value)
        if isinstance(value, list) and value:
            parts = []
            for item in value:
                if isinstance(item, Mapping):
                    where = ".".join(str(x) for x in item.get("loc") or ())
                    text = str(item.get("msg") or item.get("message") or item)
                    parts.append(f"{where}: {text}" if where else text)
                else:
                    parts.append(str(item))
            return "; ".join(parts)
    return None


def token_logprobs(logprobs: Any) -> tuple[TokenLogprob, ...] | None:
    """``choices[0].logprobs.content`` of a completion as `TokenLogprob` s (None when absent
    or not in the documented shape)."""
    content = getattr(logprobs, "content", None)
    if content is None and isinstance(logprobs, Mapping):
        content = logprobs.get("content")
    if not isinstance(content, list) or not content:
        return None
    out = []
    for entry in content:
        token, logprob = _field(entry, "token"), _field(entry, "logprob")
        if not isinstance(token, str) or not isinstance(logprob, int | float):
            return None
        top = []
        for alt in _field(entry, "top_logprobs") or ():
            alt_token, alt_logprob = _field(alt, "token"), _field(alt, "logprob")
            if isinstance(alt_token, str) and isinstance(alt_logprob, int | float):
                top.append((alt_token, float(alt_logprob)))
        out.append(TokenLogprob(token, float(logprob), tuple(top)))
    return tuple(out)


def _field(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)


__all__ = [
    "DEFAULT_KEY_ENV",
    "NO_KEY",
    "REDACTED",
    "SDK_DEFAULT_BASE_URL",
    "OpenAIBackend",
    "check_base_url",
    "public_url",
    "scrub",
    "scrub_reply",
    "server_message",
    "token_logprobs",
]
