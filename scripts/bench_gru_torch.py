#!/usr/bin/python3
"""torch.nn.GRU timings of bench/bench_gru.cpp's cases, float32, one thread
(torch and the OpenBLAS under it, set as scripts/bench_attention_torch.py
does, whose set-up this imports): x [10, 64, 64], hidden 32, 2 layers,
per-call microseconds of forward (under torch.no_grad()) and
forward+backward (sum(output) + sum(h_n) backward, x requiring grad).
Prints "gru/forward <us>" and "gru/forward_backward <us>".

  /usr/bin/python3 scripts/bench_gru_torch.py
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_attention_torch import per_call_us, set_threads, torch  # noqa: E402


def main():
    set_threads(1, 1)
    torch.manual_seed(0)
    gru = torch.nn.GRU(64, 32, num_layers=2).eval()
    x = torch.randn(10, 64, 64)
    xg = x.clone().requires_grad_()

    def forward():
        with torch.no_grad():
            gru(x)

    def forward_backward():
        gru.zero_grad(set_to_none=True)
        xg.grad = None
        output, h_n = gru(xg)
        (output.sum() + h_n.sum()).backward()

    for name, fn in (("forward", forward), ("forward_backward", forward_backward)):
        print(f"gru/{name} {per_call_us(fn):.2f}", flush=True)


if __name__ == "__main__":
    main()
