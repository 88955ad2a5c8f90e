"""The check layer: the correctness contract (inputs.py: the inputs and weights; rules.py: references, the numeric rules;
contract.py: the lifecycle harness), the guards on global state (guards.py; dispatcher.py: the
dispatcher's kernels and mode stacks it holds), the timed judge (timed.py), the source screen (source_screen.py); the
known-wrong corpus is profiler/wrong/.
Imports only profiler.measure below it."""
