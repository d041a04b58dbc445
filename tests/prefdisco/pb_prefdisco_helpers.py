"""Helpers shared by the PrefDisco tests (imported by name: ``tests/prefdisco`` is on sys.path)."""

from __future__ import annotations

import argparse
import io
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from prefduel.cli import prefdisco_cmd
from prefduel.core.errors import PrefduelError


def run_cli(argv: Sequence[str]) -> tuple[int, str, str]:
    """Run ``prefduel prefdisco ...``; return (status, stdout, stderr).

    Goes through ``prefduel.cli.main`` when ``prefdisco`` is registered there, otherwise
    through a parser with only the prefdisco command (same error handling).
    """
    from prefduel.cli import main as cli_main

    out, err = io.StringIO(), io.StringIO()
    old_out, old_err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        if "prefdisco" in cli_main.build_parser()._subparsers._group_actions[0].choices:  # type: ignore[union-attr]
            status = cli_main.main(["prefdisco", *argv])
        else:
            parser = argparse.ArgumentParser(prog="prefduel")
            sub = parser.add_subparsers(dest="command", required=True)
            handlers = prefdisco_cmd.register(sub)
            try:
                args = parser.parse_args(["prefdisco", *argv])
            except SystemExit as exc:
                status = int(exc.code or 0)
            else:
                try:
                    status = handlers[args.command](args, sys.stdout)
                except PrefduelError as exc:
                    print(f"prefduel: error: {exc}", file=sys.stderr)
                    status = 2
    finally:
        sys.stdout, sys.stderr = old_out, old_err
    return status, out.getvalue(), err.getvalue()


def small_config(
    path: Path, *, models: str = "[scripted-ask1, scripted-ask3]", extra: str = ""
) -> Path:
    """A small offline study config (6 built-in tasks x 2 personas)."""
    path.write_text(
        "generate:\n"
        "  seed: 3\n"
        "  personas: 4\n"
        "  personas_per_task: 2\n"
        "  tasks:\n"
        "    - {format: builtin, limit: 6}\n"
        "  enrich: true\n"
        "  refine_rubrics: true\n"
        "run:\n"
        f"  models: {models}\n"
        "report:\n"
        "  bootstrap: 200\n" + extra,
        encoding="utf-8",
    )
    return path


def tiny_study(root: Path, *, instances: int = 2, models=("scripted-ask3",), **run):
    """A generated offline dataset of ``instances`` built-in tasks (one persona each):
    ``(config, dataset)``; ``run`` overrides keys of the run section."""
    import dataclasses

    from prefduel.prefdisco import (
        GenerateConfig,
        PrefDiscoConfig,
        TaskSource,
        generate_dataset,
        load_dataset,
    )

    config = PrefDiscoConfig(
        generate=GenerateConfig(
            personas=instances, personas_per_task=1, tasks=(TaskSource(limit=instances),)
        )
    )
    config = dataclasses.replace(config, run=dataclasses.replace(config.run, models=models, **run))
    generate_dataset(config, root / "data")
    return config, load_dataset(root / "data")


def interviewer_study(
    root: Path,
    *,
    strategies: str = "[ask, interviewer]",
    interviewer: str = "{prior: {personas: 40}}",
    run: str = "",
) -> Path:
    """Write ``root/study.yaml`` (6 built-in tasks, one persona each, the scripted ask-3 model,
    ``strategies``, the ``interviewer`` settings and extra ``run`` lines) and generate its
    dataset into ``root/data``; return the config's path."""
    config = root / "study.yaml"
    config.write_text(
        "generate:\n"
        "  seed: 0\n  personas: 6\n  personas_per_task: 1\n"
        "  tasks: [{format: builtin, limit: 6}]\n"
        "run:\n"
        "  models: [scripted-ask3]\n"
        f"  strategies: {strategies}\n"
        f"  interviewer: {interviewer}\n" + run + "report: {bootstrap: 100}\n",
        encoding="utf-8",
    )
    status, _, err = run_cli(["generate", str(root / "data"), "--config", str(config)])
    assert status == 0, err
    return config


def jsonl_rows(path: Path) -> list[dict]:
    """The rows of a JSON Lines file."""
    return [json.loads(line) for line in path.read_text().splitlines()]
