#!/usr/bin/python3
"""torch timings of bench/bench_optim.cpp's cases, float32, one thread (set
up as scripts/bench_attention_torch.py does, whose set-up this imports): the
parameters of d2l's PyTorch Transformer at attograd-translate's sizes (d 32,
FFN 64, 4 heads, 2 blocks, vocabularies 64 and 15: 64 tensors, 45,007
values), each with a random gradient; per-call microseconds of
torch.optim.Adam.step (single-tensor and foreach) and of
torch.nn.utils.clip_grad_norm_ with nothing to clip. Prints
"optim/adam_step/single_tensor <us>", "optim/adam_step/foreach <us>" and
"optim/grad_norm <us>", after a line on what torch ran.

  /usr/bin/python3 scripts/bench_optim_torch.py
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_attention_torch import per_call_us, set_threads, torch, what_ran  # noqa: E402
import d2l_torch as d2l  # noqa: E402


def main():
    set_threads(1, 1)
    print(f"# {what_ran()}, one thread", flush=True)
    torch.manual_seed(0)
    net = d2l.EncoderDecoder(d2l.TransformerEncoder(64, 32, 64, 4, 2, 0.1),
                             d2l.TransformerDecoder(15, 32, 64, 4, 2, 0.1))
    params = list(net.parameters())
    for p in params:
        p.grad = torch.rand_like(p) * 2 - 1
    for name, foreach in (("single_tensor", False), ("foreach", True)):
        optimizer = torch.optim.Adam(params, lr=0.005, foreach=foreach)
        print(f"optim/adam_step/{name} {per_call_us(optimizer.step):.2f}", flush=True)
    norm = per_call_us(lambda: torch.nn.utils.clip_grad_norm_(params, 1e30))
    print(f"optim/grad_norm {norm:.2f}", flush=True)


if __name__ == "__main__":
    main()
