"""Every line the command lines print goes through one escaping function (datasets.text.escape_controls): control
characters, ANSI sequences, CR and bidi overrides from a name, a reason, an argument or a worker's output line reach
the terminal as escapes ('\\x1b'), never raw; a name's own newline cannot start a fake line."""
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from datasets.text import EscapedStream, escape_controls, escape_strings

ROOT = Path(__file__).resolve().parents[2]
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
EVIL = "evil\x1b]0;pwned\x07\x1b[2J\u202eboss\r\nFAKE: all correct"


def test_the_escaping_function_keeps_layout_only_when_asked():
    assert escape_controls("a\x1b[31mb\r\n\tc\u202e\x00\x9b") == "a\\x1b[31mb\\r\\n\\tc\\u202e\\x00\\x9b"
    assert escape_controls("a\x1b[31mb\r\n\tc", layout=True) == "a\\x1b[31mb\\r\n\tc"
    assert escape_strings({EVIL: [EVIL, (1, EVIL)]}) == {escape_controls(EVIL): [escape_controls(EVIL),
                                                                                  (1, escape_controls(EVIL))]}


def test_an_escaped_stream_writes_escapes_and_keeps_the_raw_streams_other_parts():
    raw = io.StringIO()
    stream = EscapedStream(raw)
    assert stream.write(EVIL + "\n") == len(EVIL) + 1
    stream.flush()
    out = stream.getvalue()   # the raw stream's own method
    assert not RAW.search(out) and out.splitlines()[1] == "FAKE: all correct"   # layout is the caller's


def _hostile_run() -> dict:
    shape = {"load": "decode 1", "family": "o", "M": 1, "N": 64, "K": 256}
    ok = {**shape, "candidate": "baseline", "median_us": 10.0, "correct": True, "flags": []}
    bad = {**shape, "candidate": EVIL, "median_us": 9.0, "correct": False, "flags": [EVIL],
           "error": {"reasons": [EVIL]}}
    return {"label": EVIL, "status": "complete", "environment": {"gpu": EVIL, "settings": {"candidates": [
        "baseline", EVIL], "mode": EVIL}}, "results": [ok, bad], "pairs": [],
        "failures": [{**shape, "candidate": EVIL, "kind": EVIL, "phase": EVIL, "reasons": [EVIL]}]}


def test_the_run_table_and_its_failed_and_incorrect_lines_escape_every_name():
    from profiler.cli.main import format_run
    text = format_run(_hostile_run())
    assert not RAW.search(text.replace("\n", ""))
    assert not any(line.startswith("FAKE") for line in text.splitlines())
    assert "FAILED decode 1/o M=1 evil\\x1b]0;pwned\\x07\\x1b[2J\\u202eboss\\r\\nFAKE" in text
    assert "INCORRECT decode 1/o M=1 evil\\x1b" in text


@pytest.mark.parametrize("cli", ["profiler", "dashboard"])
def test_a_command_lines_own_error_about_an_argument_is_escaped(cli, capsys, tmp_path):
    if cli == "profiler":
        from profiler.cli.main import main
        with pytest.raises(SystemExit):
            main(["run", "--plan", "baseline", "--workload", str(tmp_path / f"{EVIL}.json")])
    else:
        from dashboard.cli.main import main
        assert main(["summarize", str(tmp_path / f"{EVIL}.json")]) != 0
    out = capsys.readouterr()
    text = out.out + out.err
    assert "evil\\x1b]0;pwned\\x07\\x1b[2J\\u202eboss\\r" in text and not RAW.search(text)


HOSTILE = """
import sys

from profiler.wrong.base import TorchLinear


class Hostile(TorchLinear):
    name = NAME

    def prepare(self, family, weight):
        print("\\x1b[2J\\x1b]0;title\\x07 screen cleared\\u202e", file=sys.stderr, flush=True)
        raise RuntimeError(NAME)
"""


def test_profiler_run_prints_a_hostile_candidates_name_reason_and_worker_lines_escaped(tmp_path):
    """A real `profiler run` on CPU (worker processes: slow): its table, its FAILED line and the forwarded
    [worker] lines."""
    pytest.importorskip("torch")
    mod = tmp_path / "hostile.py"
    mod.write_text(f"NAME = {EVIL!r}\n" + HOSTILE)
    workload = tmp_path / "tiny.json"
    workload.write_text(json.dumps({"families": {"o": {"N": 64, "K": 256}}, "loads": [{"load": "decode 1", "M": 1}]}))
    out = subprocess.run([sys.executable, "-m", "profiler", "run", "--device", "cpu", "--no-probes", "--canary", "off",
                          "--max-seconds-per-shape", "0.05", "--workload", str(workload), "--plan", "baseline",
                          "--candidate", f"{mod}:Hostile", "--out", str(tmp_path / "r.json"), "--trust-candidate"],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    text = out.stdout + out.stderr
    assert not RAW.search(text), [line for line in text.splitlines() if RAW.search(line)][:3]
    assert "[worker] \\x1b[2J\\x1b]0;title\\x07 screen cleared\\u202e" in out.stderr
    assert "FAILED decode 1/o M=1 evil\\x1b]0;pwned\\x07\\x1b[2J\\u202eboss" in out.stdout
    assert not any(line.startswith("FAKE") for line in text.splitlines())
