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
when a cluster is used. The executor itself, `DaskExecutor`, and `ClusterError` live in
`prefduel.runner.dask_futures` and are re-exported here.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from prefduel import __version__
from prefduel.core.errors import SpecError
from prefduel.policies.loading import split_external
from prefduel.runner.dask_futures import ClusterError, DaskExecutor
from prefduel.worlds.spec import world_kind, world_label

#: How to install the optional dependency.
INSTALL_HINT = 'pip install "prefduel[dask]"'


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
        if label and world_kind(label) in ("roster-file", "stored") and os.path.exists(label):
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
        problems += _worker_problems(worker, info, version)
    if problems:
        raise ClusterError(
            f"the Dask cluster at {address} cannot run this sweep:\n  " + "\n  ".join(problems)
        )
    return len(replies)


def _worker_problems(worker: str, info: dict[str, Any] | BaseException, version: str) -> list[str]:
    """What keeps one worker from running the sweep, from its probe reply (empty: nothing)."""
    if isinstance(info, BaseException):
        return [f"worker {worker}: the check failed ({type(info).__name__}: {info})"]
    if "error" in info:
        return [
            f"worker {worker}: {info['error']}; install prefduel {version} with its "
            f"dask extra ({INSTALL_HINT}) in the Python the workers run"
        ]
    problems = []
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
    return problems


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
    if timeout is None:
        timeout = default_timeout()
    _check_address(address)
    client = _connect(distributed, address, timeout)
    executor = None
    quiet = _QuietLogs()
    try:
        _wait_for_workers(client, address, timeout)
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


def _check_address(address: str) -> None:
    """A scheduler address Dask can parse (``tcp``/``tls`` ones with a host and port).

    Raises:
        ClusterError: naming the address and showing the expected form.
    """
    from distributed.comm.addressing import parse_address, parse_host_port

    try:
        scheme, location = parse_address(address)
        if scheme in ("tcp", "tls"):
            parse_host_port(location)
    except (ValueError, TypeError) as exc:
        raise ClusterError(
            f"invalid Dask scheduler address {address!r} ({exc}); expected e.g. tcp://HOST:8786"
        ) from exc


def _connect(distributed: Any, address: str, timeout: float) -> Any:
    """A ``distributed.Client`` connected to the scheduler at ``address``.

    Raises:
        ClusterError: the scheduler is not reachable within ``timeout`` seconds.
    """
    try:
        return distributed.Client(address, timeout=timeout, set_as_default=False)
    except (OSError, TimeoutError, ValueError, TypeError) as exc:
        raise ClusterError(
            f"cannot reach the Dask scheduler at {address} within {timeout:g} s "
            f"({type(exc).__name__}: {exc}); start one with `dask scheduler` and pass its "
            "address, e.g. tcp://HOST:8786"
        ) from exc


def _wait_for_workers(client: Any, address: str, timeout: float) -> None:
    """Wait until the scheduler has a worker.

    Raises:
        ClusterError: none within ``timeout`` seconds (the message says how to start some).
    """
    try:
        client.wait_for_workers(1, timeout=timeout)
    except (OSError, TimeoutError) as exc:
        raise ClusterError(
            f"the Dask scheduler at {address} has no workers after {timeout:g} s; start "
            f"some with: dask worker {address} --nworkers N --nthreads 1"
        ) from exc


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
