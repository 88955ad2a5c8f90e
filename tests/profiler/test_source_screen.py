"""The source screen (profiler.check.source_screen), the parent's checks of a reply (profiler.backends.verify) and
stop_tree (profiler.worker.process): fast, no worker process."""
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from profiler.backends.verify import verify_shape_reply
from profiler.check.source_screen import screen_files, screen_spec
from profiler.wrong import TorchLinear, spec
from profiler.worker import process

KERNEL = """
import math
import torch
import torch.nn.functional as F
import triton
import numpy as np

ready = torch.backends.cudnn.enabled          # reading a flag is fine


def prepare(family, weight):
    return {"w": weight.contiguous(), "k": getattr(weight, "shape")}


def run(state, family, x):
    if torch.backends.cuda.is_built():
        pass
    return F.linear(x, state["w"])
"""

# (id, source line, words the finding must contain)
REFUSED = [
    ("lab module", "import profiler.worker.session", "imports `profiler.worker.session` (the lab's own"),
    ("lab module from", "from profiler.measure import timing", "the lab's own modules"),
    ("datasets", "import datasets", "the lab's own modules"),
    ("gc", "import gc", "imports `gc`"),
    ("inspect", "import inspect as i", "imports `inspect`"),
    ("ctypes", "from ctypes import CDLL", "imports `ctypes`"),
    ("builtins", "import builtins", "imports `builtins`"),
    ("frames", "import sys\nf = sys._getframe(1)", "uses `sys._getframe`"),
    ("frame attribute", "def f(e):\n    return e.__traceback__.tb_frame", "`.tb_frame`"),
    ("globals of a function", "import torch\ng = torch.nn.functional.linear.__globals__", "`.__globals__`"),
    ("settrace", "import sys as s\ns.settrace(None)", "trace hooks"),
    ("sys.modules", "import sys\nm = sys.modules['json']", "the loaded modules"),
    ("exec computed", "code = 'x = 1'\nexec(code)", "calls `exec()` with a computed argument"),
    ("eval literal that imports", "eval(\"__import__('gc')\")", "imports `gc`"),
    ("__import__ computed", "name = 'g' + 'c'\nm = __import__(name)", "`__import__()` with a computed argument"),
    ("import_module computed", "import importlib\nn = 'gc'\nimportlib.import_module(n)", "computed argument"),
    ("getattr computed", "import torch\nn = 'set_' + 'flush_denormal'\ngetattr(torch, n)(True)",
     "`getattr()` with a computed name"),
    ("subprocess", "import subprocess", "starting processes"),
    ("os.fork", "import os\nos.fork()", "uses `os.fork`"),
    ("os.system alias", "from os import system\nsystem('true')", "uses `os.system`"),
    ("os.execv", "import os\nos.execv('/bin/true', ['true'])", "starting processes"),
    ("multiprocessing", "import multiprocessing as mp", "starting processes"),
    ("threading", "from threading import Thread", "starting threads"),
    ("atexit", "import atexit", "exit hooks"),
    ("signal", "import signal", "signal handlers"),
    ("torch.library", "import torch\nlib = torch.library.Library('aten', 'IMPL')", "torch.library"),
    ("torch.library import", "from torch.library import Library", "torch.library"),
    ("torch._C", "import torch\ntorch._C._set_cublas_allow_tf32(True)", "torch._C"),
    ("backend flag", "import torch\ntorch.backends.mkldnn.enabled = False", "assigns `torch.backends.mkldnn.enabled`"),
    ("backend alias", "import torch\nb = torch.backends.cudnn\nb.enabled = False", "torch's backend settings"),
    ("backend flags()", "import torch\nwith torch.backends.cudnn.flags(enabled=False):\n    pass", "backend"),
    ("torch.set_", "import torch\ntorch.set_flush_denormal(True)", "a global torch setting"),
    ("monkey-patch json", "import json\njson.dumps = lambda *a, **k: '{}'", "assigns `json.dumps` (changes an imported"),
    ("monkey-patch F", "import torch.nn.functional as F\nF.linear = None", "monkey-patching"),
    ("setattr on a module", "import json\nsetattr(json, 'dumps', None)", "calls `setattr` on `json`"),
    ("__dict__", "import json\njson.__dict__['dumps'] = None", "`.__dict__`"),
    ("vars", "import json\nv = vars(json)", "calls `vars()`"),
    ("subclasses", "x = object.__subclasses__()", "`.__subclasses__`"),
    ("module bound to a name", "import os\no = os\no.fork()", "uses `os.fork`"),
    ("module attribute bound", "import os\nd = os.dup2\nd(3, 1)", "uses `os.dup2`"),
    ("from-import alias", "from os import dup2 as rebind\nrebind(3, 1)", "uses `os.dup2`"),
    ("getattr bound", "g = getattr\nimport torch\ng(torch, 'set_' + 'x')(True)", "binds the builtin `getattr`"),
    ("setattr bound", "s = setattr", "binds the builtin `setattr`"),
    ("__class__ assigned", "def f(x, C):\n    x.__class__ = C", "assigns `.__class__`"),
    ("os.pipe", "import os\nr, w = os.pipe()", "file descriptors"),
    ("dispatch mode", "from torch.utils._python_dispatch import TorchDispatchMode", "Python dispatch modes"),
    ("_thread", "import _thread as t", "starting threads"),
]


@pytest.mark.parametrize("source,words", [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED])
def test_each_construct_that_reaches_outside_a_kernel_is_refused_with_its_line(tmp_path, source, words):
    mod = tmp_path / "cand.py"
    mod.write_text(KERNEL + "\n" + source + "\n")
    findings = screen_spec(str(mod))
    assert findings, source
    line = KERNEL.count("\n") + 2
    assert any(words in f.what for f in findings), [f.text() for f in findings]
    assert all(f.path == str(mod.resolve()) for f in findings)
    assert min(f.line for f in findings) >= line, [f.text() for f in findings]   # the line that does it


def test_a_plain_kernel_passes_and_lab_files_plans_and_methods_are_not_screened(tmp_path):
    mod = tmp_path / "ok.py"
    mod.write_text(KERNEL)
    assert screen_spec(str(mod)) == []
    assert screen_spec(f"{mod}:run") == []
    assert screen_spec(spec(TorchLinear)) == []   # the lab's own fixtures (profiler/wrong/)
    assert screen_spec("baseline") == [] and screen_spec("method:torch_linear") == []


def test_every_module_the_candidate_loads_from_its_folder_is_screened(tmp_path):
    (tmp_path / "helper.py").write_text("import os\n\n\ndef go():\n    os.fork()\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("import ctypes\n")
    main = tmp_path / "main.py"
    main.write_text(KERNEL + "import helper\nfrom pkg import thing\n")
    found = {(Path(f.path).name, f.line) for f in screen_files([main])}
    assert ("helper.py", 5) in found and ("__init__.py", 1) in found


BASE, CAND = [10.0, 11.0, 12.0, 10.5], [5.0, 5.5, 6.0, 5.2]


def _reply():
    """A worker's honest reply for two candidates timed in four paired rounds."""
    import numpy as np

    def rec(name, s):
        return {"candidate": name, "samples_us": list(s), "n_samples": len(s), "median_us": float(np.median(s)),
                "ci_low_us": 0.001, "ci_high_us": 1e5}

    ratio = float(np.median([b / c for b, c in zip(BASE, CAND)]))
    return {"results": [rec("b", BASE), rec("c", CAND)],
            "pairs": [{"baseline": "b", "candidate": "c", "ratio_median": ratio, "ratio_ci_low": 0.01}]}


def test_the_parent_recomputes_summaries_from_the_raw_samples():
    reply = _reply()
    assert verify_shape_reply(reply, timing_wall_s=1.0) == []
    b, c = reply["results"]
    assert BASE[0] <= b["ci_low_us"] <= b["ci_high_us"] <= BASE[2]   # the parent's CI, not the worker's
    assert reply["pairs"][0]["ratio_ci_low"] > 1.5 and reply["pairs"][0]["n_pairs"] == 4


def test_the_parent_derives_every_flag_itself_and_drops_the_workers():
    """A worker that sends no flags for a result below the parent's floor (141 % of speed of light) still gets
    below_floor; a flag the worker sent that its samples do not support (wide_ci on a tight result) is dropped; the
    error ratio the result carries gives less_accurate by the parent's factor."""
    reply = _reply()
    for r in reply["results"]:
        r["flags"] = ["wide_ci"] if r["candidate"] == "b" else []
    reply["results"][1]["error"] = {"vs_baseline": 9.0}
    floor = {"us": 7.4, "ci_low_us": 7.2}   # the read floor of the shape's bytes: c's 5.35 us is 1.4 x faster
    assert verify_shape_reply(reply, timing_wall_s=1.0, floor=floor, error_factor=4.0) == []
    b, c = reply["results"]
    assert "below_floor" in c["flags"] and "less_accurate" in c["flags"] and c["floor_us"] == 7.4
    assert "below_floor" not in b["flags"] and b["flags"] == [f for f in b["flags"] if f != "below_floor"]
    reply = _reply()
    reply["results"][0]["flags"] = ["made_up"]
    verify_shape_reply(reply, timing_wall_s=1.0)
    assert "made_up" not in reply["results"][0]["flags"]


@pytest.mark.parametrize("mutate,words", [
    (lambda r: r["results"][1].update(median_us=1.0), "is not the median of its own samples"),
    (lambda r: r["results"][1].update(n_samples=99), "n_samples 99 but 4 samples"),
    (lambda r: r["results"][1].update(samples_us=[5.0, 5.5], n_samples=2), "different sample counts"),
    (lambda r: r["results"][0].update(samples_us=[1e6] * 4, median_us=1e6), "on the parent's clock"),
    (lambda r: r["pairs"][0].update(ratio_median=9.0), "is not what its samples give"),
    (lambda r: r["results"][1].update(samples_us=[5.0, -1.0, 6.0, 5.2]), "not a positive finite time"),
], ids=["median", "count", "unpaired", "impossible time", "ratio", "negative"])
def test_a_forged_reply_is_detected_not_believed(mutate, words):
    reply = _reply()
    mutate(reply)
    reasons = verify_shape_reply(reply, timing_wall_s=0.5)
    assert any(words in r for r in reasons), reasons


DETACH = """
import os, sys, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execvp("sleep", ["sleep", "400"])
    os._exit(0)
time.sleep(400)
"""


def test_stop_tree_kills_a_double_forked_detached_grandchild(tmp_path):
    """The subreaper takes in the detached grandchild when its parent exits; stop_tree finds and kills it and the
    process that started it."""
    assert process.become_subreaper()
    proc = subprocess.Popen([sys.executable, "-c", DETACH], start_new_session=True)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        sleepers = [p for p, pp in process._parents().items() if process._cmdline(p).startswith("sleep 400")
                    and pp == os.getpid()]
        if sleepers:
            break
        time.sleep(0.05)
    assert sleepers, "the detached grandchild was not re-parented to this process (child subreaper)"
    killed = process.stop_tree(proc.pid, protected=set())
    proc.wait(timeout=10)
    assert set(sleepers) <= set(killed)
    assert not [p for p in process._parents() if process._cmdline(p).startswith("sleep 400")
                and process._state(p) not in ("Z", "X", "?") and p in sleepers]


def test_stop_tree_leaves_the_parents_own_children_alone():
    """A process this process started itself (a compile pool, a dask worker) shares its session; no process a worker
    started can: stop_tree kills only the latter."""
    assert process.become_subreaper()
    own = subprocess.Popen(["sleep", "30"])
    try:
        worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], start_new_session=True)
        process.stop_tree(worker.pid, protected=set())
        worker.wait(timeout=10)
        assert own.poll() is None, "the parent's own child was killed"
    finally:
        own.kill()
        own.wait()
