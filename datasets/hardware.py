"""What the sm_90 (Hopper) architecture fixes for every kernel built for it: the kernels of kernels/cuda/ and
kernels/gluon/ are built for sm_90a only, so their tiles, rings and register caps are sized by these. They come from
the one device table (datasets.devices.SM90, the CUDA C Programming Guide's numbers with their source); what differs
between devices of one architecture (the SM count, memory bandwidth) is read from the device at run time
(kernels.device_limits) or looked up by the driver's name (datasets.devices.lookup), never assumed here.
"""
from __future__ import annotations

from datasets.devices import SM90

SMEM_PER_BLOCK_BYTES = int(SM90.smem_per_block_bytes.value)
SMEM_PER_SM_BYTES = int(SM90.smem_per_sm_bytes.value)
SMEM_RESERVED_PER_BLOCK_BYTES = int(SM90.smem_reserved_per_block_bytes.value)
REGISTERS_PER_SM = int(SM90.registers_per_sm.value)
