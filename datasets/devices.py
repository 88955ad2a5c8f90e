"""The devices projlab knows: one table, keyed by the name the driver reports, each fact with its source.

    lookup(name) -> Device              the table's entry for a driver-reported name ("NVIDIA H200", "NVIDIA H100
                                        80GB HBM3", "CPU: AMD EPYC 7B13"); a name not in the table gets a Device
                                        whose facts are all unknown (never another device's numbers)
    of_run(run) -> Device               the device a run file's environment names
    limits(device, props=None) -> Limits  the kernels' resource limits: read from the device's properties where a
                                        process has them (torch.cuda.get_device_properties), else the table's
    fact_text(fact, unit, fmt)          a fact as a page shows it: the number with its source, or why it is unknown

Adding a device is one entry in DEVICES (tests/datasets/test_devices.py adds a fake one and renders a run of it).
Measured numbers (read bandwidth, the compute ceiling, clocks) are never here: each run measures its own with its
probes. What is here is published (a datasheet or the CUDA C Programming Guide) and says where it is from.
"""
from __future__ import annotations

from dataclasses import dataclass, field

GPU, CPU = "gpu", "cpu"
DATASHEET, GUIDE, UNKNOWN = "datasheet", "CUDA C Programming Guide", "unknown"
CPU_PREFIX = "CPU: "          # telemetry.environment names a CPU device "CPU: <model>"


@dataclass(frozen=True)
class Fact:
    """One published number and where it is from; value None: not known for this device."""

    value: float | None = None
    source: str = ""

    @property
    def known(self) -> bool:
        return self.value is not None


NOT_PUBLISHED = Fact(None, "")


@dataclass(frozen=True)
class Arch:
    """What a compute capability fixes for every device of it (CUDA C Programming Guide, "Technical Specifications
    per Compute Capability")."""

    name: str
    smem_per_block_bytes: Fact
    smem_per_sm_bytes: Fact
    smem_reserved_per_block_bytes: Fact
    registers_per_sm: Fact


def _guide(cc: str, value: float) -> Fact:
    return Fact(value, f"{GUIDE}, compute capability {cc}")


# A block may opt into the SM's shared memory less the 1 KB the system reserves for it; 64 K 32-bit registers per SM.
SM80 = Arch("sm_80", _guide("8.0", 163 * 1024), _guide("8.0", 164 * 1024), _guide("8.0", 1024), _guide("8.0", 65536))
SM90 = Arch("sm_90", _guide("9.0", 227 * 1024), _guide("9.0", 228 * 1024), _guide("9.0", 1024), _guide("9.0", 65536))
SM100 = Arch("sm_100", _guide("10.0", 227 * 1024), _guide("10.0", 228 * 1024), _guide("10.0", 1024),
             _guide("10.0", 65536))
NO_ARCH = Arch("", NOT_PUBLISHED, NOT_PUBLISHED, NOT_PUBLISHED, NOT_PUBLISHED)


@dataclass(frozen=True)
class Device:
    """A device's table entry. `key`: the name the bands and pages use; `driver_names`: every name its driver
    reports for it. Facts: the memory's datasheet bandwidth (TB/s, decimal), the dense BF16 tensor rate (TFLOP/s;
    datasheets print the rate with 2:4 sparsity, twice this), the SM count."""

    key: str
    title: str
    kind: str = GPU
    driver_names: tuple[str, ...] = ()
    memory: str = "memory"
    hbm_tbps: Fact = NOT_PUBLISHED
    bf16_tflops: Fact = NOT_PUBLISHED
    sm_count: Fact = NOT_PUBLISHED
    arch: Arch = NO_ARCH
    in_table: bool = True

    @property
    def is_cpu(self) -> bool:
        return self.kind == CPU


def _sheet(doc: str, value: float, note: str = "") -> Fact:
    return Fact(value, f"{doc}{f', {note}' if note else ''}")


H100_SHEET = "NVIDIA H100 Tensor Core GPU datasheet"
H200_SHEET = "NVIDIA H200 Tensor Core GPU datasheet"
B200_SHEET = "NVIDIA HGX B200 datasheet"
A100_SHEET = "NVIDIA A100 Tensor Core GPU datasheet"
HALF = "half the 2:4-sparsity figure"

DEVICES: tuple[Device, ...] = (
    Device("NVIDIA H200", "H200 SXM", GPU, ("NVIDIA H200",), "HBM3e",
           _sheet(H200_SHEET, 4.8, "H200 SXM"), _sheet(H200_SHEET, 989.5, f"H200 SXM, {HALF} 1,979"),
           # every committed H200 run file's environment: sm_count 132 (multi_processor_count)
           Fact(132, "multi_processor_count recorded in every committed H200 run file"), SM90),
    Device("NVIDIA H200 NVL", "H200 NVL", GPU, ("NVIDIA H200 NVL",), "HBM3e",
           _sheet(H200_SHEET, 4.8, "H200 NVL"), _sheet(H200_SHEET, 835.5, f"H200 NVL, {HALF} 1,671"),
           NOT_PUBLISHED, SM90),
    Device("NVIDIA H100 SXM", "H100 SXM", GPU, ("NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM5 80GB"), "HBM3",
           _sheet(H100_SHEET, 3.35, "H100 SXM"), _sheet(H100_SHEET, 989.5, f"H100 SXM, {HALF} 1,979"),
           _sheet("NVIDIA H100 Tensor Core GPU Architecture whitepaper", 132, "H100 SXM5"), SM90),
    Device("NVIDIA H100 PCIe", "H100 PCIe", GPU, ("NVIDIA H100 PCIe",), "HBM2e",
           _sheet(H100_SHEET, 2.0, "H100 PCIe"), _sheet(H100_SHEET, 756.5, f"H100 PCIe, {HALF} 1,513"),
           _sheet("NVIDIA H100 Tensor Core GPU Architecture whitepaper", 114, "H100 PCIe"), SM90),
    Device("NVIDIA H100 NVL", "H100 NVL", GPU, ("NVIDIA H100 NVL",), "HBM3",
           _sheet(H100_SHEET, 3.9, "H100 NVL"), _sheet(H100_SHEET, 835.5, f"H100 NVL, {HALF} 1,671"),
           NOT_PUBLISHED, SM90),
    Device("NVIDIA B200", "B200", GPU, ("NVIDIA B200",), "HBM3e",
           _sheet(B200_SHEET, 8.0, "per GPU"), _sheet(B200_SHEET, 2250.0, f"per GPU, {HALF} 4.5 PFLOP/s"),
           NOT_PUBLISHED, SM100),
    Device("NVIDIA A100 SXM4 80GB", "A100 SXM4 80GB", GPU, ("NVIDIA A100-SXM4-80GB",), "HBM2e",
           _sheet(A100_SHEET, 2.039, "A100 80GB SXM"), _sheet(A100_SHEET, 312.0, f"{HALF} 624"),
           _sheet("NVIDIA A100 Tensor Core GPU Architecture whitepaper", 108, "A100"), SM80),
    Device("NVIDIA A100 SXM4 40GB", "A100 SXM4 40GB", GPU, ("NVIDIA A100-SXM4-40GB",), "HBM2",
           _sheet(A100_SHEET, 1.555, "A100 40GB SXM"), _sheet(A100_SHEET, 312.0, f"{HALF} 624"),
           _sheet("NVIDIA A100 Tensor Core GPU Architecture whitepaper", 108, "A100"), SM80),
    Device("NVIDIA A100 PCIe 80GB", "A100 PCIe 80GB", GPU, ("NVIDIA A100 80GB PCIe",), "HBM2e",
           _sheet(A100_SHEET, 1.935, "A100 80GB PCIe"), _sheet(A100_SHEET, 312.0, f"{HALF} 624"),
           _sheet("NVIDIA A100 Tensor Core GPU Architecture whitepaper", 108, "A100"), SM80),
    Device("NVIDIA A100 PCIe 40GB", "A100 PCIe 40GB", GPU, ("NVIDIA A100-PCIE-40GB",), "HBM2",
           _sheet(A100_SHEET, 1.555, "A100 40GB PCIe"), _sheet(A100_SHEET, 312.0, f"{HALF} 624"),
           _sheet("NVIDIA A100 Tensor Core GPU Architecture whitepaper", 108, "A100"), SM80),
)


def _norm(name: str) -> str:
    return " ".join(str(name).split()).casefold()


def lookup(name: str | None, table: tuple[Device, ...] | None = None) -> Device:
    """The entry whose driver names (or key) hold `name` exactly (case and spacing aside). A CPU ("CPU: <model>")
    is a device of its own with nothing published; another unknown name gets an entry with every fact unknown."""
    table = DEVICES if table is None else table
    text = str(name or "").strip()
    want = _norm(text)
    for dev in table:
        if want and want in {_norm(n) for n in (dev.key, *dev.driver_names)}:
            return dev
    if text.startswith(CPU_PREFIX) or text.casefold() == "cpu":
        model = text[len(CPU_PREFIX):].strip() if text.startswith(CPU_PREFIX) else ""
        return Device(text if model else "CPU", f"CPU ({model})" if model else "CPU", CPU, (text,), "DRAM",
                      in_table=False)
    return Device(text or UNKNOWN, text or "an unnamed device", GPU, (text,) if text else (), in_table=False)


# The contest write-up's published times and probes (datasets/official_036.csv, datasets/seed_probes.csv) are an
# H200's: the device of the published source.
WRITEUP_DEVICE = "NVIDIA H200"


def device_of(run: dict | None) -> str | None:
    """The driver-reported name a run file's environment records (None where it records none)."""
    env = run.get("environment") if isinstance(run, dict) else None
    name = env.get("gpu") if isinstance(env, dict) else None
    return str(name) if name else None


def of_run(run: dict, table: tuple[Device, ...] | None = None) -> Device:
    """The device a run file's environment names (environment.gpu)."""
    env = run.get("environment") if isinstance(run, dict) else None
    return lookup((env or {}).get("gpu") if isinstance(env, dict) else None, table)


def same_kind(a: str | None, b: str | None) -> bool:
    """Whether two driver-reported names are the same kind of device (one table entry; unknown names: equal)."""
    da, db = lookup(a), lookup(b)
    return da.key == db.key and da.kind == db.kind


@dataclass(frozen=True)
class Limits:
    """The resource limits a kernel sizes itself by, each with its source (the device, or the table)."""

    sm_count: Fact = NOT_PUBLISHED
    smem_per_block_bytes: Fact = NOT_PUBLISHED
    smem_per_sm_bytes: Fact = NOT_PUBLISHED
    smem_reserved_per_block_bytes: Fact = NOT_PUBLISHED
    registers_per_sm: Fact = NOT_PUBLISHED
    device: str = ""
    notes: tuple[str, ...] = field(default=())


def limits(device: Device, props=None) -> Limits:
    """The limits of `device`: from `props` (an object with torch.cuda.get_device_properties' attributes:
    multi_processor_count, shared_memory_per_block_optin, shared_memory_per_multiprocessor,
    regs_per_multiprocessor) where it has them, else the table's (its compute capability's), else unknown."""
    def read(attr: str, fallback: Fact) -> Fact:
        value = getattr(props, attr, None) if props is not None else None
        if isinstance(value, (int, float)) and value > 0:
            return Fact(int(value), f"reported by the device ({attr})")
        return fallback
    arch = device.arch
    per_sm = read("shared_memory_per_multiprocessor", arch.smem_per_sm_bytes)
    return Limits(read("multi_processor_count", device.sm_count),
                  read("shared_memory_per_block_optin", arch.smem_per_block_bytes), per_sm,
                  arch.smem_reserved_per_block_bytes, read("regs_per_multiprocessor", arch.registers_per_sm),
                  device.key)


def fact_text(fact: Fact, unit: str = "", fmt: str = "{:g}", why: str = "not published for this device") -> str:
    """'4.8 TB/s (NVIDIA H200 Tensor Core GPU datasheet, H200 SXM)' or 'unknown: not published for this device'."""
    if not fact.known:
        return f"{UNKNOWN}: {why}"
    return f"{fmt.format(fact.value)}{f' {unit}' if unit else ''} ({fact.source})"
