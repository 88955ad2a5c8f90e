"""FLOPs, bytes and intensity, hand-computed."""
import pandas as pd
import pytest

from datasets import load_workload
from dashboard.model import metrics

MIB = 1 << 20


def test_pooler_m16():
    M, N, K = 16, 4096, 8192
    assert metrics.flops(M, N, K) == 2 * 16 * 4096 * 8192 == 1_073_741_824
    assert metrics.weight_bytes(N, K) == 64 * MIB  # seed: "64 MiB of weights, or about 67.1 decimal MB"
    assert metrics.bytes_moved(M, N, K) == 64 * MIB + 16 * 8192 * 2 + 16 * 4096 * 2
    assert metrics.flop_per_weight_byte(M, N, K) == 16  # seed: M FLOPs per weight byte
    assert metrics.intensity_flop_per_byte(M, N, K) == pytest.approx(1_073_741_824 / (67_108_864 + 262_144 + 131_072))


def test_router_counts():
    M, N, K = 16, 256, 8192
    assert metrics.weight_bytes(N, K, "float32") == 256 * 8192 * 4
    assert metrics.bytes_moved(M, N, K, "bfloat16", "float32", "float32") == 256 * 8192 * 4 + 16 * 8192 * 2 + 16 * 256 * 4
    assert metrics.executed_flops(M, N, K, hilo=True) == 2 * metrics.flops(M, N, K)
    assert metrics.executed_flops(M, N, K) == metrics.flops(M, N, K)
    assert metrics.flop_per_weight_byte(M, N, K, "float32") == 8  # M/2 for FP32 weights


def test_unknown_dtype():
    with pytest.raises(ValueError, match="unknown dtype 'int8'"):
        metrics.dtype_bytes("int8")


def test_add_metrics_on_the_workload():
    table = metrics.add_metrics(load_workload().shapes)
    pooler16 = table[(table.load == "decode 16") & (table.family == "pooler")].iloc[0]
    assert pooler16.weight_bytes == 64 * MIB
    assert pooler16.flop_per_weight_byte == 16
    router = table[(table.load == "verify 32") & (table.family == "router")].iloc[0]
    assert router.bytes == 256 * 8192 * 4 + 256 * 8192 * 2 + 256 * 256 * 4
    assert isinstance(table, pd.DataFrame) and len(table) == 30
