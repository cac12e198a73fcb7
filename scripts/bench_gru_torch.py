#!/usr/bin/python3
"""torch.nn.GRU timings of bench/bench_gru.cpp's cases, float32, one thread
(torch and the OpenBLAS under it, set as scripts/bench_attention_torch.py
does, whose set-up this imports): x [10, 64, 64], hidden 32, 2 layers,
per-call microseconds of forward (under torch.no_grad()) and
forward+backward (sum(output) + sum(h_n) backward, x requiring grad); then
the same at the letters-to-sounds encoder's size (bidirectional,
x [12, 64, 128], hidden 256, 2 layers). Prints "gru/forward <us>",
"gru/forward_backward <us>", "gru/g2p_encoder/forward <us>" and
"gru/g2p_encoder/forward_backward <us>".

  /usr/bin/python3 scripts/bench_gru_torch.py
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_attention_torch import per_call_us, set_threads, torch  # noqa: E402


def time_gru(prefix, steps, batch, input_size, hidden, bidirectional):
    torch.manual_seed(0)
    gru = torch.nn.GRU(input_size, hidden, num_layers=2, bidirectional=bidirectional).eval()
    x = torch.randn(steps, batch, input_size)
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
        print(f"{prefix}{name} {per_call_us(fn):.2f}", flush=True)


def main():
    set_threads(1, 1)
    time_gru("gru/", 10, 64, 64, 32, False)
    time_gru("gru/g2p_encoder/", 12, 64, 128, 256, True)


if __name__ == "__main__":
    main()
