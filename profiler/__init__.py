"""How candidates are run, checked and timed (importing this package must not import torch)."""
