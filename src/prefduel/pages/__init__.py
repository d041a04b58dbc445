"""Interactive, self-contained offline HTML pages (no network; CSS, JS and data inline).

* "Be the policy" (`play_page`, `play_widget`): play one student's session of a
  world by picking two personas per round; the clicks are the benchmark's clicks and
  `session_score` computes the same score in Python.
* "Watch the policy learn" (`replay_page`, `replay_widget`): step through the
  arrivals of a finished run, with the excess regret curve and the pairs shown to each student;
  `replay_trajectory` recovers the pairs of a result row by re-running its cell.

Widgets are ``<section>`` fragments whose ids and classes are prefixed by their ``element_id``,
so they can be embedded side by side in a larger report page.
"""

from prefduel.pages.play import (
    play_data,
    play_page,
    play_widget,
    session_baselines,
    session_score,
)
from prefduel.pages.replay import replay_data, replay_page, replay_widget
from prefduel.runner.trajectories import (
    check_trajectory,
    find_row,
    load_rows,
    replay_trajectory,
)

__all__ = [
    "check_trajectory",
    "find_row",
    "load_rows",
    "play_data",
    "play_page",
    "play_widget",
    "replay_data",
    "replay_page",
    "replay_trajectory",
    "replay_widget",
    "session_baselines",
    "session_score",
]
