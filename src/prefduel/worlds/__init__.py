"""Worlds: the World data structure, TutorSim, rosters and stored worlds."""

from prefduel.worlds.rosters import ROSTERS, Roster, get_roster, get_world, is_world_path
from prefduel.worlds.world import World, load_world

__all__ = ["ROSTERS", "Roster", "World", "get_roster", "get_world", "is_world_path", "load_world"]
