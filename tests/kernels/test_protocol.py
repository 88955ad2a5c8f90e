"""kernels/README.md's protocol block is the code's: every documented name is imported and its parameters compared
with the line; a user's module written exactly as documented runs through load_candidate; every known-wrong class
follows the candidate protocol with the same parameter names (so the harness calls them like any candidate)."""
import importlib
import inspect
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"<!-- protocol:.*?-->\s*```text\n(.*?)```", re.S)
LINE = re.compile(r"^(?P<name>[\w.]+)\((?P<params>[^)]*)\)")
USER = "your_module."


def _documented() -> list[tuple[str, list[str]]]:
    text = (ROOT / "kernels" / "README.md").read_text(encoding="utf-8")
    block = BLOCK.search(text)
    assert block, "kernels/README.md has no protocol block"
    rows = []
    for line in block.group(1).splitlines():
        match = LINE.match(line.strip())
        assert match, f"not a protocol line: {line!r}"
        params = [p.strip() for p in match["params"].split(",") if p.strip()]
        rows.append((match["name"], params))
    return rows


def _resolve(dotted: str):
    parts = dotted.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(dotted)


def _params(fn) -> list[str]:
    out = []
    for p in inspect.signature(fn).parameters.values():
        if p.name == "self":
            continue
        out.append(p.name if p.default is inspect.Parameter.empty else f"{p.name}={p.default!r}")
    return out


def test_every_documented_signature_is_the_codes():
    rows = [(name, params) for name, params in _documented() if not name.startswith(USER)]
    assert {"kernels.candidate.Candidate.prepare", "kernels.method.Method.prepare"} <= {n for n, _ in rows}
    for name, params in rows:
        assert _params(_resolve(name)) == params, name


def test_every_candidate_class_keeps_the_protocol():
    from kernels import candidate

    want = {name.rsplit(".", 1)[1]: params for name, params in _documented()
            if name.startswith("kernels.candidate.Candidate.")}
    for cls in (candidate.PlanCandidate, candidate.MethodCandidate, candidate.ModuleCandidate,
                candidate.ObjectCandidate):
        for attr, params in want.items():
            assert _params(getattr(cls, attr)) == params, f"{cls.__name__}.{attr}"


def test_every_launcher_keeps_the_methods_pair():
    from kernels.registry import METHODS

    want = {name.rsplit(".", 1)[1]: params[:2] for name, params in _documented()
            if name.startswith("kernels.launch.")}
    pytest.importorskip("torch")
    for method in METHODS.values():
        impl = _resolve(method.impl.replace(":", "."))
        for attr, params in want.items():
            assert _params(getattr(impl, attr))[:2] == params, f"{method.name} ({method.impl}).{attr}"


def test_a_user_module_written_as_documented_runs(tmp_path):
    torch = pytest.importorskip("torch")
    from kernels.candidate import load_candidate

    rows = {name[len(USER):]: params for name, params in _documented() if name.startswith(USER)}
    assert set(rows) == {"prepare", "run"}
    body = {"prepare": "return {'w': " + rows["prepare"][0] + "}",
            "run": f"return {rows['run'][2]} @ {rows['run'][0]}['w'].t()"}
    source = "".join(f"def {fn}({', '.join(params)}):\n    {body[fn]}\n" for fn, params in rows.items())
    path = tmp_path / "documented.py"
    path.write_text(source)
    cand = load_candidate(str(path))
    w, x = torch.randn(8, 4), torch.randn(2, 4)
    assert torch.equal(cand.run(cand.prepare("o", w), "o", x), x @ w.t())


def test_every_known_wrong_class_keeps_the_protocol():
    from profiler import wrong

    want = {name.rsplit(".", 1)[1]: params for name, params in _documented()
            if name.startswith("kernels.candidate.Candidate.")}
    classes = [c for c in vars(wrong).values() if inspect.isclass(c) and c.__module__.startswith(wrong.__name__)
               and callable(getattr(c, "prepare", None)) and callable(getattr(c, "run", None))]
    assert len(classes) > 20
    for cls in classes:
        for attr in ("prepare", "run"):
            assert _params(getattr(cls, attr))[:len(want[attr])] == want[attr], f"{cls.__name__}.{attr}"
