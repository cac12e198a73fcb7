#!/usr/bin/python3
"""Loads state dicts saved by attograd into d2l's PyTorch modules.

tests/test_state_dict.cpp (StateDictTest.SavedStateDictsHavePyTorchsLayoutAndRoundTrip)
writes, in GoogleTest's temp dir (/tmp/ by default):
  attograd_state_dict_<name>.npz      our module's state_dict(), via save_npz
  attograd_state_dict_<name>_io.npz   the inputs and our output
This script loads each state dict into the matching d2l module with
load_state_dict(strict=True) (so every name and shape must be PyTorch's), runs
the same inputs and compares the outputs. CI has no torch: run it by hand,

  build/attograd_tests --gtest_filter='StateDictTest.*' && /usr/bin/python3 scripts/check_state_dict_roundtrip.py [dir]
"""
import os
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import d2l_torch  # noqa: E402

MODULES = {
    "additive": lambda: d2l_torch.AdditiveAttention(2, 20, 8, dropout=0.0),
    "mha_bias": lambda: d2l_torch.MultiHeadAttention(16, 16, 16, 16, num_heads=4, dropout=0.0,
                                                     bias=True),
}


def main():
    directory = sys.argv[1] if len(sys.argv) > 1 else tempfile.gettempdir()
    failures = 0
    for name, make in MODULES.items():
        prefix = os.path.join(directory, f"attograd_state_dict_{name}")
        state = {k: torch.from_numpy(v) for k, v in np.load(prefix + ".npz").items()}
        io = {k: torch.from_numpy(v) for k, v in np.load(prefix + "_io.npz").items()}
        module = make().eval()
        module.load_state_dict(state, strict=True)
        with torch.no_grad():
            out = module(io["queries"], io["keys"], io["values"], io["valid_lens"])
        diff = (out - io["out"]).abs().max().item()
        ok = diff < 1e-5
        failures += not ok
        layout = ", ".join(f"{k} {list(v.shape)}" for k, v in state.items())
        print(f"{name}: {'OK' if ok else 'NOT OK'} (strict load of {layout}; "
              f"max |torch - attograd| = {diff:.2e})")
    print(f"{len(MODULES) - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
