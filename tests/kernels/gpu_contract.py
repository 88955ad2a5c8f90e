"""The GPU kernel tests' one contract check: a method + config through profiler.check.contract.check_candidate (poisoned
outputs, fresh inputs, repeated calls, CUDA-graph replays with new inputs, inputs and weights unchanged)."""


def assert_contract(name: str, config: dict, row: dict, seed: int) -> None:
    import torch

    from kernels.candidate import MethodCandidate
    from profiler.check.contract import check_candidate

    torch.backends.cuda.matmul.allow_tf32 = False
    check = check_candidate(MethodCandidate(name, config), row, "cuda", seed=seed)
    assert check.ok, (name, config, row["family"], row["M"], check.reasons)
