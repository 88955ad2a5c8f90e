"""Every `-h` of `python -m profiler` and `python -m dashboard` renders as prose: an unescaped `%` in a help string
makes argparse splice its own action dict into the sentence ("RSE is <= 0.5{'option_strings': ...")."""
from __future__ import annotations

import argparse

import pytest

from dashboard.cli import main as dashboard_main
from dashboard.cli import report_cli
from profiler.cli import main as profiler_main
from profiler.cli import screen as screen_cli
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
                            {"tune": tune_cli.build_parser(), "screen": screen_cli.build_parser(),
                             "step": step_cli.build_parser()}),
                           ("dashboard", dashboard_main.build_parser(), {"report": report_cli.parser()})):
        helps[prog] = top.format_help()
        for name, sub in _subparsers(top).items():
            helps[f"{prog} {name}"] = (own.get(name) or sub).format_help()
    return helps


HELPS = _all_helps()


def test_every_subcommand_is_covered():
    assert {"profiler run", "profiler tune", "profiler screen", "profiler probe", "profiler explain",
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
