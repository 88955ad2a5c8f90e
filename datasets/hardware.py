"""The H200's hardware numbers that kernels size their tiles, grids and checks by: one place, each with its source.

Measured numbers (times, bandwidths, the compute ceiling) are not here: they come from each run's own probes. What
a running process can ask the device (SM count, L2 size) is asked there (`torch.cuda.get_device_properties`); the
constants below serve code that must decide without a GPU (a method's shape check when a plan loads).
"""
from __future__ import annotations

# CUDA C Programming Guide, "Technical Specifications per Compute Capability", compute capability 9.0 (sm_90):
# a block may opt into at most 227 KB of shared memory; an SM has 228 KB, of which the system reserves 1 KB
# for each resident block.
SMEM_PER_BLOCK_BYTES = 227 * 1024
SMEM_PER_SM_BYTES = 228 * 1024
SMEM_RESERVED_PER_BLOCK_BYTES = 1024
# Same table: 64 K 32-bit registers per SM.
REGISTERS_PER_SM = 64 * 1024

# The H200's streaming multiprocessors: `sm_count` 132 in every committed H200 run file's environment (recorded
# from torch.cuda.get_device_properties(...).multi_processor_count, profiler/measure/telemetry.py).
H200_SMS = 132

# NVIDIA H200 datasheet: 4.8 TB/s HBM3e bandwidth. Published, never measured here: figures draw it for reference.
H200_DATASHEET_HBM_TBPS = 4.8
