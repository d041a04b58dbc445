"""Worlds: the World data structure, world specs and their generators, TutorSim, rosters and
stored worlds."""

from prefduel.worlds.rosters import ROSTERS, Roster
from prefduel.worlds.spec import (
    GENERATORS,
    WorldSpec,
    get_roster,
    get_world,
    parse_world,
    register_generator,
    world_kind,
    world_label,
)
from prefduel.worlds.world import World, load_world

__all__ = [
    "GENERATORS",
    "ROSTERS",
    "Roster",
    "World",
    "WorldSpec",
    "get_roster",
    "get_world",
    "load_world",
    "parse_world",
    "register_generator",
    "world_kind",
    "world_label",
]
