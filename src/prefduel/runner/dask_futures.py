"""`DaskExecutor`: a `concurrent.futures.Executor` over a connected Dask client, and the
`ClusterError` it (and `prefduel.runner.distributed`, which re-exports both) raises.

Each ``submit`` is one Dask task; its outcome is mirrored into a plain
`concurrent.futures.Future`, so `sweep` drives a cluster exactly like its local
process pool. A task lost on the cluster fails its future with a `ClusterError` instead of
looking cancelled, so no cell is silently skipped.
"""

from __future__ import annotations

import contextlib
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future, InvalidStateError
from typing import Any

from prefduel.core.errors import PrefduelError
from prefduel.runner.sweep import Unit


class ClusterError(PrefduelError, RuntimeError):
    """The Dask cluster cannot be used: ``distributed`` missing, scheduler unreachable, no or
    unsuitable workers, or a unit lost on the cluster."""


class _DaskFuture(Future):
    """A `concurrent.futures.Future` mirroring one Dask future.

    ``cancel()`` succeeds until the result has arrived here (Dask does not tell the client
    whether a task has started), cancels the Dask task, and wakes ``as_completed``/``wait``
    at once. The Dask outcome is copied over by a done-callback; an outcome arriving after a
    cancel is dropped.
    """

    def __init__(self, executor: DaskExecutor, dask_future: Any, label: str) -> None:
        super().__init__()
        self._executor = executor
        self._dask_future: Any = dask_future
        self._label = label
        self._lock = threading.RLock()
        self._notified = False

    def cancel(self) -> bool:
        """Cancel unless finished; True if the future is (now) cancelled."""
        with self._lock:
            if not super().cancel():
                return False
            if self._notified:
                return True
            self._notified = True
            dask_future, self._dask_future = self._dask_future, None
        self.set_running_or_notify_cancel()  # CANCELLED -> CANCELLED_AND_NOTIFIED: wakes waiters
        if dask_future is not None:
            self._executor._release(dask_future, cancel=True)
        return True

    def _settle(self, dask_future: Any) -> None:
        """Done-callback of the Dask future (runs in Dask's callback thread)."""
        if self.done():  # cancelled, or failed by the no-worker watchdog: nothing to copy
            with self._lock:
                self._dask_future = None
            return
        try:
            status = dask_future.status
            try:
                result = dask_future.result()
            except BaseException as exc:  # the task's own exception, or the cancellation
                self.set_exception(self._executor._translate(exc, status, self._label))
            else:
                self.set_result(result)
        except InvalidStateError:
            pass  # cancelled meanwhile; cancel() has woken the waiters
        finally:
            with self._lock:
                self._dask_future = None
            self._executor._release(dask_future, cancel=False)


class DaskExecutor(Executor):
    """`concurrent.futures.Executor` over a connected `distributed.Client`.

    Unlike ``Client.get_executor()``, every ``submit`` is a distinct task (``pure=False``, so
    a unit re-submitted after an interrupted run is computed again, not looked up), results are
    released on the cluster as soon as they have arrived, and a task lost on the cluster
    (cancelled by the scheduler, connection lost, workers repeatedly dying) fails its future
    with a `ClusterError` instead of looking cancelled, so no cell is silently skipped.

    Args:
        client: A connected ``distributed.Client``; not closed by `shutdown`.
        address: Scheduler address, used in error messages.
    """

    def __init__(self, client: Any, address: str, *, no_worker_timeout: float = 60.0) -> None:
        self.client = client
        self.address = address
        self.no_worker_timeout = no_worker_timeout
        self._pending: set[Any] = set()
        self._futures: weakref.WeakSet[_DaskFuture] = weakref.WeakSet()
        self._lock = threading.Lock()
        self._shutdown = False
        self._watchdog: threading.Thread | None = None

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        """Run ``fn(*args, **kwargs)`` on a worker; returns a concurrent.futures Future.

        Raises:
            RuntimeError: after `shutdown`.
        """
        with self._lock:
            if self._shutdown:
                raise RuntimeError("cannot schedule new futures after shutdown")
        dask_future = self.client.submit(fn, *args, pure=False, **kwargs)
        future = _DaskFuture(self, dask_future, _label(fn, args))
        with self._lock:
            self._pending.add(dask_future)
            self._futures.add(future)
        dask_future.add_done_callback(future._settle)
        self._start_watchdog()
        return future

    def _start_watchdog(self) -> None:
        """Watch for a cluster with no workers left while units wait (Dask would wait forever)."""
        with self._lock:
            if self._watchdog is not None:
                return
            self._watchdog = threading.Thread(
                target=self._watch_workers, name="prefduel-dask-workers", daemon=True
            )
        self._watchdog.start()

    def _worker_count(self) -> int | None:
        try:
            return len(self.client.scheduler_info().get("workers", {}))
        except Exception:  # the client is closing: nothing to watch
            return None

    def _watch_workers(self) -> None:
        without_since: float | None = None
        poll = min(1.0, self.no_worker_timeout / 4)
        while not self._shutdown:
            time.sleep(poll)
            with self._lock:
                waiting = bool(self._pending)
            count = self._worker_count() if waiting else 1
            if count is None:
                return
            if count > 0:
                without_since = None
                continue
            without_since = without_since or time.monotonic()
            if time.monotonic() - without_since >= self.no_worker_timeout:
                self._fail_waiting(
                    ClusterError(
                        f"no Dask workers left on {self.address} for "
                        f"{self.no_worker_timeout:g} s while units were waiting; start "
                        f"workers (dask worker {self.address} --nthreads 1) and re-run: "
                        "finished rows are kept and the run resumes"
                    )
                )
                return

    def _fail_waiting(self, error: ClusterError) -> None:
        """Fail every unfinished future with ``error`` and cancel its task on the cluster."""
        with self._lock:
            futures = [f for f in self._futures if not f.done()]
            pending, self._pending = list(self._pending), set()
        for future in futures:
            with contextlib.suppress(InvalidStateError):
                future.set_exception(error)
        if pending:
            with contextlib.suppress(Exception):
                self.client.cancel(pending)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Stop accepting work; optionally cancel what has not finished, then wait for the rest.

        Args:
            wait: Block until every submitted future is done (or cancelled).
            cancel_futures: Cancel every future that has not finished (on the cluster too).
        """
        with self._lock:
            self._shutdown = True
            futures = list(self._futures)
        if cancel_futures:
            with self._lock:
                pending, self._pending = list(self._pending), set()
            for future in futures:
                future.cancel()  # releases nothing more: the batch below cancels them at once
            if pending:
                with contextlib.suppress(Exception):  # the client may be closing already
                    self.client.cancel(pending)
        if wait:
            for future in futures:
                with contextlib.suppress(Exception):  # cancelled
                    future.exception()

    def _release(self, dask_future: Any, *, cancel: bool) -> None:
        with self._lock:
            if dask_future not in self._pending:
                return
            self._pending.discard(dask_future)
        if cancel:
            with contextlib.suppress(Exception):
                dask_future.cancel()

    def _translate(self, exc: BaseException, status: str, label: str) -> BaseException:
        """The exception a future gets: the task's own, or a ClusterError for cluster trouble."""
        if type(exc).__name__ == "KilledWorker":
            error = ClusterError(
                f"{label}: Dask workers of {self.address} died while running it, again and "
                f"again ({exc}); rows stored so far are kept, and re-running resumes"
            )
        elif status != "error":  # cancelled or lost outside prefduel
            error = ClusterError(
                f"{label} was lost on the Dask cluster at {self.address} "
                f"({type(exc).__name__}: {exc}); rows stored so far are kept, and re-running "
                "resumes"
            )
        else:
            return exc
        error.__cause__ = exc
        return error


def _label(fn: Callable[..., Any], args: Sequence[Any]) -> str:
    if args and isinstance(args[0], Unit):
        return f"unit world {args[0].world!r} seed {args[0].seed}"
    return f"task {getattr(fn, '__name__', fn)!s}"


__all__ = ["ClusterError", "DaskExecutor"]
