"""World specs: a world name parsed once, and the registry of the generators that build worlds.

Whatever a user types where a world is expected (a roster id ``dev``, ``ROSTER@VERSION``, a
roster file ``my-roster.yaml``, the folder of a stored world) is parsed once into a
`WorldSpec`. The spec carries the label result rows use, whether the world is locked, the
generator version and the generator that builds it; `WorldSpec.make` builds the world for a
seed and `WorldSpec.students` draws only its students. Gymnasium's ``EnvSpec`` is the model.

Generators are registered by id (`register_generator`): TutorSim builds worlds from rosters,
``stored`` loads a folder written by `prefduel.worlds.world.World.save` (datagen and other
families write those) and makes each seed a replicate, ``votes`` loads a world built from a
vote log (`prefduel.worlds.votes`) and redraws its utilities for each seed. A new family of
worlds registers a generator and says which names it answers to; nothing else changes.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np

from prefduel.core.errors import (
    LockedRosterError,
    SpecError,
    UnknownIdError,
    WorldFormatError,
)
from prefduel.worlds import tutorsim
from prefduel.worlds.asking import ANSWER_STYLES, DEFAULT_ANSWER_NOISE
from prefduel.worlds.roster_file import load_roster_file, roster_file_label
from prefduel.worlds.rosters import Roster, builtin_roster, is_roster, is_roster_file
from prefduel.worlds.votes import GENERATOR as VOTES
from prefduel.worlds.votes import VotesGenerator, is_votes_world, refuse_without_posterior
from prefduel.worlds.world import World, load_world, replicate

Kind = Literal["roster", "roster-file", "stored"]


class WorldGenerator(Protocol):
    """Builds the worlds of the specs it is registered for."""

    def make(self, spec: WorldSpec, seed: int) -> World:
        """The world of ``spec`` for ``seed``."""

    def students(self, spec: WorldSpec, seed: int) -> tuple[list[dict[str, Any]], np.ndarray]:
        """The ``students`` table and ``(N,)`` ``student_index`` of ``make(spec, seed)``."""


GENERATORS: dict[str, WorldGenerator] = {}


def register_generator(generator_id: str, generator: WorldGenerator) -> None:
    """Register a world generator under an id (`WorldSpec.generator` names it).

    Raises:
        SpecError: the id is taken.
    """
    if generator_id in GENERATORS:
        raise SpecError(f"world generator {generator_id!r} is already registered")
    GENERATORS[generator_id] = generator


@dataclass(frozen=True)
class WorldSpec:
    """A world name, parsed.

    Attributes:
        name: What was typed.
        label: The name worlds and result rows carry: a roster id (``id@version`` for an
            older generator), a roster file's normalized path, or a stored world's normalized
            folder (``./dev`` when the folder is named like a roster).
        kind: ``roster``, ``roster-file`` or ``stored``.
        generator: Id of the registered generator that builds it.
        locked: A held-out roster (or a roster file based on one): building it needs
            ``allow_test=True``.
        roster: The roster (TutorSim worlds), else None.
        path: The stored world's folder, else None.
        ask_budget: Preference questions a policy may ask each arrival: the benchmark's ask
            track, written ``NAME+askB`` (``dev+ask2``); 0 is the benchmark without questions.
        answer_style: How the students answer (`prefduel.worlds.asking.ANSWER_STYLES`:
            ``cooperative``, ``terse``, ``vague``), written ``NAME/STYLE`` (``dev/vague+ask2``):
            the answers are drawn with that style's noise, everything else is the world
            without a style, bit for bit; "" draws them with the roster's ``answer_noise``.
    """

    name: str
    label: str
    kind: Kind
    generator: str
    locked: bool = False
    roster: Roster | None = None
    path: Path | None = None
    ask_budget: int = 0
    answer_style: str = ""

    @property
    def version(self) -> int | None:
        """The TutorSim generator version (None for a stored world)."""
        return self.roster.version if self.roster is not None else None

    def check_allowed(self, allow_test: bool, purpose: str = "run it") -> None:
        """Refuse a locked world without ``allow_test``.

        Raises:
            LockedRosterError: naming the roster and the flag that unlocks it.
        """
        if self.locked and not allow_test:
            raise LockedRosterError(
                f"roster {self.label!r} is a locked held-out roster; pass allow_test=True "
                f"(CLI: --allow-test) to {purpose}, once, for reporting"
            )

    def make(self, seed: int, *, allow_test: bool = False) -> World:
        """The world for ``seed``, named by `label`.

        Raises:
            LockedRosterError: a locked world without ``allow_test``.
            WorldFormatError: a stored world that is missing or corrupt.
        """
        self.check_allowed(allow_test)
        world = GENERATORS[self.generator].make(self, seed)
        if self.ask_budget and world.asks is None:
            rebuild = (
                " (a world built from a vote log before worlds carried questions: build it "
                "again with prefduel worlds build --from-votes to add them)"
                if self.generator == VOTES
                else ""
            )
            raise WorldFormatError(
                f"world {self.label!r} has no preference questions, so it has no ask track"
                f"{rebuild}; run it without +ask (or --ask-budget 0)"
            )
        if world.roster != self.label or world.ask_budget != self.ask_budget:
            world = replace(world, roster=self.label, ask_budget=self.ask_budget)
        return world

    def students(
        self, seed: int, *, allow_test: bool = False
    ) -> tuple[list[dict[str, Any]], np.ndarray]:
        """The ``students`` table and ``(N,)`` ``student_index`` of ``make(seed)``, cheaply
        where the generator can (TutorSim draws only the student streams).

        Raises:
            LockedRosterError: a locked world without ``allow_test``.
        """
        self.check_allowed(allow_test, purpose="read its students")
        return GENERATORS[self.generator].students(self, seed)


def parse_world(name: str) -> WorldSpec:
    """Parse a world name: a roster id, ``ROSTER@VERSION``, a roster file or a stored world.

    Roster files are read and validated here, so a bad one fails now; a stored world is only
    located (`WorldSpec.make` loads it).

    Raises:
        SpecError: an empty name.
        UnknownIdError: an unknown roster id or generator version.
        RosterFileError: a roster file that is missing or invalid (names file and field).
    """
    name = name.strip()
    if not name:
        raise SpecError("empty world name")
    base, budget = split_ask_track(name)
    if budget:
        spec = parse_world(base)
        return replace(spec, name=name, label=ask_label(spec.label, budget), ask_budget=budget)
    name = base
    base, style = split_answer_style(name)
    if style:
        spec = parse_world(base)
        _check_answer_style(spec, style)
        label = ask_label(style_label(split_ask_track(spec.label)[0], style), spec.ask_budget)
        return replace(spec, name=name, label=label, answer_style=style)
    _refuse_unknown_style(name)
    if is_roster_file(name):
        roster = Roster(**load_roster_file(name))
        label = roster_file_label(name)
        return WorldSpec(name, label, "roster-file", "tutorsim", roster.locked, roster)
    if not _is_stored(name):
        roster = builtin_roster(name)
        return WorldSpec(name, roster.label, "roster", "tutorsim", roster.locked, roster)
    label = _stored_label(name)
    generator = VOTES if is_votes_world(label) else "stored"  # built by `worlds build`
    return WorldSpec(name, label, "stored", generator, path=Path(label))


#: A world name on an ask track: ``NAME+askB``.
_ASK_TRACK = re.compile(r"^(?P<base>.+)\+ask(?P<budget>\d+)$")
#: Most questions a track may allow per arrival.
MAX_ASK_BUDGET = 100


def split_ask_track(name: str) -> tuple[str, int]:
    """``("dev", 2)`` for ``dev+ask2``; ``(name, 0)`` for a name without a track.

    Raises:
        SpecError: a budget above `MAX_ASK_BUDGET`.
    """
    match = _ASK_TRACK.match(name.strip())
    if match is None:
        return name.strip(), 0
    budget = int(match["budget"])
    if budget > MAX_ASK_BUDGET:
        raise SpecError(
            f"world {name!r}: an ask budget of {budget} questions per arrival; at most "
            f"{MAX_ASK_BUDGET}"
        )
    return match["base"], budget


def ask_label(label: str, budget: int) -> str:
    """The label of ``label``'s world on the ask track with ``budget`` questions."""
    return f"{label}+ask{budget}" if budget else label


#: A world name with an answer style: ``NAME/STYLE``.
_ANSWER_STYLE = re.compile(r"^(?P<base>.+)/(?P<style>[A-Za-z]+)$")


def split_answer_style(name: str) -> tuple[str, str]:
    """``("dev", "vague")`` for ``dev/vague``; ``(name, "")`` for a name without a style (or a
    stored world's folder that happens to end in a style's name)."""
    name = name.strip()
    match = _ANSWER_STYLE.match(name)
    if match is None or match["style"] not in ANSWER_STYLES or Path(name).exists():
        return name, ""
    return match["base"], match["style"]


def style_label(label: str, style: str) -> str:
    """The label of ``label``'s world with its answers drawn in ``style`` ("": none)."""
    return f"{label}/{style}" if style else label


def _check_answer_style(spec: WorldSpec, style: str) -> None:
    """A style needs a generator that draws the answers, and no second noise to overrule.

    Raises:
        SpecError: a world whose answers are stored with it, or a roster file that sets
            ``params.answer_noise`` itself.
    """
    noise = ANSWER_STYLES[style]
    if spec.answer_style:
        raise SpecError(f"world {spec.name!r}: one answer style at most, got {style!r} too")
    # a generator that draws its answers afresh says so with a true `answer_styles`
    if not getattr(GENERATORS.get(spec.generator), "answer_styles", False):
        raise SpecError(
            f"world {spec.label!r}: answer style {style!r} (answer noise {noise}) draws the "
            f"answers afresh, but this world's answers are stored with it ({spec.generator} "
            f"world); run it without '/{style}'"
        )
    own = spec.roster.tutorsim_params().answer_noise if spec.roster is not None else None
    if own is not None and own != DEFAULT_ANSWER_NOISE:
        raise SpecError(
            f"world {spec.label!r}: its roster file sets params.answer_noise: {own} and the "
            f"name asks for answer style {style!r} (answer noise {noise}); use one of the two"
        )


def _refuse_unknown_style(name: str) -> None:
    """``dev/loud``: a roster with a suffix that is no answer style is an error naming them.

    Raises:
        SpecError: naming the suffix and the known styles.
    """
    match = _ANSWER_STYLE.match(name)
    if match is None or Path(name).exists():
        return
    base = match["base"]
    if is_roster(split_ask_track(base)[0] if _ASK_TRACK.match(base) else base):
        raise SpecError(
            f"world {name!r}: {match['style']!r} is no answer style; known: "
            f"{', '.join(ANSWER_STYLES)} (e.g. {_bare(base)}/vague+ask2)"
        )


def _is_stored(name: str) -> bool:
    """A name that refers to a stored world's folder (or its world.json), not a roster."""
    return not is_roster(name) and (
        "/" in name or "\\" in name or name.endswith("world.json") or Path(name).is_dir()
    )


def _stored_label(name: str) -> str:
    """A stored world's label: its normalized folder (``./w/``, ``w/world.json`` -> ``w``)."""
    path = Path(name)
    if path.name == "world.json":
        path = path.parent
    label = os.path.normpath(str(path))
    # keep a folder named like a roster (./dev) distinguishable from the roster
    return label if _is_stored(label) else os.path.join(os.curdir, label)


def world_kind(name: str) -> Kind | None:
    """What a world name is (`WorldSpec.kind`), found without reading any file: None for a
    name that is no roster id, roster file or stored world's folder."""
    name = _bare(name)
    if is_roster_file(name):
        return "roster-file"
    if _is_stored(name):
        return "stored"
    return "roster" if is_roster(name) else None


def _bare(name: str) -> str:
    """The world name without its ask track and answer style (``dev/vague+ask2`` -> ``dev``)."""
    name = split_ask_track(name)[0] if _ASK_TRACK.match(name.strip()) else name.strip()
    base, style = split_answer_style(name)
    return _bare(base) if style else name


def world_label(name: str) -> str:
    """The label result rows carry for a world name (`WorldSpec.label`), found without reading
    any file; a name that is nothing known labels itself (so a filter on it matches nothing)."""
    match = _ASK_TRACK.match(name.strip())
    if match is not None:
        return ask_label(world_label(match["base"]), int(match["budget"]))
    base, style = split_answer_style(name)
    if style:
        track, budget = split_ask_track(world_label(base))
        return ask_label(style_label(track, style), budget)
    name = name.strip()
    if is_roster_file(name):
        return roster_file_label(name)
    if _is_stored(name):
        return _stored_label(name)
    try:
        return builtin_roster(name).label
    except UnknownIdError:
        return name


def get_roster(name: str) -> Roster:
    """The roster of a roster id, ``ROSTER@VERSION`` or roster file.

    Raises:
        UnknownIdError: an unknown roster id or version, or a stored world's path.
        RosterFileError: a roster file that is missing or invalid.
    """
    spec = parse_world(name)
    if spec.roster is None:
        raise UnknownIdError(f"{name!r} is a stored world, not a roster")
    return spec.roster


def get_world(name: str, seed: int, *, allow_test: bool = False) -> World:
    """The world of a name for a seed: ``parse_world(name).make(seed, allow_test=...)``.

    Args:
        name: A roster id, ``ROSTER@VERSION``, a roster file or a stored world's folder.
        seed: The world seed. For a stored world, the replicate: seed ``s`` re-orders its
            arrivals and redraws its clicks (`prefduel.worlds.world.replicate`); the seed
            recorded in the file gives the world as stored.
        allow_test: Required for locked ``test-*`` rosters.

    Raises:
        UnknownIdError: unknown roster id.
        LockedRosterError: a locked roster without ``allow_test``.
        WorldFormatError: a stored world that is missing or corrupt.
    """
    return parse_world(name).make(seed, allow_test=allow_test)


# -- the built-in generators ---------------------------------------------------------------


@dataclass(frozen=True)
class _TutorSim:
    """TutorSim: worlds generated from a roster (`prefduel.worlds.tutorsim`); an answer style
    sets the noise of the answers, which are drawn last, from a stream of their own."""

    answer_styles = True

    def make(self, spec: WorldSpec, seed: int) -> World:
        roster = _roster(spec)
        params = None
        if spec.answer_style:
            noise = ANSWER_STYLES[spec.answer_style]
            params = replace(roster.tutorsim_params(), answer_noise=noise)
        return tutorsim.generate_world(roster, seed, params)

    def students(self, spec: WorldSpec, seed: int) -> tuple[list[dict[str, Any]], np.ndarray]:
        return tutorsim.generate_students(_roster(spec), seed)


@dataclass(frozen=True)
class _Stored:
    """A folder written by `World.save`; each seed is a replicate (`replicate`)."""

    def make(self, spec: WorldSpec, seed: int) -> World:
        world = load_world(_path(spec))
        refuse_without_posterior(world, _path(spec))
        return replicate(world, seed)

    def students(self, spec: WorldSpec, seed: int) -> tuple[list[dict[str, Any]], np.ndarray]:
        world = self.make(spec, seed)
        return world.students, world.student_index


def _roster(spec: WorldSpec) -> Roster:
    return _require(spec.roster, spec, "a roster")


def _path(spec: WorldSpec) -> Path:
    return _require(spec.path, spec, "a folder")


def _require(value: Any, spec: WorldSpec, what: str) -> Any:
    if value is None:
        raise SpecError(f"world {spec.label!r}: its generator {spec.generator!r} needs {what}")
    return value


register_generator("tutorsim", _TutorSim())
register_generator("stored", _Stored())
register_generator(VOTES, VotesGenerator())
