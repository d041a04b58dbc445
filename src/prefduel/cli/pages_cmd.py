"""``prefduel play`` and ``prefduel replay``: write the interactive HTML pages.

::

    prefduel play [--world dev] [--seed 0] [--arrival 3] [--out play.html] [--allow-test]
                  [--policy notransfer-ask]   (an ask track: --world dev+ask2)
    prefduel replay RESULTS [--world dev] [--seed 0] [--policy coduel] [--arrival 0]
                         [--out replay.html] [--allow-test]

Both pages are single offline HTML files (no network; CSS, JavaScript and data inline).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tqdm import tqdm

from prefduel.cli.argtypes import seed_int
from prefduel.core.errors import PrefduelError
from prefduel.core.outputs import output_file
from prefduel.pages._html import check_arrival
from prefduel.pages.asks import policy_questions
from prefduel.pages.play import play_page
from prefduel.pages.replay import replay_page
from prefduel.runner.trajectories import find_cell, replay_cell
from prefduel.worlds.spec import parse_world
from prefduel.worlds.world import World


def _arrival(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None


def register(sub: Any) -> dict[str, Callable[[argparse.Namespace, Any], int]]:
    """Add the ``play`` and ``replay`` subcommands to ``sub``; return ``{name: handler}``."""
    play = sub.add_parser(
        "play",
        help="write a page where you play the policy for one student",
        description="Write an offline HTML page to play one real session of a world: each round "
        "you pick two personas, the simulated student clicks exactly as in the benchmark, and "
        "the hidden utilities and your running score are revealed (random pairs 0, the "
        "student's two best 100). On an ask track (--world dev+ask2) you first answer the "
        "student's preference questions: those --policy asked, or up to the budget picked from "
        "the bank.",
    )
    play.add_argument(
        "--world", default="dev", help="roster id or stored-world path (default: dev)"
    )
    play.add_argument("--seed", type=seed_int, default=0, help="world seed (default: 0)")
    play.add_argument(
        "--arrival", type=_arrival, default=0, help="arrival (student session) to play (default: 0)"
    )
    play.add_argument(
        "--policy",
        default=None,
        help="on an ask track: show the questions this policy asked the arrival (it is run on "
        "the world to find them); default: free play, pick questions from the bank",
    )
    play.add_argument("--out", default="play.html", help="output file (default: play.html)")
    play.add_argument(
        "--allow-test", action="store_true", help="allow the locked held-out test-* rosters"
    )

    replay = sub.add_parser(
        "replay",
        help="write a page that replays a finished run arrival by arrival",
        description="Write an offline HTML page that steps through the arrivals of a finished "
        "run: the per-arrival excess regret curve and the pairs the policy showed each student. "
        "The pairs are recovered by re-running the cell, which must reproduce the stored row.",
    )
    replay.add_argument("results", metavar="RESULTS", help="a JSONL results file")
    replay.add_argument(
        "--world", default="dev", help="roster id or stored-world path (default: dev)"
    )
    replay.add_argument("--seed", type=seed_int, default=0, help="world seed (default: 0)")
    replay.add_argument("--policy", default="coduel", help="policy spec (default: coduel)")
    replay.add_argument(
        "--arrival", type=_arrival, default=0, help="arrival shown first (default: 0)"
    )
    replay.add_argument("--out", default="replay.html", help="output file (default: replay.html)")
    replay.add_argument(
        "--allow-test", action="store_true", help="allow the locked held-out test-* rosters"
    )
    return {"play": cmd_play, "replay": cmd_replay}


def _world(name: str, seed: int, allow_test: bool) -> World:
    """The world as the sweep builds it: labelled like result rows, with the requested seed."""
    return parse_world(name).make(seed, allow_test=allow_test)


def _write(path: str, text: str) -> None:
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise PrefduelError(f"cannot write {path}: {exc.strerror or exc}") from None


def cmd_play(args: argparse.Namespace, out: Any) -> int:
    """Write the "be the policy" page."""
    output_file(args.out, "page", PrefduelError)
    world = _world(args.world, args.seed, args.allow_test)
    arrival = check_arrival(world, args.arrival)
    asked = None
    if args.policy is not None:
        asked = policy_questions(world, args.policy, arrival)
    _write(args.out, play_page(world, arrival, asked=asked, policy=args.policy))
    questions = ""
    if world.ask_budget:
        who = "free play"
        if asked is not None:
            who = f"the {len(asked)} question{'s' * (len(asked) != 1)} {args.policy} asked"
        questions = f", preference questions first ({who})"
    out.write(
        f"wrote {args.out}: play arrival {arrival} of {world.name} (seed {world.seed}), "
        f"{world.S} rounds{questions}; open it in a browser\n"
    )
    return 0


def cmd_replay(args: argparse.Namespace, out: Any) -> int:
    """Write the "watch the policy learn" page."""
    output_file(args.out, "page", PrefduelError)
    cell = find_cell(args.results, args.world, args.seed, args.policy, allow_test=args.allow_test)
    world, policy = cell.world, cell.policy
    arrival = check_arrival(world, args.arrival)
    with tqdm(
        total=world.N,
        unit="arrival",
        desc=f"re-running {policy} on {world.name}, seed {args.seed} to recover its pairs",
        file=sys.stderr,
        leave=False,
    ) as bar:
        clicks = replay_cell(cell, on_arrival=lambda _: bar.update())
    _write(args.out, replay_page(world, cell.row, clicks.trajectory, arrival=arrival))
    out.write(
        f"wrote {args.out}: {policy} on {world.name}, seed {args.seed}, {world.N} arrivals "
        f"(score {cell.row.get('score', float('nan')):.1f}); open it in a browser\n"
    )
    return 0
