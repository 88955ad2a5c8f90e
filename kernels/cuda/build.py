"""Build the CUDA C++ sources of kernels/cuda/ once per source hash, cache the library, load it.

    load_extension(EXTENSION) -> module        # the torch extension module (a CUDA host with nvcc, or a cached build)
    python -m kernels.cuda.build               # build every extension into the lab's cache (lab code only)

A build is torch.utils.cpp_extension.load_inline (nvcc, `-gencode=arch=compute_90a,code=sm_90a`: clusters and
distributed shared memory are sm_90 features); it takes ~40 s on a fresh H200 host, so the built library is kept
under <cache>/<name>_<hash>/ and loaded from there while the sources, flags, torch and CUDA versions are unchanged
(the hash covers all of them). Two caches, looked up in this order:
- the lab's, the repository's ignored artifacts/cuda_build: filled only by `python -m kernels.cuda.build` (which
  imports nothing but this repository's kernels), read-only to a sandboxed worker;
- the worker's own, $PROJLAB_CUDA_CACHE (profiler.worker.sandbox points it into the worker's scratch folder, removed
  when the worker ends): where a worker builds what the lab's cache lacks, so nothing a candidate could write there
  is ever loaded by another worker or a later run. Without the variable (a plain Python session) the lab's cache is
  the one written.
Without a CUDA compiler and without a cached build the load is refused with one line saying so (CI has neither).
"""
from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

CUDA_DIR = Path(__file__).resolve().parent
REPO_ROOT = CUDA_DIR.parents[1]
CUDA_CFLAGS = ("-O3", "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a")


class BuildError(RuntimeError):
    """A CUDA extension that cannot be built or loaded here; the message is one line."""


@dataclass(frozen=True)
class Extension:
    """One extension: its CUDA source files (concatenated into one translation unit, in order), the C++
    declarations of the functions it exports, and their names."""
    name: str
    sources: tuple[str, ...]
    declarations: str
    functions: tuple[str, ...]

    def source_text(self) -> str:
        return "\n".join((CUDA_DIR / s).read_text() for s in self.sources)


LAB_CACHE = REPO_ROOT / "artifacts" / "cuda_build"


def cache_root() -> Path:
    """Where this process builds: the worker's own cache, else (lab code outside a worker) the lab's."""
    return Path(os.environ.get("PROJLAB_CUDA_CACHE") or LAB_CACHE)


def source_hash(source: str, declarations: str, flags=CUDA_CFLAGS, toolchain: str = "") -> str:
    """16 hex digits of sha256 over everything the library depends on."""
    h = hashlib.sha256()
    for part in (source, declarations, " ".join(flags), toolchain):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


def toolchain_id() -> str:
    """torch and its CUDA version (an extension is built against both)."""
    import torch

    return f"torch {torch.__version__} cuda {torch.version.cuda}"


def find_nvcc() -> str | None:
    """nvcc under CUDA_HOME (as torch's extension builder resolves it), else on PATH."""
    from torch.utils.cpp_extension import CUDA_HOME

    if CUDA_HOME and (Path(CUDA_HOME) / "bin" / "nvcc").is_file():
        return str(Path(CUDA_HOME) / "bin" / "nvcc")
    return shutil.which("nvcc")


def library_path(ext: Extension, key: str, root: Path | None = None) -> Path:
    name = f"{ext.name}_{key}"
    return (root or cache_root()) / name / f"{name}.so"


def plan_build(library: Path, nvcc: str | None, key: str, name: str) -> tuple[str, str]:
    """('load', path) for a cached build, ('build', nvcc) when a compiler is there, else ('refuse', reason)."""
    if library.is_file():
        return "load", str(library)
    if nvcc:
        return "build", nvcc
    return "refuse", (f"{name}: no CUDA compiler (nvcc) on this host and no cached build of source {key} in "
                      f"{library.parent}; it builds on a CUDA host with nvcc (the H200 image has one)")


_LOADED: dict = {}


def _import_library(module_name: str, path: str):
    import torch  # noqa: F401  (the extension links against libtorch: load it first)

    loader = importlib.machinery.ExtensionFileLoader(module_name, path)
    spec = importlib.util.spec_from_file_location(module_name, path, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def load_extension(ext: Extension, log=None):
    """The extension's module: from this process's cache, the cached library, or a fresh build (BuildError)."""
    source = ext.source_text()
    key = source_hash(source, ext.declarations, CUDA_CFLAGS, toolchain_id())
    if key in _LOADED:
        return _LOADED[key]
    library = library_path(ext, key, LAB_CACHE)
    if not library.is_file():
        library = library_path(ext, key)
    action, what = plan_build(library, find_nvcc(), key, ext.name)
    if action == "refuse":
        raise BuildError(what)
    module_name = f"{ext.name}_{key}"
    if action == "load":
        module = _import_library(module_name, what)
    else:
        from torch.utils.cpp_extension import load_inline

        library.parent.mkdir(parents=True, exist_ok=True)
        if log:
            log(f"{ext.name}: building source {key} with {what} into {library.parent} (once per source hash)")
        try:
            module = load_inline(name=module_name, cpp_sources=ext.declarations, cuda_sources=source,
                                 functions=list(ext.functions), extra_cuda_cflags=list(CUDA_CFLAGS),
                                 build_directory=str(library.parent), verbose=False)
        except Exception as exc:   # the compiler's log is long: keep its last line in the one-line message
            lines = [ln for ln in str(exc).splitlines() if ln.strip()]
            raise BuildError(f"{ext.name}: build of source {key} failed: {lines[-1] if lines else exc}") from exc
    _LOADED[key] = module
    return module


def main() -> int:
    """Build every extension this repository's kernels use into the lab's cache (one line each)."""
    from kernels.launch import cluster_splitk, cluster_wgmma

    failed = 0
    for ext in (cluster_wgmma.EXTENSION, cluster_splitk.EXTENSION):
        try:
            load_extension(ext, log=print)
            print(f"{ext.name}: ready in {LAB_CACHE}")
        except BuildError as exc:
            failed += 1
            print(exc)
    return 1 if failed else 0


if __name__ == "__main__":
    os.environ.pop("PROJLAB_CUDA_CACHE", None)   # the lab's cache, whatever the shell says
    raise SystemExit(main())
