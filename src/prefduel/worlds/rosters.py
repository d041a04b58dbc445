"""The roster table: which students, topics and arrivals each TutorDuel roster uses."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from prefduel.core.errors import LockedRosterError, UnknownIdError
from prefduel.worlds.world import World, load_world


@dataclass(frozen=True)
class Roster:
    """One row of the roster table (DESIGN section 3).

    Attributes:
        id: Roster id, e.g. ``"dev"``.
        arrivals: Number of arrivals N.
        students: How students are drawn: ``"dev-profiles"``, ``"heldout-profiles"``,
            ``"composite"``, ``"quirky"``, ``"scrambled"`` or ``"isotropic"``.
        topics: Topic pool, ``"dev"`` or ``"heldout"``.
        seeds: Number of seeds reported in the paper's protocol.
        locked: Held-out roster; loading it needs ``allow_test=True``.
        description: One line for ``prefduel worlds``.
    """

    id: str
    arrivals: int
    students: str
    topics: str
    seeds: int
    locked: bool
    description: str


ROSTERS: dict[str, Roster] = {
    r.id: r
    for r in [
        Roster(
            "dev",
            300,
            "dev-profiles",
            "dev",
            32,
            False,
            "8 hand-written development profiles; every design choice is made here",
        ),
        Roster(
            "test-topics",
            350,
            "dev-profiles",
            "heldout",
            64,
            True,
            "the same 8 profiles on new topics",
        ),
        Roster(
            "test-profiles",
            350,
            "heldout-profiles",
            "heldout",
            64,
            True,
            "8 held-out hand-written profiles on new topics",
        ),
        Roster(
            "test-composite",
            350,
            "composite",
            "heldout",
            32,
            True,
            "350 distinct students from the 7-trait template (3,072 combinations)",
        ),
        Roster(
            "test-quirky",
            350,
            "quirky",
            "heldout",
            32,
            True,
            "350 template students with 2 of 10 quirks each",
        ),
        Roster(
            "control-scrambled",
            350,
            "scrambled",
            "heldout",
            32,
            False,
            "negative control: held-out profiles, persona labels permuted per student",
        ),
        Roster(
            "control-unstructured",
            350,
            "isotropic",
            "heldout",
            32,
            False,
            "negative control: preferences drawn i.i.d. from an isotropic population",
        ),
    ]
}


def get_roster(roster_id: str) -> Roster:
    """Look up a roster by id.

    Raises:
        UnknownIdError: listing the known rosters.
    """
    try:
        return ROSTERS[roster_id]
    except KeyError:
        raise UnknownIdError(
            f"unknown roster {roster_id!r}. Known rosters: {', '.join(ROSTERS)}; "
            "or give the path of a stored world directory"
        ) from None


def is_world_path(name: str) -> bool:
    """True when ``name`` refers to a stored world on disk rather than a roster id."""
    return name not in ROSTERS and (
        "/" in name or "\\" in name or name.endswith("world.json") or Path(name).is_dir()
    )


def get_world(name: str, seed: int, *, allow_test: bool = False) -> World:
    """Build (roster id) or load (stored world path) a world.

    Args:
        name: A roster id from :data:`ROSTERS` or the directory of a stored world.
        seed: The world seed (ignored for stored worlds, whose seed is recorded in the file).
        allow_test: Required for locked ``test-*`` rosters.

    Raises:
        UnknownIdError: unknown roster id.
        LockedRosterError: a locked roster without ``allow_test``.
        WorldFormatError: a stored world that is missing or corrupt.
    """
    if is_world_path(name):
        return load_world(name)
    roster = get_roster(name)
    if roster.locked and not allow_test:
        raise LockedRosterError(
            f"roster {name!r} is a locked held-out roster; pass allow_test=True "
            "(CLI: --allow-test) to run it, once, for reporting"
        )
    from prefduel.worlds.tutorsim import generate_world

    return generate_world(roster, seed)


def get_students(
    name: str, seed: int, *, allow_test: bool = False
) -> tuple[list[dict[str, Any]], np.ndarray]:
    """The ``students`` table and ``student_index`` of ``get_world(name, seed)``, cheaply.

    For a roster id only the student streams are drawn (milliseconds instead of building the
    whole world); a stored world is loaded. Same checks and errors as :func:`get_world`.

    Args:
        name: A roster id from :data:`ROSTERS` or the directory of a stored world.
        seed: The world seed (ignored for stored worlds).
        allow_test: Required for locked ``test-*`` rosters.

    Returns:
        ``(students, student_index)``: the student dicts and the ``(N,)`` row of ``students``
        for each arrival, equal to the world's fields.

    Raises:
        UnknownIdError: unknown roster id.
        LockedRosterError: a locked roster without ``allow_test``.
        WorldFormatError: a stored world that is missing or corrupt.
    """
    if is_world_path(name):
        world = load_world(name)
        return world.students, world.student_index
    roster = get_roster(name)
    if roster.locked and not allow_test:
        raise LockedRosterError(
            f"roster {name!r} is a locked held-out roster; pass allow_test=True "
            "(CLI: --allow-test) to read its students"
        )
    from prefduel.worlds.tutorsim import generate_students

    return generate_students(roster, seed)
