"""The resource limits of the device this process runs kernels on, read from it (torch.cuda.get_device_properties)
and named by datasets.devices: what a method's shape check and a launcher size a grid or a shared-memory ring by.

    current() -> datasets.devices.Limits   this process's CUDA device's limits; every fact unknown where the
                                           process has no CUDA device (never another device's numbers)
    sm_count() -> int | None               its SM count, None where unknown

A process that has not imported torch has no device to ask (the command line checking a plan without a GPU): its
limits are unknown, and a check that needs one leaves the decision to the launcher, which asks the device.
"""
from __future__ import annotations

import sys
from functools import lru_cache

from datasets import devices


@lru_cache(maxsize=8)
def _limits(index: int) -> devices.Limits:
    import torch

    props = torch.cuda.get_device_properties(index)
    return devices.limits(devices.lookup(props.name), props)


def current() -> devices.Limits:
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available():
        return devices.Limits()
    return _limits(int(torch.cuda.current_device()))


def sm_count() -> int | None:
    fact = current().sm_count
    return int(fact.value) if fact.known else None
