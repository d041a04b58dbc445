"""``--no-api-key``: saying "this endpoint needs no key" on the command line, for every command
that takes the shared LLM flags."""

from __future__ import annotations

import argparse

import pytest

from prefduel.cli.main import build_parser, main
from prefduel.llm import LLMConfig, add_llm_arguments, config_from_args


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="t")
    add_llm_arguments(parser)
    return parser


def test_no_api_key_overrides_the_yaml_variable():
    base = LLMConfig(backend="openai", api_key_env="MY_KEY")
    assert config_from_args(_parser().parse_args(["--no-api-key"]), base).api_key_env is None
    assert config_from_args(_parser().parse_args([]), base).api_key_env == "MY_KEY"
    named = _parser().parse_args(["--api-key-env", "OTHER_KEY"])
    assert config_from_args(named, base).api_key_env == "OTHER_KEY"
    # a variable really named "none" is still a variable name
    assert config_from_args(_parser().parse_args(["--api-key-env", "none"])).api_key_env == "none"


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["--no-api-key", "--api-key-env", "MY_KEY"], "not allowed with argument"),
        (["--api-key-env", ""], "--no-api-key"),
        (["--api-key-env", "sk-abc123"], "not a variable name"),
    ],
)
def test_bad_combinations_are_usage_errors(argv, fragment, capsys):
    with pytest.raises(SystemExit) as info:
        _parser().parse_args(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert fragment in err
    assert "sk-abc123" not in err  # a key pasted by mistake is not echoed back


@pytest.mark.parametrize(
    "command",
    [["datagen", "c.yaml"], ["prefdisco", "generate", "d"], ["prefdisco", "run", "d"]],
)
def test_every_command_with_llm_flags_takes_it(command, capsys):
    args = build_parser().parse_args([*command, "--no-api-key"])
    assert config_from_args(args, LLMConfig(api_key_env="MY_KEY")).api_key_env is None
    assert main([*command, "--no-api-key", "--api-key-env", "MY_KEY"]) == 2
    assert "not allowed with argument" in capsys.readouterr().err
    assert main([*command, "--help"]) == 0
    assert "--no-api-key" in capsys.readouterr().out
