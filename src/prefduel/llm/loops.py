"""The client's event-loop plumbing: per-loop state, and running a coroutine from sync code."""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Coroutine
from typing import Any, TypeVar

from prefduel.llm.request import LLMResponse

T = TypeVar("T")


class LoopState:
    """The asyncio objects of one event loop (a client may be used from several loops)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, slots: int) -> None:
        self.loop = loop
        self.semaphore = asyncio.Semaphore(slots)
        self.inflight: dict[str, asyncio.Future[LLMResponse]] = {}


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion from synchronous code.

    Uses ``asyncio.run`` when no event loop runs in this thread; otherwise (Jupyter, or inside
    async code) runs it in a fresh loop on a worker thread and waits.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()
