"""Run a sweep's units on an existing Dask cluster (``prefduel run --scheduler ...``).

`dask_executor` connects a `distributed.Client` to a running scheduler, checks that
the workers can run prefduel (same version, stored worlds and policy files readable) and
yields a `DaskExecutor`, a `concurrent.futures.Executor` that
`sweep` uses like its local process pool::

    with dask_executor("tcp://10.0.0.5:8786", worlds=worlds, policies=policies) as executor:
        rows = sweep(worlds, seeds, policies, "results.jsonl", executor=executor)

Workers only compute `run_unit`; the rows come back to this
process, which alone appends them to the results file. When a worker dies (killed, out of
memory, machine lost), the scheduler runs its unfinished units again on another worker: a unit's
rows arrive once, from whichever run finished, so no row is lost or written twice. A unit whose
workers keep dying (``distributed.scheduler.allowed-failures`` times, 3 by default) fails the
sweep with a `ClusterError`; the rows stored until then are kept and re-running resumes.

``distributed`` is an optional dependency (``pip install "prefduel[dask]"``), imported only
when a cluster is used.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, Future, InvalidStateError
from typing import Any

from prefduel import __version__
from prefduel.core.errors import PrefduelError, SpecError
from prefduel.policies.loading import split_external
from prefduel.runner.sweep import Unit, world_label
from prefduel.worlds.roster_file import is_roster_file
from prefduel.worlds.rosters import is_world_path

#: How to install the optional dependency.
INSTALL_HINT = 'pip install "prefduel[dask]"'


class ClusterError(PrefduelError, RuntimeError):
    """The Dask cluster cannot be used: ``distributed`` missing, scheduler unreachable, no or
    unsuitable workers, or a unit lost on the cluster."""


def import_distributed() -> Any:
    """Import and return the ``distributed`` package.

    Raises:
        ClusterError: if it is not installed (the message gives the pip command).
    """
    try:
        import distributed
    except ImportError as exc:
        raise ClusterError(
            f"running on a Dask cluster needs the optional dependency 'distributed' ({exc}); "
            f"install it with: {INSTALL_HINT}"
        ) from exc
    return distributed


def default_timeout() -> float:
    """Seconds to wait for the scheduler and its first worker: Dask's connect timeout
    (``distributed.comm.timeouts.connect``, 30 s unless configured, e.g. by the environment
    variable ``DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT=10s``)."""
    import dask.config
    from dask.utils import parse_timedelta

    return float(parse_timedelta(dask.config.get("distributed.comm.timeouts.connect"), "s"))


# -- the executor ----------------------------------------------------------------------------


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


# -- connecting ------------------------------------------------------------------------------


def worker_needs(worlds: Sequence[str], policies: Sequence[str]) -> tuple[list[str], list[str]]:
    """What every worker must reach to run a grid: stored-world paths and policy files, and
    modules of ``module:Class`` policies.

    Args:
        worlds: World names as given to `sweep`.
        policies: Policy specs as given to ``sweep``.

    Returns:
        ``(paths, modules)``, each without duplicates, in order. Paths missing here are left
        out: `sweep` reports them before any work.
    """
    paths: list[str] = []
    modules: list[str] = []
    for name in worlds:
        label = world_label(name)
        if label and (is_world_path(label) or is_roster_file(label)) and os.path.exists(label):
            paths.append(label)
    for spec in policies:
        try:
            external = split_external(spec.strip())
        except SpecError:
            continue  # malformed: sweep reports it
        if external is None:
            continue
        target = external[0]
        if target.endswith(".py") or "/" in target or "\\" in target:
            if os.path.exists(target):
                paths.append(os.path.normpath(target))
        else:
            modules.append(target)
    return list(dict.fromkeys(paths)), list(dict.fromkeys(modules))


def _make_probe() -> Callable[[str, list[str], list[str]], dict[str, Any]]:
    """The function run on every worker by `check_workers`.

    It is built here, as a closure, so that it is pickled by value: it must run even on a
    worker that cannot import prefduel.
    """

    def probe(package: str, paths: list[str], modules: list[str]) -> dict[str, Any]:
        import importlib
        import importlib.util
        import os

        info: dict[str, Any] = {"cwd": os.getcwd()}
        try:
            info["version"] = importlib.import_module(package).__version__
        except Exception as exc:
            info["error"] = f"cannot import {package} ({type(exc).__name__}: {exc})"
            return info
        info["missing"] = [p for p in paths if not os.access(p, os.R_OK)]
        info["modules"] = []
        for module in modules:
            try:
                found = importlib.util.find_spec(module) is not None
            except Exception:
                found = False
            if not found:
                info["modules"].append(module)
        return info

    return probe


def check_workers(
    client: Any,
    address: str,
    *,
    paths: Sequence[str] = (),
    modules: Sequence[str] = (),
    package: str = "prefduel",
    version: str = __version__,
) -> int:
    """Check that every worker imports ``package`` at ``version`` and reaches the paths and
    modules a sweep needs.

    Args:
        client: A connected ``distributed.Client``.
        address: Scheduler address, for the messages.
        paths: Files or directories the workers must read (relative paths are resolved in
            each worker's working directory).
        modules: Modules the workers must be able to import.
        package: The package to import (a parameter for tests).
        version: Its required ``__version__``.

    Returns:
        The number of workers checked.

    Raises:
        ClusterError: listing every worker that fails, and why.
    """
    replies = client.run(_make_probe(), package, list(paths), list(modules), on_error="return")
    problems = []
    for worker, info in sorted(replies.items()):
        if isinstance(info, BaseException):
            problems.append(f"worker {worker}: the check failed ({type(info).__name__}: {info})")
        elif "error" in info:
            problems.append(
                f"worker {worker}: {info['error']}; install prefduel {version} with its "
                f"dask extra ({INSTALL_HINT}) in the Python the workers run"
            )
        else:
            if info["version"] != version:
                problems.append(
                    f"worker {worker}: runs prefduel {info['version']}, this client "
                    f"{version}; install the same version everywhere"
                )
            if info["missing"]:
                problems.append(
                    f"worker {worker} (working directory {info['cwd']}) cannot read "
                    f"{', '.join(info['missing'])}; stored worlds and policy files must be "
                    "readable by every worker at the same path (use absolute paths on a shared "
                    "file system)"
                )
            if info["modules"]:
                problems.append(
                    f"worker {worker} cannot import {', '.join(info['modules'])}; install the "
                    "policy modules on every worker"
                )
    if problems:
        raise ClusterError(
            f"the Dask cluster at {address} cannot run this sweep:\n  " + "\n  ".join(problems)
        )
    return len(replies)


class _QuietLogs:
    """Raises Dask's client-side loggers to CRITICAL until `close`: a lost scheduler or worker
    is reported once, by the error prefduel raises, not first as Dask's own tracebacks."""

    NAMES = ("distributed.client", "distributed.utils", "distributed.comm", "distributed.core")

    def __init__(self) -> None:
        self._levels = {name: logging.getLogger(name).level for name in self.NAMES}
        for name in self.NAMES:
            logging.getLogger(name).setLevel(logging.CRITICAL)

    def close(self) -> None:
        for name, level in self._levels.items():
            logging.getLogger(name).setLevel(level)


@contextlib.contextmanager
def dask_executor(
    address: str,
    *,
    timeout: float | None = None,
    worlds: Sequence[str] = (),
    policies: Sequence[str] = (),
) -> Iterator[DaskExecutor]:
    """Connect to a running Dask scheduler and yield an executor for
    `sweep`.

    On exit, units that have not finished are cancelled on the cluster and the client is
    closed (the cluster itself keeps running).

    Args:
        address: Scheduler address, e.g. ``tcp://10.0.0.5:8786``.
        timeout: Seconds to wait for the scheduler, and then for at least one worker
            (default: `default_timeout`).
        worlds: The grid's worlds; stored-world paths among them are checked on every worker.
        policies: The grid's policy specs; policy files and modules are checked on every worker.

    Yields:
        A `DaskExecutor` bound to the connected client.

    Raises:
        ClusterError: ``distributed`` not installed, a malformed address, scheduler unreachable
            within ``timeout``, no worker within ``timeout``, or workers that cannot run the
            grid (see `check_workers`).
    """
    distributed = import_distributed()
    from distributed.comm.addressing import parse_address, parse_host_port

    if timeout is None:
        timeout = default_timeout()
    try:
        scheme, location = parse_address(address)
        if scheme in ("tcp", "tls"):
            parse_host_port(location)
    except (ValueError, TypeError) as exc:
        raise ClusterError(
            f"invalid Dask scheduler address {address!r} ({exc}); expected e.g. tcp://HOST:8786"
        ) from exc
    try:
        client = distributed.Client(address, timeout=timeout, set_as_default=False)
    except (OSError, TimeoutError, ValueError, TypeError) as exc:
        raise ClusterError(
            f"cannot reach the Dask scheduler at {address} within {timeout:g} s "
            f"({type(exc).__name__}: {exc}); start one with `dask scheduler` and pass its "
            "address, e.g. tcp://HOST:8786"
        ) from exc
    executor = None
    quiet = _QuietLogs()
    try:
        try:
            client.wait_for_workers(1, timeout=timeout)
        except (OSError, TimeoutError) as exc:
            raise ClusterError(
                f"the Dask scheduler at {address} has no workers after {timeout:g} s; start "
                f"some with: dask worker {address} --nworkers N --nthreads 1"
            ) from exc
        paths, modules = worker_needs(worlds, policies)
        check_workers(client, address, paths=paths, modules=modules)
        executor = DaskExecutor(client, address, no_worker_timeout=max(timeout, 1.0))
        yield executor
    finally:
        try:
            if executor is not None:
                executor.shutdown(wait=False, cancel_futures=True)
        finally:
            with contextlib.suppress(Exception):
                client.close(timeout=timeout)
            quiet.close()


__all__ = [
    "INSTALL_HINT",
    "ClusterError",
    "DaskExecutor",
    "check_workers",
    "dask_executor",
    "default_timeout",
    "import_distributed",
    "worker_needs",
]
