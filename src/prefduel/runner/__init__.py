"""Runner: run one cell, sweep a grid in parallel, store rows in a JSONL file."""

from prefduel.runner.cell import Trajectory, play, run_cell, summarize

__all__ = ["Trajectory", "play", "run_cell", "summarize"]
