"""``prefduel datagen``: build a TutorDuel world from LLM calls.

::

    prefduel datagen CONFIG.yaml [--dry-run [--format text|json]] [--out DIR] [--batch]
                          [--no-progress] [--backend openai|scripted] [--base-url URL]
                          [--api-key-env NAME | --no-api-key] [--cache PATH | --no-cache]
                          [--call-log PATH] [--budget AMOUNT] [--max-connections N] [...]

``--dry-run`` prints, per stage, the calls, how many are cached, the estimated tokens and cost,
and sends nothing (with the cost online and as provider batches). With ``--batch`` the calls not
cached go as provider batches (OpenAI's Batch API: about half price, results within 24 hours);
their ids are kept in ``datagen/batches.json`` of the world folder, so re-running after an
interruption collects them instead of sending them again. Every stage runs through the
cache (re-running resumes; no answer received is paid twice), with a progress bar per stage on
stderr, then the summary is printed and the world is written. Exit status 0 when the world was
written, 1 when calls failed (re-run to resume), 2 on a config or endpoint error (a refused key,
a wrong URL or port: re-running as is cannot help; the summary names the base URL and the
server's message) or when the answers cannot make a world (fewer valid judge picks than
``judge.min_valid``: the summary is printed, the answers stay cached), 130 when interrupted.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from prefduel.datagen.config import load_config
from prefduel.datagen.errors import WorldRefusedError
from prefduel.datagen.pipeline import estimate, generate
from prefduel.llm.config import add_llm_arguments, config_from_args


def register(sub: Any) -> dict[str, Callable[[argparse.Namespace, Any], int]]:
    """Add the ``datagen`` subcommand to ``sub``; return ``{name: handler}``."""
    parser = sub.add_parser(
        "datagen",
        help="build a world from LLM calls (questions, answers, rater, judge)",
        description="Build a TutorDuel world from LLM calls as the paper did: generated "
        "questions, one answer per persona, a rater scoring all personas in one call, and a "
        "role-playing judge picking A or B for every persona pair in both display orders and "
        "both label assignments, several samples each; then smoothed log-odds -> P, ridge "
        "Bradley-Terry -> U, and a stored world for `prefduel run --worlds DIR`. Every "
        "call is cached: re-running after an interruption sends only the missing calls. The "
        "scripted backend (default) runs offline.",
    )
    parser.add_argument("config", metavar="CONFIG", help="a datagen YAML config")
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print calls, cached calls, estimated tokens and cost per stage; send nothing",
    )
    parser.add_argument(
        "--format", choices=("text", "json"), default="text", help="dry-run output format"
    )
    parser.add_argument(
        "--out", default=None, metavar="DIR", help="world directory (default: the config's output)"
    )
    parser.add_argument(
        "--batch",
        action="store_true",
        help="send the calls not cached as provider batches (OpenAI's Batch API, /v1/files and "
        "/v1/batches: about half price, within 24 h); re-running resumes the batches in flight "
        "(settings: the config's batch: section)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    add_llm_arguments(parser)
    return {"datagen": cmd_datagen}


def cmd_datagen(args: argparse.Namespace, out: Any) -> int:
    """Dry-run or run the pipeline of ``args.config``."""
    config = load_config(args.config)
    llm = config_from_args(args, config.llm)
    if args.dry_run:
        plan = estimate(config, llm=llm)
        if args.format == "json":
            out.write(json.dumps(plan.to_json(), indent=1) + "\n")
        else:
            out.write(plan.format())
        return 0
    try:
        result = generate(
            config, llm=llm, output=args.out, progress=not args.no_progress, batch=args.batch
        )
    except WorldRefusedError as exc:
        if exc.result is not None:
            out.write(exc.result.summary())  # what was collected; the error says why no world
        raise
    except KeyboardInterrupt:
        print(
            "prefduel: datagen: answered calls are cached (and batches in flight recorded); "
            "re-run the same command to resume",
            file=sys.stderr,
        )
        raise
    out.write(result.summary())
    if result.complete:
        return 0
    return 2 if result.endpoint_error is not None else 1
