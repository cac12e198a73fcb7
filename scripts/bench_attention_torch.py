#!/usr/bin/python3
"""PyTorch CPU timings of bench/bench_attention.cpp's cases, with d2l's
modules (scripts/d2l_torch.py), float32, one thread (torch.set_num_threads(1)):
per-call microseconds of forward (under torch.no_grad()) and forward+backward
(sum(out).backward() with q, k, v requiring grad).

Prints one line per case, "<kind>/<shape>/<forward|forward_backward> <us>",
after a "# configuration" header. Run with /usr/bin/python3 (it has torch);
ATEN_CPU_CAPABILITY=avx512 is set when the CPU has avx512f and the variable
is not already set, and so is OPENBLAS_CORETYPE=SkylakeX: Debian's torch
does its matrix products through the system BLAS (OpenBLAS 0.3.21), which
misdetects AVX-512 CPUs and would otherwise run its generic kernel.
"""
import os
import re
import sys
import time


def has_avx512f():
    try:
        with open("/proc/cpuinfo") as f:
            return re.search(r"\bavx512f\b", f.read()) is not None
    except OSError:
        return False


if has_avx512f():  # both must be set before torch (and its BLAS) load
    os.environ.setdefault("ATEN_CPU_CAPABILITY", "avx512")
    os.environ.setdefault("OPENBLAS_CORETYPE", "SkylakeX")

import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import d2l_torch  # noqa: E402


def make_case(kind, shape):
    torch.manual_seed(0)
    additive = kind == "additive"
    if shape == "toy":
        queries = torch.randn(2, 1, 20 if additive else 2)
        keys = torch.ones(2, 10, 2)
        values = torch.arange(40, dtype=torch.float32).reshape(1, 10, 4).repeat(2, 1, 1)
        valid_lens = torch.tensor([2, 6])
    else:
        T = 128 if shape == "b8_t128" else 512
        queries, keys, values = (torch.randn(8, T, 64) for _ in range(3))
        valid_lens = None
    if additive:
        module = (d2l_torch.AdditiveAttention(2, 20, 8, 0.1) if shape == "toy"
                  else d2l_torch.AdditiveAttention(64, 64, 64, 0.1))
    else:
        module = d2l_torch.DotProductAttention(0.1)
    module.eval()
    return module, queries, keys, values, valid_lens


def per_call_us(fn, min_block_seconds=0.2, blocks=5):
    """Median over `blocks` timed blocks of the per-call time, in microseconds."""
    fn()
    fn()
    n, start = 1, time.perf_counter()
    fn()
    one = time.perf_counter() - start
    n = max(1, int(min_block_seconds / max(one, 1e-9)))
    times = []
    for _ in range(blocks):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        times.append((time.perf_counter() - start) / n)
    times.sort()
    return times[len(times) // 2] * 1e6


def main():
    torch.set_num_threads(1)
    capability = re.search(r"CPU capability usage: (\S+)", torch.__config__.show())
    blas = re.search(r"BLAS_INFO=([^,]+)", torch.__config__.show())
    print(f"# torch {torch.__version__}, threads {torch.get_num_threads()}, "
          f"ATEN_CPU_CAPABILITY={os.environ.get('ATEN_CPU_CAPABILITY', '(unset)')}, "
          f"CPU capability {capability.group(1) if capability else '?'}, "
          f"BLAS {blas.group(1) if blas else '?'}, "
          f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}")
    only = sys.argv[1] if len(sys.argv) > 1 else ""
    for kind in ("dot", "additive"):
        for shape in ("toy", "b8_t128", "b8_t512"):
            name = f"{kind}/{shape}"
            if only and not re.search(only, name):
                continue
            module, q, k, v, lens = make_case(kind, shape)

            def forward():
                with torch.no_grad():
                    module(q, k, v, lens)

            qg, kg, vg = (t.clone().requires_grad_() for t in (q, k, v))

            def forward_backward():
                module.zero_grad(set_to_none=True)
                qg.grad = kg.grad = vg.grad = None
                module(qg, kg, vg, lens).sum().backward()

            print(f"{name}/forward {per_call_us(forward):.2f}", flush=True)
            print(f"{name}/forward_backward {per_call_us(forward_backward):.2f}", flush=True)


if __name__ == "__main__":
    main()
