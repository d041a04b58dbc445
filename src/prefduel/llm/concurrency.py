"""Concurrent work that never leaves a task behind.

``asyncio.gather`` returns at the first exception and lets the other awaitables run on; when
the event loop then closes, ``asyncio.run`` cancels them, and any that end with an exception
of their own (a call failing because its server was killed) is logged as *unhandled exception
during asyncio.run() shutdown*, with a traceback. `gather_or_cancel` cancels the others at the
first failure and waits for them before raising that failure; `each` does the same for a
bounded batch. Both PrefDisco and the stage engine use them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

Item = TypeVar("Item")


async def gather_or_cancel(*awaitables: Awaitable[Any]) -> list[Any]:
    """Await all, results in order; at the first exception cancel the rest, wait for them to
    end (whatever they raise while ending is dropped) and raise that first exception."""
    tasks = [asyncio.ensure_future(a) for a in awaitables]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


async def each(
    items: Sequence[Item],
    work: Callable[[Item], Awaitable[None]],
    *,
    in_flight: int,
    progress: Callable[[int, int], None] | None = None,
) -> None:
    """Work on ``items`` concurrently, at most ``in_flight`` at once; an exception out of
    ``work`` cancels and awaits the other items before it is raised.

    Args:
        items: The items.
        work: The work on one item (failures it expects are its own business).
        in_flight: Items worked on at once.
        progress: Called with ``(done, total)`` after each item.
    """
    gate = asyncio.Semaphore(in_flight)
    done = 0

    async def one(item: Item) -> None:
        nonlocal done
        async with gate:
            await work(item)
            done += 1
            if progress is not None:
                progress(done, len(items))

    await gather_or_cancel(*(one(item) for item in items))


__all__ = ["each", "gather_or_cancel"]
