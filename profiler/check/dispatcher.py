"""The dispatcher's state a candidate must leave alone: the kernels registered for the operators the baseline and the
harness's own operations reach (a torch.library registration adds, replaces or removes one), and Python function and
dispatch modes left entered (every later torch call of the baseline would run through them).

    dispatch_tables() -> {operator: the dispatcher's dump}    dispatch_changes(before, now) -> ["aten::mm for ..."]
    mode_stacks() -> {"torch function mode": n, "Python dispatch mode": n}   (torch's own modes not counted)

profiler.check.guards' Guard takes these snapshots with the global settings and compares, restores and names every
change (_libraries and _drop_new_libraries undo a registration, _pop_modes a mode left entered).
"""
from __future__ import annotations

# The operators the baseline's F.linear and a kernel's usual glue reach (linear -> matmul -> mm/addmm/mv, the views
# and copies around them), for every dispatch key. A torch.library registration for one of them (a correct but slower
# aten::mm for the CPU or CUDA key, active at one M) slowed the baseline where the canary did not look (scored
# 1.35). The dispatcher's own dump of each operator names every kernel and where it was registered, so a kernel
# added, replaced or removed for any key changes it.
DISPATCH_OPS = ("aten::linear", "aten::matmul", "aten::mm", "aten::addmm", "aten::_addmm_activation", "aten::mv",
                "aten::addmv", "aten::bmm", "aten::baddbmm", "aten::dot", "aten::t", "aten::transpose.int",
                "aten::permute", "aten::view", "aten::reshape", "aten::_unsafe_view", "aten::expand",
                "aten::contiguous", "aten::clone", "aten::copy_", "aten::_to_copy", "aten::to.dtype",
                "aten::empty.memory_format", "aten::empty_strided", "aten::zeros", "aten::add.Tensor",
                "aten::mul.Tensor", "aten::sum.dim_IntList", "aten::linalg_vector_norm", "aten::_scaled_mm",
                # what the harness's own operations on a timed call run: the fresh input (profiler.check.timed.
                # FreshFeed), the store's copies and the batched judge (profiler.check.rules.screen_outputs)
                "aten::normal_", "aten::randint.low_generator", "aten::rand.generator", "aten::index_copy_",
                "aten::index_put_", "aten::index.Tensor", "aten::where.self", "aten::sub.Tensor", "aten::div.Tensor",
                "aten::abs", "aten::isfinite", "aten::amax", "aten::all.dim", "aten::le.Scalar", "aten::maximum",
                "aten::clamp", "aten::cat", "aten::eq.Scalar", "aten::sum")


def dispatch_tables() -> dict[str, str]:
    """{operator: the dispatcher's dump of its kernels by key} for DISPATCH_OPS (those this torch has)."""
    import torch

    out = {}
    for op in DISPATCH_OPS:
        try:
            out[op] = torch._C._dispatch_dump(op)
        except Exception:
            continue
    return out


def _kernels(dump: str) -> dict[str, str]:
    """{dispatch key: 'registered at FILE:LINE'} from one dispatcher dump."""
    out = {}
    for line in dump.splitlines():
        key, sep, rest = line.partition(": registered at ")
        if sep and " " not in key.strip():
            out[key.strip()] = rest.split(" :: ")[0]
    return out


def dispatch_changes(before: dict[str, str], now: dict[str, str]) -> list[str]:
    """'aten::mm for key CPU (now registered at FILE:LINE)' for every kernel added, replaced or removed."""
    out = []
    for op, dump in before.items():
        if now.get(op) == dump:
            continue
        old, new = _kernels(dump), _kernels(now.get(op, ""))
        for key in sorted(set(old) | set(new)):
            if old.get(key) != new.get(key):
                out.append(f"{op} for dispatch key {key} (now {'registered at ' + new[key] if key in new else 'removed'})")
    return out


def _drop_new_libraries(known: set[int]) -> None:
    """Destroy every torch.library.Library made since the snapshot (`known`: the ids of those there then): what
    their registrations added to the dispatcher goes with them."""
    import gc

    import torch.library

    for obj in gc.get_objects():
        if issubclass(type(obj), torch.library.Library) and id(obj) not in known:   # type(): no proxy's __class__
            try:
                obj._destroy()
            except Exception:
                pass


def _libraries() -> set[int]:
    import gc

    import torch.library

    return {id(obj) for obj in gc.get_objects() if issubclass(type(obj), torch.library.Library)}


def _library_mode(mode) -> bool:
    """torch's own mode for torch.set_default_device (a setting the guard holds by its value, _settings)."""
    return type(mode).__module__ == "torch.utils._device" and type(mode).__name__ == "DeviceContext"


def _stacks() -> dict[str, list]:
    from torch.overrides import _get_current_function_mode_stack
    from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

    return {"torch function mode": list(_get_current_function_mode_stack()),
            "Python dispatch mode": list(_get_current_dispatch_mode_stack())}


def mode_stacks() -> dict[str, int]:
    """How many Python modes are active now that are not torch's own (the default device's): torch function modes
    (TorchFunctionMode: every torch call of Python code, the baseline's F.linear included, goes through them) and
    dispatch modes (TorchDispatchMode: every aten op does). Both sit outside the dispatcher table dispatch_tables()
    compares; a mode entered at import and never exited runs the candidate's Python inside every later call of the
    baseline."""
    return {kind: sum(1 for m in modes if not _library_mode(m)) for kind, modes in _stacks().items()}


def _pop_modes(kind: str) -> None:
    """Take every mode of `kind` off its stack and put back torch's own, in their order."""
    import torch

    modes = _stacks()[kind]
    for _ in modes:
        if kind == "torch function mode":
            torch._C._pop_torch_function_stack()
        else:
            torch._C._pop_torch_dispatch_stack(None)
    for m in (m for m in modes if _library_mode(m)):
        if kind == "torch function mode":
            torch._C._push_on_torch_function_stack(m)
        else:
            torch._C._push_on_torch_dispatch_stack(m)
