"""@gluon.jit kernels only (Triton's Gluon dialect, `triton.experimental.gluon`, shipped inside Triton 3.6): code
that names its layouts, shared-memory rings, mbarriers, TMA copies and warpgroup MMAs explicitly, and can split a
program into warp-specialized partitions. skinny_ws.py: the warp-specialized TMA/WGMMA skinny GEMM.

Launchers live in kernels/launch/gluon_*.py. Import these modules as `kernels.gluon.<name>` (run scripts with
`python -m ...` from the repo root).
"""
