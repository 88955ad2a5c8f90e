"""kernels/plans/seed039.json: the write-up's 039 dispatch -- seed036 plus its three additions (the PDL router, the
TMA/WGMMA skinny QKV at 9-32 tokens with 039's instance, cuBLASLt algorithms at QKV M=128 and pooler M=256) -- loads
against the workload, and every other entry is seed036's."""
from datasets import load_workload
from kernels.plans import load_plan

SKINNY_039 = {"BN": 64, "BK": 64, "SPLIT": 3, "STAGES": 8, "STREAMK": 0, "PACK": 0, "num_warps": 4}


def _plans():
    wl = load_workload()
    return load_plan("seed039", wl), load_plan("seed036", wl)


def test_skinny_qkv_at_9_to_32_tokens_is_039s_instance():
    p39, _ = _plans()
    for M, tokens in ((9, 16), (16, 16), (17, 32), (32, 32)):
        method, config = p39.select("qkv_gate", M)
        assert method == "skinny_ws" and config == dict(SKINNY_039, BM=tokens), (M, method, config)
    assert p39.select("qkv_gate", 8)[0] != "skinny_ws" and p39.select("qkv_gate", 33)[0] != "skinny_ws"


def test_pdl_router_and_the_cublaslt_points():
    p39, p36 = _plans()
    for M in (2, 16, 128, 256):
        method, config = p39.select("router", M)
        assert method == "router_hilo_atomic_pdl" and config == p36.select("router", M)[1]
    for fam, M in (("qkv_gate", 128), ("pooler", 256)):
        method, config = p39.select(fam, M)
        assert method == "cublaslt" and config["M"] == M      # an algorithm identity chosen at that shape
        assert p39.select(fam, M - 1)[0] != "cublaslt"


def test_everything_else_is_seed036():
    p39, p36 = _plans()
    changed = {("qkv_gate", M) for M in range(9, 33)} | {("qkv_gate", 128), ("pooler", 256)}
    changed |= {("router", M) for M in range(2, 257)}
    for fam in p36.families:
        for M in list(range(1, 300)) + [1024, 4096]:
            if (fam, M) not in changed:
                assert p39.select(fam, M) == p36.select(fam, M), (fam, M)


def test_notes_say_what_is_exact_and_what_is_approximated():
    p39, _ = _plans()
    notes = p39.notes
    for needle in ("EXACT", "APPROXIMATIONS", "cluster", "42/43/43", "eight stages", "identity", "MEASURED",
                   "not comparable"):
        assert needle in notes, needle
