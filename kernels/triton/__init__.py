"""@triton.jit kernels only (no launch logic): gemv.py (M=1 streaming GEMV), splitk.py (split-K tiled GEMM,
partials + reduce, and the last-arriving-block fused variant), packed.py (tile-packed weights).

Launchers live in kernels/launch/. Import these modules as `kernels.triton.<name>` (run scripts with
`python -m ...` from the repo root: running a file inside kernels/ would put this folder ahead of the real
`triton` package on sys.path).
"""
