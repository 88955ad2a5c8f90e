"""Every `-h` of `python -m profiler` and `python -m dashboard` renders as prose: an unescaped `%` in a help string
makes argparse splice its own action dict into the sentence ("RSE is <= 0.5{'option_strings': ...")."""
from __future__ import annotations

import argparse

import pytest

from dashboard.cli import main as dashboard_main
from dashboard.cli import report_cli
from profiler.cli import main as profiler_main
from profiler.cli import survey as survey_cli
from profiler.cli import step as step_cli
from profiler.cli import tune as tune_cli


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    found = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found.update(action.choices)
    return found


def _all_helps() -> dict[str, str]:
    helps = {}
    for prog, top, own in (("profiler", profiler_main.build_parser(),
                            {"tune": tune_cli.build_parser(), "survey": survey_cli.build_parser(),
                             "screen": survey_cli.build_parser(),
                             "step": step_cli.build_parser()}),
                           ("dashboard", dashboard_main.build_parser(), {"report": report_cli.parser()})):
        helps[prog] = top.format_help()
        for name, sub in _subparsers(top).items():
            helps[f"{prog} {name}"] = (own.get(name) or sub).format_help()
    return helps


HELPS = _all_helps()


def test_every_subcommand_is_covered():
    assert {"profiler run", "profiler tune", "profiler survey", "profiler screen", "profiler probe", "profiler explain",
            "profiler step", "dashboard step", "dashboard summarize", "dashboard table", "dashboard report",
            "dashboard results"} <= set(HELPS)


@pytest.mark.parametrize("name", sorted(HELPS))
def test_help_renders_as_text(name):
    text = HELPS[name]
    assert "{'option_strings'" not in text, f"{name} -h splices an argparse dict into its text"
    assert "%(" not in text and "%%" not in text, f"{name} -h shows an unformatted % placeholder"


def test_run_help_names_the_rse_target_and_canary_order():
    text = " ".join(HELPS["profiler run"].split())
    assert "RSE is <= " in text and "% after >= " in text
    assert "after the sweep" not in text and "before the paired shapes" in text


@pytest.mark.parametrize("name", sorted(HELPS))
def test_a_description_ends_its_sentence(name):
    """A description cut at a line break ("...: scores, per-shape") reads as a broken sentence."""
    head = HELPS[name].split("\n\n")
    description = " ".join(head[1].split()) if len(head) > 2 and not head[1].lstrip().startswith(
        ("positional arguments", "options")) else ""
    assert not description or description.endswith((".", ")", ":", "`")), f"{name} -h: ...{description[-60:]!r}"


def test_the_config_survey_and_the_source_screen_are_two_words():
    """`profiler survey` times every config of chosen methods; the source screen (profiler/check/source_screen.py)
    refuses a candidate's source before it runs. The survey's old subcommand name, `screen`, is an alias the help
    names as such."""
    top = " ".join(HELPS["profiler"].split())
    assert "survey (screen)" in top and "'screen' is its old name, kept as an alias" in top, top
    subs = _subparsers(profiler_main.build_parser())
    assert subs["screen"] is subs["survey"]
    assert set(profiler_main.SURVEY_NAMES) == {"survey", "screen"}
    survey = " ".join(HELPS["profiler survey"].split())
    assert survey.startswith("usage: python -m profiler survey") and "Config survey" in survey
    assert "screening" not in survey.lower()
    assert "source screen" in " ".join(HELPS["profiler run"].split())
