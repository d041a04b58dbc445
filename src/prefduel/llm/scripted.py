"""The scripted backend: every role played offline, deterministically.

A `ScriptedBackend` answers a request with ``handlers[request.role](request)``, a pure
function of the request. Randomness comes only from `request_rng`, which is derived from
``(role, messages, sample index)`` (not from the model name or the sampling parameters), so the
same prompt and sample always get the same answer, in every process, and repeated samples
(``sample=0, 1, ...``) differ::

    def judge(request: LLMRequest) -> str:
        rng = request_rng(request)
        return "A" if rng.random() < p_first_wins(request.messages) else "B"

    backend = ScriptedBackend(handlers={"judge": judge})     # other roles keep the defaults
    client = LLMClient(backend, cache="llm-cache.sqlite")

The default handlers (`DEFAULT_HANDLERS`) return placeholder text of the right kind
(``question``, ``answer``, ``rater``: a score 1-10, ``judge``: ``A`` or ``B`` at random); any
other role gets `echo_handler`. ``prefduel.datagen`` registers handlers that parse its
own prompt formats; its judge picks follow TutorSim's latent preferences, so a whole pipeline
runs offline with realistic structure. Scripted answers live in the cache namespace
``"scripted"`` (never mixed with real answers) and cost nothing.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Callable, Mapping

import numpy as np

from prefduel.core.rng import stream
from prefduel.llm.errors import LLMCallError
from prefduel.llm.prices import estimate_tokens
from prefduel.llm.request import LLMRequest, LLMResponse, Usage

#: A scripted role: a pure function from the request to the answer text.
Handler = Callable[[LLMRequest], str]


def scripted_digest(request: LLMRequest) -> str:
    """SHA-256 (hex) of ``(role, messages, sample)``: what a scripted answer may depend on."""
    payload = json.dumps(
        [request.role, [[m.role, m.content] for m in request.messages], request.sample],
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def request_rng(request: LLMRequest, *labels: int | str) -> np.random.Generator:
    """The random stream of a scripted answer to ``request``.

    Seeded from all 256 bits of `scripted_digest` through
    `prefduel.core.rng.stream`; ``labels`` select independent sub-streams.

    Args:
        request: The request answered.
        *labels: Optional stream labels (ints below ``2**32`` or strings).

    Returns:
        A generator that is the same in every process for the same arguments.
    """
    digest = scripted_digest(request)
    words = [int(digest[i : i + 8], 16) for i in range(0, 64, 8)]
    return stream(words[0], *words[1:], *labels)


def _last(request: LLMRequest, role: str) -> str:
    for message in reversed(request.messages):
        if message.role == role:
            return message.content
    return ""


def _snippet(text: str, limit: int = 60) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3].rstrip() + "..."


def echo_handler(request: LLMRequest) -> str:
    """Fallback: ``[scripted ROLE #digest] <start of the last user message>``."""
    digest = scripted_digest(request)[:8]
    return f"[scripted {request.role} #{digest}] {_snippet(_last(request, 'user'))}"


def question_handler(request: LLMRequest) -> str:
    """A placeholder question about the last user message."""
    rng = request_rng(request)
    stem = ("Why does", "How would you explain", "What is the key idea behind", "Can you show")
    topic = _snippet(_last(request, "user"), 48) or "this topic"
    return f"{stem[int(rng.integers(len(stem)))]} {topic}? (scripted #{request.sample})"


def answer_handler(request: LLMRequest) -> str:
    """A placeholder answer in the voice of the system prompt's first line."""
    persona = _snippet(_last(request, "system").split("\n")[0], 40) or "assistant"
    words = int(request_rng(request).integers(20, 60))
    return f"[{persona}] Scripted answer ({words} words) to: {_snippet(_last(request, 'user'))}"


def rater_handler(request: LLMRequest) -> str:
    """A placeholder rating: an integer 1-10."""
    return str(int(request_rng(request).integers(1, 11)))


def judge_handler(request: LLMRequest) -> str:
    """A placeholder pick: ``A`` or ``B`` with equal chance (datagen registers the real one)."""
    return "A" if request_rng(request).random() < 0.5 else "B"


#: Handlers used for roles the caller does not override.
DEFAULT_HANDLERS: Mapping[str, Handler] = {
    "question": question_handler,
    "answer": answer_handler,
    "rater": rater_handler,
    "judge": judge_handler,
}


class ScriptedBackend:
    """An offline backend: ``handlers[request.role](request)`` answers each request.

    Args:
        handlers: Role tag -> handler; these replace the defaults for their roles.
        default: Handler for roles with none (default `echo_handler`).
        use_defaults: Include `DEFAULT_HANDLERS` for roles not in ``handlers``.
        latency: Seconds each answer takes (``asyncio.sleep``; 0 answers at once).
        fail_unknown_roles: Raise a permanent error for roles without a handler instead of
            using ``default`` (catches typos in role tags).
    """

    namespace = "scripted"
    billable = False

    def __init__(
        self,
        handlers: Mapping[str, Handler] | None = None,
        *,
        default: Handler = echo_handler,
        use_defaults: bool = True,
        latency: float = 0.0,
        fail_unknown_roles: bool = False,
    ) -> None:
        self.handlers: dict[str, Handler] = {
            **(DEFAULT_HANDLERS if use_defaults else {}),
            **(handlers or {}),
        }
        self.default = default
        self.latency = latency
        self.fail_unknown_roles = fail_unknown_roles

    def __repr__(self) -> str:
        return f"ScriptedBackend(roles={sorted(self.handlers)})"

    def respond(self, request: LLMRequest) -> str:
        """The answer text (synchronous and pure).

        Raises:
            LLMCallError: No handler for the role (with ``fail_unknown_roles``), or the handler
                raised or returned something other than a string (not retryable).
        """
        handler = self.handlers.get(request.role)
        if handler is None:
            if self.fail_unknown_roles:
                raise LLMCallError(
                    f"scripted backend: no handler for role {request.role!r}; "
                    f"known roles: {sorted(self.handlers)}",
                    kind="backend",
                    retryable=False,
                )
            handler = self.default
        try:
            text = handler(request)
        except LLMCallError:
            raise
        except Exception as exc:
            raise LLMCallError(
                f"scripted {request.role!r} handler {getattr(handler, '__name__', handler)} "
                f"raised {type(exc).__name__}: {exc}",
                kind="backend",
                retryable=False,
            ) from exc
        if not isinstance(text, str):
            raise LLMCallError(
                f"scripted {request.role!r} handler returned {type(text).__name__}, expected str",
                kind="backend",
                retryable=False,
            )
        return text

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """One answer (see `respond`), with estimated token counts."""
        if self.latency > 0:
            await asyncio.sleep(self.latency)
        text = self.respond(request)
        return LLMResponse(
            request=request,
            text=text,
            model=request.model,
            finish_reason="stop",
            usage=Usage(
                sum(estimate_tokens(m.content) for m in request.messages), estimate_tokens(text)
            ),
            created=time.time(),
        )

    async def aclose(self) -> None:
        """Nothing to release."""
