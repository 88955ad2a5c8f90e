"""The check layer: the correctness contract (rules.py: inputs, references, the numeric rules; contract.py: the
lifecycle harness), the guards on global state (guards.py) and the known-wrong candidates (wrong.py).
Imports only profiler.measure below it."""
