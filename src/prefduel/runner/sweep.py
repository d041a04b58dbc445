"""Sweep a grid of worlds x seeds x policies, in parallel, resumably, into a JSONL store.

A *cell* is one ``(world, seed, policy)``; besides the policy cells, every ``(world, seed)`` gets
its reference rows (floor, random, oracles, ...; see `prefduel.runner.references`).
Cells already in the results file are skipped, so re-running an interrupted sweep resumes it.

The work is cut into *units*, and a unit's rows are stored as soon as it finishes (a kill loses
only the units in flight). In-process (``jobs=1``) and on a passed executor, a unit is one
unfinished policy cell, or the missing references of one ``(world, seed)``. With ``jobs>1`` local
workers, a unit is all the missing cells of one ``(world, seed)``, so one worker builds that world
(a TutorSim world of 350 arrivals: about 0.18 s of CPU in a worker, on a shared 2-core machine)
instead of every worker that picks up one of its cells; only the last ``jobs`` pairs stay cut per
cell, so a small grid still keeps every worker busy and the workers finish together
(`plan_units`). A worker keeps the last few worlds it built for the sweep. Units run on any
`concurrent.futures.Executor`: none for ``jobs=1`` (in-process), a `ProcessPoolExecutor` for
``jobs>1``, or one passed in, e.g. a Dask ``Client.get_executor()``. Workers only compute; the
coordinating process appends their rows to the store as units finish (so the file order may vary
between runs, the rows do not).
"""

from __future__ import annotations

import functools
import numbers
import sys
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Executor, Future, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from threadpoolctl import threadpool_limits
from tqdm import tqdm

from prefduel import __version__ as VERSION
from prefduel.core.errors import (
    PolicyError,
    PrefduelError,
    ResultsFileError,
    SpecError,
)
from prefduel.policies.base import NondeterministicPolicyError, check_policy
from prefduel.policies.loading import resolve_spec, split_external
from prefduel.runner.cell import run_cell
from prefduel.runner.isolated import run_isolated
from prefduel.runner.local_pool import LocalPool
from prefduel.runner.references import REFERENCES, reference_rows
from prefduel.runner.rows import row_key, row_version
from prefduel.runner.store import ResultsStore
from prefduel.worlds.spec import parse_world
from prefduel.worlds.world import World, load_world

ReferenceFn = Callable[[World], list[dict[str, Any]]]


@dataclass(frozen=True)
class Unit:
    """One unit of work on a world and seed: the policies to run on it, and whether to add the
    reference rows. Its rows are stored when it finishes; `plan_units` decides how many cells
    a unit holds (one, or all the missing cells of its world and seed).

    Attributes:
        world: World label (roster id or normalized stored-world path).
        seed: World seed.
        policies: Canonical policy specs still to run.
        references: Compute the reference rows too.
        allow_test: Passed to `WorldSpec.make`.
        reference_fn: Replacement for ``reference_rows`` (tests, extensions); must be picklable.
        sweep_id: Identifies the sweep, so a worker reuses a world it built for an earlier
            unit of the same sweep (never one from an earlier sweep, whose files may differ).
    """

    world: str
    seed: int
    policies: tuple[str, ...]
    references: bool
    allow_test: bool = False
    reference_fn: ReferenceFn | None = None
    sweep_id: str = ""


@dataclass
class UnitResult:
    """What a unit produced: the rows it finished and, if it stopped early, the error."""

    unit: Unit
    rows: list[dict[str, Any]] = field(default_factory=list)
    error: BaseException | None = None


# -- validation ------------------------------------------------------------------------------


def _check_world(name: str, allow_test: bool) -> str:
    """Validate one world name (cheaply for rosters, by loading for stored worlds); its label."""
    spec = parse_world(name)
    spec.check_allowed(allow_test)
    if spec.kind == "stored":
        load_world(spec.path or spec.label)  # the label of an ask track is DIR+askB
    return spec.label


def _check_policy(spec: str) -> str:
    """Resolve and build a policy spec once (so bad ids/settings/files fail now); canonical.

    A user's policy (``file.py:Class`` or ``module:Class``) is also run twice with one seed on
    `check_policy`'s small synthetic problem, so one that draws from a global generator
    (``np.random``, ``random``) is refused before any work instead of giving rows that no seed
    reproduces. Other violations are left to the run, whose error names the world, arrival
    and round.
    """
    resolved = resolve_spec(spec)
    if split_external(spec.strip()) is None:
        resolved.build()
        return resolved.canonical
    run_isolated(functools.partial(_check_external, resolved), f"policy {spec!r}")
    return resolved.canonical


def _check_external(resolved: Any) -> None:
    """Build a user's policy and run `check_policy` on it (in a child process)."""
    resolved.build()
    try:
        check_policy(resolved.build)
    except NondeterministicPolicyError:
        raise
    except PolicyError:
        pass  # left to the run, whose error names the world, arrival and round


def _check_seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise SpecError(f"seeds must be non-negative integers, got {seed!r}")
    if seed >= 2**32:
        raise SpecError(f"seeds must be below 2**32 (random streams take 32-bit seeds), got {seed}")
    return int(seed)


def _unique(items: Iterable[Any]) -> list[Any]:
    return list(dict.fromkeys(items))


def validate_grid(
    worlds: Sequence[str], seeds: Sequence[int], policies: Sequence[str], *, allow_test: bool
) -> tuple[list[str], list[int], list[str]]:
    """Check a grid before any work and return it normalized (labels, seeds, canonical specs).

    Raises:
        SpecError: empty lists, negative seeds, malformed policy specs or settings.
        UnknownIdError: unknown roster or policy (the message lists the known ones).
        LockedRosterError: a locked roster without ``allow_test``.
        WorldFormatError: a stored world that is missing or corrupt.
    """
    for what, items in (("worlds", worlds), ("seeds", seeds), ("policies", policies)):
        if isinstance(items, str) or not items:
            raise SpecError(f"{what}: expected a non-empty list, got {items!r}")
    labels = _unique(_check_world(w, allow_test) for w in worlds)
    seed_list = _unique(_check_seed(s) for s in seeds)
    specs = _unique(_check_policy(p) for p in policies)
    return labels, seed_list, specs


# -- planning --------------------------------------------------------------------------------


def plan_units(
    store: ResultsStore,
    worlds: Sequence[str],
    seeds: Sequence[int],
    specs: Sequence[str],
    *,
    allow_test: bool = False,
    reference_fn: ReferenceFn | None = None,
    workers: int = 1,
) -> list[Unit]:
    """Units for the cells of the grid that are not in ``store`` yet, in grid order.

    With one worker: one unit per policy cell, and one per ``(world, seed)`` for its
    references. With ``workers`` > 1 processes, each ``(world, seed)`` pair's missing cells
    (its policies, then its references) are one unit, so only one worker builds that world,
    except the last ``workers`` pairs with work, which stay cut per cell: on a small grid (as
    many pairs as workers or fewer) every cell is its own unit, so all workers get work, and
    on a large one the workers finish together instead of one waiting for another's last pair.

    A ``(world, seed)`` whose stored reference rows miss any name of
    `prefduel.runner.references.REFERENCES` gets its references computed again
    (rows already stored are not written twice).
    """
    sweep_id = uuid.uuid4().hex
    pairs = []  # (world, seed, missing policy specs, references missing)
    for world in worlds:
        for seed in seeds:
            missing = tuple(spec for spec in specs if ("policy", world, seed, spec) not in store)
            refs = any(("reference", world, seed, r) not in store for r in REFERENCES)
            if missing or refs:
                pairs.append((world, seed, missing, refs))
    grouped = len(pairs) - workers if workers > 1 else 0
    units = []
    for index, (world, seed, missing, refs) in enumerate(pairs):
        unit = functools.partial(
            Unit, world, seed, allow_test=allow_test, reference_fn=reference_fn, sweep_id=sweep_id
        )
        if index < grouped:
            units.append(unit(missing, refs))
            continue
        units += [unit((spec,), False) for spec in missing]
        if refs:
            units.append(unit((), True))
    return units


def _refuse_other_versions(
    store: ResultsStore, worlds: Sequence[str], seeds: Sequence[int], specs: Sequence[str]
) -> None:
    """Refuse to resume from rows of the grid written by another package version.

    Such a row would be skipped as finished and then pooled with this version's rows, though
    the code (or the worlds) that made it may differ.

    Raises:
        ResultsFileError: naming the file, the number of such rows and their versions.
    """
    grid = {
        (kind, world, seed, name)
        for world in worlds
        for seed in seeds
        for kind, names in (("policy", specs), ("reference", REFERENCES))
        for name in names
    }
    other = Counter(
        row_version(row) for row in store if row_key(row) in grid and row_version(row) != VERSION
    )
    if other:
        found = ", ".join(f"{n} row{'s' * (n > 1)} by {v}" for v, n in sorted(other.items()))
        raise ResultsFileError(
            f"results file {store.path} holds cells of this grid written by another prefduel "
            f"version ({found}; this is {VERSION}), which resuming would reuse as if this "
            "version had computed them. Write to a new file (--out), or remove those rows to "
            "recompute them"
        )


# -- running ---------------------------------------------------------------------------------


def _unit_world(unit: Unit) -> World:
    """The world of a unit, labelled with the unit's name (`WorldSpec.make`); a worker builds
    each world of a sweep once and reuses it for that world's other cells."""
    return _cached_world(unit.world, unit.seed, unit.allow_test, unit.sweep_id)


@functools.lru_cache(maxsize=4)
def _cached_world(name: str, seed: int, allow_test: bool, sweep_id: str) -> World:
    return parse_world(name).make(seed, allow_test=allow_test)


def _reference_rows(world: World, reference_fn: ReferenceFn | None) -> list[dict[str, Any]]:
    return list((reference_fn or reference_rows)(world))


def run_unit(unit: Unit) -> UnitResult:
    """Run a unit (in a worker or in-process) and return its rows.

    A `PrefduelError` (e.g. a policy breaking the protocol)
    stops the unit; the rows finished before it are returned with the error, so the
    coordinator can store them before re-raising. Other exceptions propagate.
    """
    result = UnitResult(unit)
    # Policies work on tiny matrices: threaded BLAS only adds overhead there, and with one
    # worker per core it oversubscribes the machine (measured: CODuel runs 1.7x slower).
    with threadpool_limits(limits=1):
        _run_unit_cells(unit, result)
    return result


def _run_unit_cells(unit: Unit, result: UnitResult) -> None:
    try:
        world = _unit_world(unit)
        for spec in unit.policies:
            result.rows.append(run_cell(world, spec))
        if unit.references:
            for row in _reference_rows(world, unit.reference_fn):
                result.rows.append({**row, "world": unit.world, "seed": unit.seed})
    except PrefduelError as exc:
        result.error = exc


def _record(store: ResultsStore, bar: Any, result: UnitResult) -> None:
    """Append a unit's rows to the store and advance the bar by its policy cells."""
    for row in result.rows:
        store.append(row)
    done = sum(row.get("kind") == "policy" for row in result.rows)
    bar.update(done)
    bar.set_postfix_str(f"{result.unit.world} seed {result.unit.seed}", refresh=False)


def _run_inline(units: Sequence[Unit], store: ResultsStore, bar: Any) -> None:
    for unit in units:
        result = run_unit(unit)
        _record(store, bar, result)
        if result.error is not None:
            raise result.error


def _run_futures(
    futures: Sequence[Future], store: ResultsStore, bar: Any, *, cancel_on_interrupt: bool = True
) -> None:
    """Store results in completion order; on the first error cancel what has not started,
    store what still finishes, then raise the error. On Ctrl-C, cancel the rest unless the
    caller stops the workers itself (``cancel_on_interrupt=False``)."""
    error: BaseException | None = None
    try:
        for fut in as_completed(futures):
            if fut.cancelled():
                continue
            exc = fut.exception()
            result = fut.result() if exc is None else None
            if result is not None:
                _record(store, bar, result)
                exc = result.error
            if exc is not None and error is None:
                error = exc
                for other in futures:
                    other.cancel()
    except KeyboardInterrupt:
        if cancel_on_interrupt:
            for other in futures:
                other.cancel()
        raise
    except BaseException:
        for other in futures:
            other.cancel()
        raise
    if error is not None:
        raise error


def _run_units(
    units: Sequence[Unit],
    store: ResultsStore,
    bar_factory: Callable[[], Any],
    jobs: int,
    executor: Executor | None,
) -> None:
    if executor is None and jobs == 1:
        with bar_factory() as bar:
            _run_inline(units, store, bar)
        return
    if executor is not None:
        futures = [executor.submit(run_unit, unit) for unit in units]
        with bar_factory() as bar:
            _run_futures(futures, store, bar, cancel_on_interrupt=True)
        return
    pool = LocalPool(min(jobs, len(units)))
    interrupted = False
    try:
        # Submit before the progress bar starts its monitor thread (forking with threads is unsafe).
        futures = [pool.submit(run_unit, unit) for unit in units]
        with bar_factory() as bar:
            _run_futures(futures, store, bar, cancel_on_interrupt=False)
    except KeyboardInterrupt:
        interrupted = True
        raise
    except BrokenProcessPool:
        raise _worker_died(pool.running(), store.path) from None
    finally:
        if interrupted:
            # Stop the workers first: the pool then fails the futures still queued itself
            # (cancelling them first races with that in Python 3.11 and prints a traceback).
            pool.stop()
            pool.shutdown(wait=False)
        else:
            pool.shutdown(wait=True)


def _worker_died(running: list[str], results: Path) -> PrefduelError:
    """The error for a worker process that died without a Python error (killed or crashed)."""
    cells = "; ".join(running) if running else "a unit that had not marked itself yet"
    return PrefduelError(
        f"a worker process died while running {cells}. Nothing in Python stopped it: it was "
        "killed from outside (the kernel's out-of-memory killer does that when memory runs "
        f"out) or crashed in native code. Every finished row is kept in {results}; re-running "
        "the same command resumes (with fewer --jobs if memory ran out)"
    )


def _grid_rows(
    store: ResultsStore, worlds: Sequence[str], seeds: Sequence[int], specs: Sequence[str]
) -> list[dict[str, Any]]:
    """Rows of the grid in grid order: per world and seed, the policies then the references."""
    wanted = {(w, s) for w in worlds for s in seeds}
    refs: dict[tuple[str, int], list[dict[str, Any]]] = {}
    by_key = {}
    for row in store:
        ws = (row["world"], row["seed"])
        if ws in wanted and row["kind"] == "reference":
            refs.setdefault(ws, []).append(row)
        by_key[(row["kind"], row["world"], row["seed"], row["policy"])] = row
    out = []
    for world in worlds:
        for seed in seeds:
            out += [by_key[("policy", world, seed, p)] for p in specs]
            out += refs.get((world, seed), [])
    return out


def sweep(
    worlds: Sequence[str],
    seeds: Sequence[int],
    policies: Sequence[str],
    out: str | Path,
    jobs: int = 1,
    allow_test: bool = False,
    progress: bool = True,
    executor: Executor | None = None,
    *,
    reference_fn: ReferenceFn | None = None,
    on_plan: Callable[[int, int], None] | None = None,
) -> list[dict[str, Any]]:
    """Run every unfinished cell of ``worlds x seeds x policies`` and return the grid's rows.

    Everything is validated before any work starts. Finished cells (rows already in ``out``)
    are skipped, so an interrupted sweep resumes where it stopped.

    Args:
        worlds: Roster ids or stored-world paths.
        seeds: World seeds (non-negative integers).
        policies: Policy specs (``random``, ``coduel:gate=off``, ``my.py:MyPolicy``, ...).
        out: JSONL results file (created if missing; rows are appended).
        jobs: Local worker processes; 1 runs in this process. Ignored when ``executor`` is given.
            With more than 1, each ``(world, seed)``'s cells are one unit (its world built
            once) except the last ``jobs`` pairs' (`plan_units`); the rows are the same.
        allow_test: Allow locked held-out rosters.
        progress: Show a progress bar over policy cells on stderr.
        executor: Any `concurrent.futures.Executor` to run units on (e.g. a Dask
            ``Client.get_executor()``); it is not shut down here.
        reference_fn: Function ``World -> rows`` replacing
            `prefduel.runner.references.reference_rows` (must be picklable).
        on_plan: Called with ``(cells to run, cells in the grid)`` once the results file has
            been read, before any work (e.g. to say how many cells are already there).

    Returns:
        All rows of the grid (previously stored and new), in grid order: per world and seed,
        the policy rows in the order of ``policies``, then the reference rows.

    Raises:
        SpecError, UnknownIdError, LockedRosterError, WorldFormatError: invalid grid (before any
            work).
        PolicyError: a policy broke the protocol or raised; rows finished before it are stored.
    """
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise SpecError(f"jobs must be a positive integer, got {jobs!r}")
    labels, seed_list, specs = validate_grid(worlds, seeds, policies, allow_test=allow_test)
    with ResultsStore(out, lock=True) as store:
        _refuse_other_versions(store, labels, seed_list, specs)
        units = plan_units(
            store,
            labels,
            seed_list,
            specs,
            allow_test=allow_test,
            reference_fn=reference_fn,
            workers=jobs if executor is None else 1,  # an executor's workers are unknown here
        )
        total = len(labels) * len(seed_list) * len(specs)
        todo = sum(len(u.policies) for u in units)
        if on_plan is not None:
            on_plan(todo, total)
        if units:
            _run_units(units, store, _bar_factory(total, todo, progress), jobs, executor)
        return _grid_rows(store, labels, seed_list, specs)


def _bar_factory(total: int, todo: int, progress: bool) -> Callable[[], Any]:
    """Makes the progress bar over the grid's ``total`` policy cells, ``todo`` of them left
    (made only once the units are submitted: its monitor thread must not be forked)."""

    def bar_factory() -> Any:
        return tqdm(
            total=total,
            initial=total - todo,
            unit="cell",
            desc="prefduel",
            file=sys.stderr,
            disable=not progress,
            dynamic_ncols=True,
        )

    return bar_factory
