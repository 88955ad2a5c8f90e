"""The measure layer: timing (CUDA graphs, L2 flush, paired rounds), the timing policy and its presets (policy.py),
statistics, HBM/compute probes, telemetry, Nsight Compute and Kineto helpers. Imports nothing else of profiler."""
