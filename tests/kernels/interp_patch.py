"""Imported first by the interpreter workers (interp_worker*.py, run with TRITON_INTERPRET=1 set): makes the repo
importable and fixes one triton 3.6 interpreter bug.

triton 3.6's interpreter turns a scalar into a Python int with int(ndarray of shape (1,)), which numpy >= 2.4
refuses ("only 0-dimensional arrays can be converted"), so any loop with a runtime bound fails. Re-patch
tensor.__index__ to take the single element (the interpreter restores its patches in reverse order).
"""
import os
import sys
from pathlib import Path

assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import triton.runtime.interpreter as _interp  # noqa: E402

_orig_patch = _interp._patch_lang_tensor


def _patch_lang_tensor(tensor, scope):
    _orig_patch(tensor, scope)
    scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.reshape(-1)[0]))


_interp._patch_lang_tensor = _patch_lang_tensor
