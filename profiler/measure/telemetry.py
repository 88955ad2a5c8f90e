"""GPU telemetry through NVML (nvidia-ml-py): environment once per run, samples during it.

Everything degrades to None (with the reason in `nvml_error`) when NVML or a query is missing: a run on a
machine without NVML still works, it just cannot flag throttling.
"""
from __future__ import annotations

import ctypes
import platform
import os
import subprocess
import time
from pathlib import Path
from types import MappingProxyType

# NVML clocks-event / throttle-reason bits (nvml.h, nvmlClocksEventReason*); names kept short for the run file.
THROTTLE_BITS = MappingProxyType({
    0x1: "gpu_idle", 0x2: "applications_clocks_setting", 0x4: "sw_power_cap", 0x8: "hw_slowdown",
    0x10: "sync_boost", 0x20: "sw_thermal_slowdown", 0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown", 0x100: "display_clock_setting",
})


def decode_throttle(mask: int | None) -> list[str]:
    if mask is None:
        return []
    return [name for bit, name in THROTTLE_BITS.items() if mask & bit]


class Telemetry:
    """NVML handle for one CUDA device (matched by PCI bus id when torch exposes it)."""

    def __init__(self, device_index: int = 0, pci_bus_id: str | None = None):
        self.nvml_error: str | None = None
        self._nvml = None
        self._handle = None
        self._t0 = time.perf_counter()
        self.samples: list[dict] = []
        try:
            import pynvml

            pynvml.nvmlInit()
            handle = None
            if pci_bus_id:
                try:
                    handle = pynvml.nvmlDeviceGetHandleByPciBusId(pci_bus_id)
                except Exception:
                    handle = None
            self._handle = handle or pynvml.nvmlDeviceGetHandleByIndex(device_index)
            self._nvml = pynvml
        except Exception as exc:  # no package, no driver, no permission: telemetry off, run goes on
            self.nvml_error = f"{type(exc).__name__}: {exc}"[:200]

    @property
    def available(self) -> bool:
        return self._handle is not None

    def _q(self, fn_name: str, *args):
        if not self.available:
            return None
        try:
            return getattr(self._nvml, fn_name)(self._handle, *args)
        except Exception:
            return None

    def sm_mhz(self) -> float | None:
        return self._q("nvmlDeviceGetClockInfo", self._nvml.NVML_CLOCK_SM) if self.available else None

    def max_sm_mhz(self) -> float | None:
        return self._q("nvmlDeviceGetMaxClockInfo", self._nvml.NVML_CLOCK_SM) if self.available else None

    def throttle_mask(self) -> int | None:
        if not self.available:
            return None
        for name in ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"):
            if hasattr(self._nvml, name):
                value = self._q(name)
                if value is not None:
                    return int(value)
        return None

    def sample(self) -> dict:
        """One telemetry record {t_s, sm_mhz, mem_mhz, power_w, temp_c, throttle}; kept in self.samples."""
        rec = {"t_s": round(time.perf_counter() - self._t0, 3), "sm_mhz": None, "mem_mhz": None,
               "power_w": None, "temp_c": None, "throttle": []}
        if self.available:
            n = self._nvml
            rec["sm_mhz"] = self.sm_mhz()
            rec["mem_mhz"] = self._q("nvmlDeviceGetClockInfo", n.NVML_CLOCK_MEM)
            mw = self._q("nvmlDeviceGetPowerUsage")
            rec["power_w"] = round(mw / 1000.0, 1) if mw is not None else None
            rec["temp_c"] = self._q("nvmlDeviceGetTemperature", n.NVML_TEMPERATURE_GPU)
            rec["throttle"] = decode_throttle(self.throttle_mask())
        self.samples.append(rec)
        return rec

    def snapshot(self) -> dict:
        """Run-level NVML facts for `environment`."""
        if not self.available:
            return {"nvml": f"unavailable ({self.nvml_error})", "clocks": {}, "power_w": None,
                    "temperature_c": None, "throttle_reasons": [], "driver": None}
        n = self._nvml
        rec = self.sample()
        driver = None
        try:
            driver = n.nvmlSystemGetDriverVersion()
            driver = driver.decode() if isinstance(driver, bytes) else driver
        except Exception:
            pass
        limit_mw = self._q("nvmlDeviceGetEnforcedPowerLimit")
        return {"nvml": "ok", "driver": driver,
                "clocks": {"sm_max_mhz": self.max_sm_mhz(),
                           "mem_max_mhz": self._q("nvmlDeviceGetMaxClockInfo", n.NVML_CLOCK_MEM),
                           "sm_mhz_start": rec["sm_mhz"], "mem_mhz_start": rec["mem_mhz"]},
                "power_w": rec["power_w"],
                "power_limit_w": round(limit_mw / 1000.0, 1) if limit_mw is not None else None,
                "temperature_c": rec["temp_c"], "throttle_reasons": rec["throttle"]}


def cuda_device_name(index: int = 0) -> str | None:
    """The CUDA device's name from the driver API (libcuda through ctypes: milliseconds, no torch import and no CUDA
    context); None where there is no driver or no device. Honours CUDA_VISIBLE_DEVICES like torch does."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    count, dev, name = ctypes.c_int(0), ctypes.c_int(0), ctypes.create_string_buffer(256)
    if cuda.cuInit(0) != 0 or cuda.cuDeviceGetCount(ctypes.byref(count)) != 0 or count.value <= index:
        return None
    if cuda.cuDeviceGet(ctypes.byref(dev), index) != 0 or cuda.cuDeviceGetName(name, len(name), dev) != 0:
        return None
    return name.value.decode(errors="replace")


def git_info(root: Path | None = None) -> dict:
    """git sha and dirty flag of the checkout (None where git or the repo is missing)."""
    root = root or Path(__file__).resolve().parents[2]
    # The device host gets a copy of the tree without .git: the caller passes the sha it copied from.
    env_sha = os.environ.get("PROJLAB_GIT_SHA") or None
    if env_sha:   # an explicit sha wins: the copied tree may sit inside another checkout whose HEAD is not it
        return {"git_sha": env_sha, "git_dirty": None}
    try:
        top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=root, capture_output=True, text=True,
                             timeout=10).stdout.strip()
        # A copy of the tree placed inside another checkout (the device gets one under the main checkout's
        # .scratch/) must not report that checkout's HEAD: only a repository rooted here counts.
        if not top or Path(top).resolve() != Path(root).resolve():
            return {"git_sha": env_sha, "git_dirty": None if env_sha else False}
        p = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10)
        sha = p.stdout.strip()
        if p.returncode != 0 or len(sha) != 40:  # a copied tree without git objects prints "HEAD"
            return {"git_sha": env_sha, "git_dirty": None if env_sha else False}
        dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                                    capture_output=True, text=True, timeout=10).stdout.strip())
        return {"git_sha": sha, "git_dirty": dirty if sha else False}
    except Exception:
        return {"git_sha": env_sha, "git_dirty": None if env_sha else False}


def gpu_uuid(props) -> str | None:
    """The device's UUID as the CUDA runtime sees it ("GPU-..."): which physical GPU a process times on, whatever
    CUDA_VISIBLE_DEVICES renumbered (NVML's index would not follow it). None where torch does not expose it."""
    text = str(getattr(props, "uuid", "") or "")
    if not text:
        return None
    return text if text.startswith(("GPU-", "MIG-")) else f"GPU-{text}"


def cpu_model() -> str:
    """This machine's CPU model name (/proc/cpuinfo), or its architecture."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine() or "unknown"


def environment(device, telemetry: Telemetry | None = None) -> dict:
    """gpu, sm_count, l2_bytes, driver, versions, git, NVML clocks/power/temperature/throttle reasons."""
    import torch

    env = {"gpu": None, "sm_count": None, "l2_bytes": None, "driver": None, "cuda": torch.version.cuda,
           "torch": torch.__version__, "triton": None, "numpy": None, "python": platform.python_version(),
           "hostname": platform.node()}
    try:
        import triton

        env["triton"] = triton.__version__
    except Exception:
        pass
    import numpy

    env["numpy"] = numpy.__version__
    if torch.cuda.is_available() and torch.device(device).type == "cuda":   # a CPU worker on a GPU host: no GPU
        props = torch.cuda.get_device_properties(device)
        env.update(gpu=props.name, sm_count=int(props.multi_processor_count), l2_bytes=int(props.L2_cache_size),
                   total_memory_bytes=int(props.total_memory), capability=f"{props.major}.{props.minor}",
                   gpu_uuid=gpu_uuid(props), pci_bus_id=getattr(props, "pci_bus_id", None) or None)
    elif torch.device(device).type == "cpu":
        # Labelled as a device of its own ("CPU: <model>"): runs of different devices are never scored together.
        env.update(gpu=f"CPU: {cpu_model()}", device="cpu", sm_count=os.cpu_count() or None)
    env.update(git_info())
    if telemetry is not None:
        env.update({k: v for k, v in telemetry.snapshot().items() if not (k == "driver" and v is None)})
    # The run-file schema types optional fields strictly: an unknown value is omitted, never null.
    return {k: v for k, v in env.items() if v is not None}
