"""The World: one roster instantiated for one seed, and its on-disk format.

A world holds, for ``N`` arrivals x ``S`` rounds x ``K`` personas with ``d`` features:

==================  ================  ==========================================================
array               shape             meaning
==================  ================  ==========================================================
``Phi``             ``N x S x K x d``  policy features ``phi(p, q)``
``U``               ``N x S x K``      hidden utilities in [0, 1] (regret is scored on them)
``P``               ``N x S x K x K``  click probabilities, ``P[a, b]`` = chance a beats b
``u``               ``N x S``          uniform draws (common random numbers for the clicks)
``student_index``   ``N``              row of ``students`` for each arrival
``question_index``  ``N x S``          row of ``questions`` for each round
==================  ================  ==========================================================

plus JSON metadata: ``students`` (id, profile, description, ...), ``questions`` (id, topic,
chain, kind, cue, text), ``personas`` (id, name, prompt) and free-form ``info``.

On-disk format (a directory)::

    world.json    {"format": "prefduel-world", "format_version": 1, "roster", "seed",
                   "shape": {"N", "S", "K", "d"}, "students", "questions", "personas", "info",
                   "sha256": {array name: hex digest of its bytes}}
    arrays.npz    Phi, U, P, u (float64), student_index, question_index (int64)

Digests make a damaged file fail loudly on load instead of silently changing results.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from prefduel.core.errors import WorldFormatError
from prefduel.core.rng import stream
from prefduel.worlds.asking import AskBank
from prefduel.worlds.rosters import is_roster, is_roster_file

FORMAT = "prefduel-world"
FORMAT_VERSION = 1
#: Most arrivals a world may have: a TutorSim arrival takes about 20 kB in memory (features,
#: utilities, click probabilities), so 100,000 arrivals take about 2 GB.
MAX_ARRIVALS = 100_000
ARRAY_NAMES = ("Phi", "U", "P", "u", "student_index", "question_index")


@dataclass(eq=False)
class World:
    """Arrays and metadata of one world; see the module docstring for shapes."""

    roster: str
    seed: int
    Phi: np.ndarray
    U: np.ndarray
    P: np.ndarray
    u: np.ndarray
    student_index: np.ndarray
    question_index: np.ndarray
    students: list[dict[str, Any]] = field(default_factory=list)
    questions: list[dict[str, Any]] = field(default_factory=list)
    personas: list[dict[str, Any]] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)
    #: Preference questions and the arrivals' hidden answers (`prefduel.worlds.asking`);
    #: None for a world that cannot be asked.
    asks: AskBank | None = None
    #: Questions a policy may ask each arrival (the benchmark's ask track; 0: never asked).
    ask_budget: int = 0

    @property
    def N(self) -> int:
        """Number of arrivals."""
        return self.U.shape[0]

    @property
    def S(self) -> int:
        """Rounds (questions) per arrival."""
        return self.U.shape[1]

    @property
    def K(self) -> int:
        """Number of personas."""
        return self.U.shape[2]

    @property
    def d(self) -> int:
        """Feature dimension."""
        return self.Phi.shape[3]

    def click(self, arrival: int, rnd: int, first: int, second: int) -> int:
        """The click for showing ``(first, second)`` in round ``rnd`` of ``arrival`` (see
        `clicks`, the rule).

        Returns:
            1 if ``first`` wins the click, else 0.
        """
        return int(self.clicks(arrival, rnd, first, second))

    def clicks(
        self,
        arrivals: np.ndarray | int,
        rnd: int,
        first: np.ndarray | int,
        second: np.ndarray | int,
    ) -> np.ndarray:
        """The one click rule of the benchmark (common random numbers), elementwise.

        The click is drawn in canonical order, ``y = u < P[min(i, j), max(i, j)]``, then
        flipped when the larger index was listed first, so ``(i, j)`` and ``(j, i)`` get the
        same click, and two policies that show the same pair get the same click.

        Args:
            arrivals: Arrival indices ``(n,)`` (or one index).
            rnd: The round.
            first: First shown persona of each arrival ``(n,)`` (or one index).
            second: Second shown persona ``(n,)``, different from ``first``.

        Returns:
            ``(n,)`` booleans (a numpy boolean for one index): True where ``first`` won.
        """
        swap = first > second
        lo = first - (first - second) * swap
        hi = first + second - lo
        # numpy booleans on both sides: elementwise for arrays, and fast for one click
        return (self.u[arrivals, rnd] < self.P[arrivals, rnd, lo, hi]) ^ np.bool_(swap)

    @property
    def name(self) -> str:
        """Its ``roster`` field: a roster label, or the name a stored world was saved with."""
        return self.roster

    def validate(self, where: str = "world") -> None:
        """Check shapes, ranges and ``P + P^T = 1``.

        Raises:
            WorldFormatError: naming the array and what was wrong.
        """
        n, s, k = self.U.shape if self.U.ndim == 3 else (None, None, None)
        if n is None:
            raise WorldFormatError(f"{where}: U must be N x S x K, got shape {self.U.shape}")
        expect = {
            "Phi": (n, s, k, self.Phi.shape[-1] if self.Phi.ndim == 4 else -1),
            "P": (n, s, k, k),
            "u": (n, s),
            "student_index": (n,),
            "question_index": (n, s),
        }
        for key, shape in expect.items():
            got = getattr(self, key).shape
            if got != shape:
                raise WorldFormatError(f"{where}: {key} must have shape {shape}, got {got}")
        if k < 2:
            raise WorldFormatError(f"{where}: need at least 2 personas, got K={k}")
        for key in ("Phi", "U", "P", "u"):
            if not np.all(np.isfinite(getattr(self, key))):
                raise WorldFormatError(f"{where}: {key} contains NaN or infinite values")
        if self.U.min() < 0 or self.U.max() > 1:
            raise WorldFormatError(f"{where}: U must lie in [0, 1]")
        if self.u.min() < 0 or self.u.max() >= 1:
            raise WorldFormatError(f"{where}: u must lie in [0, 1)")
        if np.abs(self.P + np.swapaxes(self.P, -1, -2) - 1).max() > 1e-9:
            raise WorldFormatError(f"{where}: P must satisfy P[a, b] + P[b, a] = 1")
        if self.asks is not None:
            self.asks.validate(n, k, where)
        if self.P.min() < 0 or self.P.max() > 1:
            raise WorldFormatError(f"{where}: P must lie in [0, 1]")
        if self.students and not 0 <= self.student_index.min() <= self.student_index.max() < len(
            self.students
        ):
            raise WorldFormatError(f"{where}: student_index points outside the students table")
        if self.questions and not (
            0 <= self.question_index.min() <= self.question_index.max() < len(self.questions)
        ):
            raise WorldFormatError(f"{where}: question_index points outside the questions table")

    def arrays(self) -> dict[str, np.ndarray]:
        """The arrays by name, in the stored dtypes."""
        return {
            "Phi": np.ascontiguousarray(self.Phi, dtype=np.float64),
            "U": np.ascontiguousarray(self.U, dtype=np.float64),
            "P": np.ascontiguousarray(self.P, dtype=np.float64),
            "u": np.ascontiguousarray(self.u, dtype=np.float64),
            "student_index": np.ascontiguousarray(self.student_index, dtype=np.int64),
            "question_index": np.ascontiguousarray(self.question_index, dtype=np.int64),
        }

    def digest(self) -> str:
        """SHA-256 over all arrays: equal digests mean bit-identical worlds."""
        return arrays_digest(self.arrays())

    def save(self, path: str | Path) -> Path:
        """Write the world to directory ``path`` (created if needed); returns the path."""
        self.validate()
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        arrays = self.arrays()
        meta = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "roster": self.roster,
            "seed": int(self.seed),
            "shape": {"N": self.N, "S": self.S, "K": self.K, "d": self.d},
            "students": self.students,
            "questions": self.questions,
            "personas": self.personas,
            "info": self.info,
            "sha256": {k: hashlib.sha256(v.tobytes()).hexdigest() for k, v in arrays.items()},
        }
        if self.asks is not None:
            meta["asks"] = self.asks.to_json()
        np.savez(path / "arrays.npz", **arrays)
        (path / "world.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
        return path


def load_world(path: str | Path, seed: int | None = None) -> World:
    """Load a world saved by `World.save` (a directory or its ``world.json``).

    Roster ids and roster files are not stored worlds: `prefduel.worlds.get_world` generates
    their worlds (and also loads stored ones).

    Args:
        path: The directory written by `World.save`, or its ``world.json``.
        seed: Return this replicate of the stored world (`replicate`), as ``get_world`` does;
            ``None`` or the stored seed: the world as stored.

    Raises:
        WorldFormatError: if a file is missing, unreadable, of another format, or its arrays do
            not match their recorded digests; for a roster id or roster file the message
            names ``get_world``, which also draws the replicates of a world built from a vote
            log (`prefduel.worlds.votes`), refused here.
    """
    given = str(path)
    path = Path(path)
    if path.name == "world.json":
        path = path.parent
    meta_path, arr_path = path / "world.json", path / "arrays.npz"
    for p in (meta_path, arr_path):
        if not p.is_file():
            hint = _roster_hint(given)
            raise WorldFormatError(f"stored world {path}: missing file {p.name}{hint}")
    meta = _read_meta(meta_path, path)
    _check_recorded_size(meta, arr_path, path)
    try:
        with np.load(arr_path, allow_pickle=False) as data:
            arrays = {name: data[name] for name in ARRAY_NAMES}
    except KeyError as exc:
        raise WorldFormatError(f"stored world {path}: arrays.npz lacks array {exc}") from exc
    except (
        OSError, ValueError, RuntimeError, NotImplementedError, zipfile.BadZipFile, EOFError
    ) as exc:
        raise WorldFormatError(f"stored world {path}: arrays.npz is unreadable ({exc})") from exc
    digests = meta.get("sha256", {})
    for name, arr in arrays.items():
        if digests.get(name) != hashlib.sha256(np.ascontiguousarray(arr).tobytes()).hexdigest():
            raise WorldFormatError(
                f"stored world {path}: array {name} does not match its recorded sha256 "
                "(corrupt file)"
            )
    asks = AskBank.from_json(meta["asks"], f"stored world {path}") if "asks" in meta else None
    world = World(**_metadata_fields(meta, path), **arrays, asks=asks)
    shape = meta.get("shape")
    actual = {"N": world.N, "S": world.S, "K": world.K, "d": world.d}
    if shape != actual:
        raise WorldFormatError(
            f"stored world {path}: world.json records shape {shape!r} but the arrays have {actual}"
        )
    world.validate(where=f"stored world {path}")
    if seed is not None and seed != world.seed and world.info.get("generator") == "votes":
        # its replicates redraw utilities from a posterior that only `worlds.votes` reads
        raise WorldFormatError(
            f"stored world {path} was built from a vote log: get_world({str(path)!r}, {seed}) "
            "draws its replicates (load_world would keep the stored utilities)"
        )
    return world if seed is None else replicate(world, seed)


def _read_meta(meta_path: Path, path: Path) -> dict[str, Any]:
    """``world.json``, checked for its size, its format and its format version."""
    if meta_path.stat().st_size > MAX_META_BYTES:
        raise WorldFormatError(
            f"stored world {path}: world.json is larger than {MAX_META_BYTES >> 20} MiB; "
            "is it a world file?"
        )
    try:
        meta = json.loads(meta_path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise WorldFormatError(
            f"stored world {path}: world.json is not valid JSON ({exc})"
        ) from exc
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise WorldFormatError(f"stored world {path}: world.json is not a {FORMAT} file")
    if meta.get("format_version") != FORMAT_VERSION:
        raise WorldFormatError(
            f"stored world {path}: format_version {meta.get('format_version')!r} is not supported "
            f"(this prefduel reads version {FORMAT_VERSION})"
        )
    return meta


#: Largest world.json read (students' and questions' texts of a world at `MAX_ARRIVALS`).
MAX_META_BYTES = 256 * 2**20
#: Largest dimensions a stored world may record: rounds, personas, features.
MAX_DIMS = {"S": 1000, "K": 100, "d": 1000}


def _check_recorded_size(meta: dict[str, Any], arrays: Path, path: Path) -> None:
    """Refuse a world whose recorded shape is out of bounds, or whose arrays unpack to more
    bytes than that shape needs, before anything is unpacked (a compressed archive can
    unpack to far more than its size on disk)."""
    shape = meta.get("shape")
    dims = {"N": MAX_ARRIVALS, **MAX_DIMS}
    if not isinstance(shape, dict) or not all(
        isinstance(shape.get(k), int) and not isinstance(shape.get(k), bool)
        and 1 <= shape[k] <= top
        for k, top in dims.items()
    ):
        limits = ", ".join(f"{k} <= {top:,}" for k, top in dims.items())
        raise WorldFormatError(
            f"stored world {path}: world.json's shape {shape!r} is not N, S, K, d within "
            f"bounds ({limits})"
        )
    n, s, k, d = (shape[key] for key in ("N", "S", "K", "d"))
    cells = n * s
    need = 8 * (cells * (k * d + k + k * k + 2) + n) + 64 * 2**10 * len(ARRAY_NAMES)
    try:
        with zipfile.ZipFile(arrays) as archive:
            unpacked = sum(info.file_size for info in archive.infolist())
    except (OSError, ValueError, NotImplementedError, zipfile.BadZipFile) as exc:
        raise WorldFormatError(f"stored world {path}: arrays.npz is unreadable ({exc})") from exc
    if unpacked > need:
        raise WorldFormatError(
            f"stored world {path}: arrays.npz unpacks to {unpacked:,} bytes, more than the "
            f"{need:,} its recorded shape needs (corrupt or not a world)"
        )


def _roster_hint(name: str) -> str:
    """A pointer to ``get_world`` when ``name`` is a roster id or roster file, else ''."""
    if Path(name).is_dir() or not is_roster(name):
        return ""
    kind = "roster file" if is_roster_file(name) else "roster id"
    return (
        f" ({name!r} is a {kind}: get_world({name!r}, seed) generates its world; load_world "
        "reads a folder written by World.save)"
    )


def _metadata_fields(meta: dict[str, Any], path: Path) -> dict[str, Any]:
    """Typed metadata fields of ``world.json``; mistyped fields raise WorldFormatError."""
    expected = {"students": list, "questions": list, "personas": list, "info": dict}
    fields: dict[str, Any] = {}
    for key, kind in expected.items():
        value = meta.get(key, kind())
        if not isinstance(value, kind):
            raise WorldFormatError(
                f"stored world {path}: world.json field {key!r} must be a {kind.__name__}, "
                f"got {type(value).__name__}"
            )
        fields[key] = value
    roster, seed = meta.get("roster", path.name), meta.get("seed", 0)
    if not isinstance(roster, str):
        raise WorldFormatError(f"stored world {path}: world.json field 'roster' must be a string")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise WorldFormatError(
            f"stored world {path}: world.json field 'seed' must be an integer, got {seed!r}"
        )
    fields.update(roster=roster, seed=seed)
    return fields


def replicate(world: World, seed: int) -> World:
    """Replicate ``seed`` of a stored world: its arrivals in a new order, new click draws.

    A stored world holds one arrangement of its judged sessions. Seed ``s`` re-orders the
    arrivals (each session keeps its student, questions, utilities and probabilities) and
    draws fresh uniforms ``u``, both from ``stream(s, "stored-world", ...)``, so two seeds are
    two independent replicates of the same judged data, and policies on one seed still share
    common random numbers. The world's own seed gives it back as stored.

    Args:
        world: A stored world (any `World`).
        seed: The replicate's seed (non-negative).

    Returns:
        A `World` with ``seed`` set and ``info["replicate_of_seed"]`` recording the stored
        seed; ``world`` itself when ``seed == world.seed``.
    """
    if seed == world.seed:
        return world
    order = stream(seed, "stored-world", "order").permutation(world.N)
    clicks = stream(seed, "stored-world", "clicks").random(world.u.shape)
    return World(
        roster=world.roster,
        seed=int(seed),
        Phi=world.Phi[order],
        U=world.U[order],
        P=world.P[order],
        u=clicks,
        student_index=world.student_index[order],
        question_index=world.question_index[order],
        students=world.students,
        questions=world.questions,
        personas=world.personas,
        info={**world.info, "replicate_of_seed": world.seed},
        asks=world.asks.reordered(order) if world.asks is not None else None,
        ask_budget=world.ask_budget,
    )


def arrays_digest(arrays: dict[str, np.ndarray]) -> str:
    """SHA-256 over named arrays, in order: each name, shape and bytes."""
    h = hashlib.sha256()
    for name, arr in arrays.items():
        h.update(name.encode())
        h.update(str(arr.shape).encode())
        h.update(arr.tobytes())
    return h.hexdigest()
