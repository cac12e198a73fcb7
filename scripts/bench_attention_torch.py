#!/usr/bin/python3
"""PyTorch CPU timings of bench/bench_attention.cpp's cases, float32, one
thread (torch.set_num_threads(1)) unless the name ends in /2threads:
per-call microseconds of forward (under torch.no_grad()) and forward+backward
(sum(out).backward() with q, k, v requiring grad).
  dot, additive      d2l's modules (scripts/d2l_torch.py)
  dot_noweights      the same as dot (PyTorch's d2l module always keeps them)
  sdpa               the best scaled dot-product attention this torch has:
                     torch.nn.functional.scaled_dot_product_attention (2.x),
                     else the private _scaled_dot_product_attention (1.13),
                     else softmax(q k^T * scale) v composed; the header says which
  sdpa_materialised  the same as sdpa (the baseline of both attograd paths)

Prints one line per case, "<kind>/<shape>/<forward|forward_backward>[/2threads] <us>",
after "# ..." configuration lines. Run with /usr/bin/python3 (it has torch).

The baseline runs at its best for this CPU whatever the environment says:
on a CPU with avx512f, ATEN_CPU_CAPABILITY=avx512 and OPENBLAS_CORETYPE=SkylakeX
are forced (with ATTOGRAD_ISA=avx2, which holds attograd to its AVX2 kernels:
avx2 and Haswell, the best an AVX2 machine has) (not merely defaulted: a shell that exports OPENBLAS_CORETYPE=Haswell
would otherwise slow PyTorch down), because Debian's torch does its matrix
products through the system BLAS (OpenBLAS 0.3.21), which misdetects AVX-512
CPUs and would otherwise run its generic kernel. ATTOGRAD_TORCH_KEEP_ENV=1
keeps the environment's values instead (to measure a deliberately weaker baseline).
torch.set_num_threads does not reach OpenBLAS's own thread pool (Debian's
libopenblas0-pthread starts one thread per core): a "one thread" PyTorch
then still runs its matrix products on two cores, with the idle pool
spinning in sched_yield between them. So each case also sets OpenBLAS's
count (openblas_set_num_threads, found in the loaded library) to the case's
thread count, and the header says so. With two threads, torch's and
OpenBLAS's pools oversubscribe the two cores when both have two threads, so
a two-thread case is timed with the two threads given to torch, to OpenBLAS,
and to both, and the fastest counts (the line says which).

  scripts/bench_attention_torch.py [REGEX]           timings
  scripts/bench_attention_torch.py --memory MODE T   peak memory of one call
      (MODE forward or forward_backward, B 8, d 64): prints "peak_mib <MiB>",
      the growth of VmHWM (/proc/self/status) over the call
"""
import ctypes
import math
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


def torch_kernels():
    """(ATEN_CPU_CAPABILITY, OPENBLAS_CORETYPE) for the instruction set attograd
    runs: the best of this CPU, or ATTOGRAD_ISA's (attograd/kernels/instruction_set.h).
    With ATTOGRAD_ISA=avx2 on an AVX-512 machine torch runs ATen's AVX2 kernels
    and OpenBLAS's Haswell ones: both sides as they would run on an AVX2
    machine. (None, None): torch's own choice."""
    asked = os.environ.get("ATTOGRAD_ISA", "")
    if asked == "avx2":
        return "avx2", "Haswell"
    if asked in ("", "avx512") and has_avx512f():
        return "avx512", "SkylakeX"
    return None, None


# Both must be set before torch (and its BLAS) load.
if torch_kernels()[0] and os.environ.get("ATTOGRAD_TORCH_KEEP_ENV") != "1":
    os.environ["ATEN_CPU_CAPABILITY"], os.environ["OPENBLAS_CORETYPE"] = torch_kernels()

import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import d2l_torch  # noqa: E402


def best_sdpa():
    """(name, fn(q, k, v) -> output): the fastest attention this torch offers."""
    F = torch.nn.functional
    if hasattr(F, "scaled_dot_product_attention"):
        return "F.scaled_dot_product_attention", F.scaled_dot_product_attention
    if hasattr(F, "_scaled_dot_product_attention"):
        def private(q, k, v):
            return F._scaled_dot_product_attention(q, k, v)[0]
        return "F._scaled_dot_product_attention", private

    def composed(q, k, v):
        scale = 1.0 / math.sqrt(q.shape[-1])
        return torch.softmax(q @ k.transpose(-2, -1) * scale, dim=-1) @ v
    return "composed softmax(q k^T * scale) v", composed


SDPA_NAME, SDPA = best_sdpa()


def openblas_library():
    """The OpenBLAS that torch loaded (ctypes handle and path), or (None, None)."""
    with open("/proc/self/maps") as f:
        found = re.search(r"(/\S*libopenblas\S*\.so[.\d]*)", f.read())
    if not found:
        return None, None
    library = ctypes.CDLL(found.group(1))
    return (library, found.group(1)) if hasattr(library, "openblas_set_num_threads") else (None, None)


OPENBLAS, OPENBLAS_PATH = openblas_library()


def what_ran():
    """One line on what torch ran: its version, the CPU capability in use, and
    the environment that chose it and OpenBLAS's kernels."""
    capability = [line.split(":", 1)[1].strip() for line in torch.__config__.show().splitlines()
                  if "CPU capability usage" in line]
    return (f"torch {torch.__version__}, CPU capability in use {capability or '?'}, "
            f"ATEN_CPU_CAPABILITY={os.environ.get('ATEN_CPU_CAPABILITY', '(unset)')}, "
            f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}, CPU "
            f"{'with' if has_avx512f() else 'without'} AVX-512")


def set_threads(torch_threads, blas_threads):
    """Threads for PyTorch's own kernels and for the BLAS under it."""
    torch.set_num_threads(torch_threads)
    if OPENBLAS is not None:
        OPENBLAS.openblas_set_num_threads(blas_threads)


def thread_splits(threads):
    """(torch, blas) thread counts to try for a case of `threads` threads."""
    if threads == 1 or OPENBLAS is None:
        return [(threads, threads)]
    return [(threads, threads), (threads, 1), (1, threads)]


class Sdpa(torch.nn.Module):
    def forward(self, queries, keys, values, valid_lens=None):
        return SDPA(queries, keys, values)


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
    elif kind.startswith("sdpa"):
        module = Sdpa()
    else:
        module = d2l_torch.DotProductAttention(0.1)
    module.eval()
    return module, queries, keys, values, valid_lens


# (kind, shape, threads), in bench_attention.cpp's order
CASES = ([(kind, shape, 1) for kind in ("dot", "additive")
          for shape in ("toy", "b8_t128", "b8_t512")]
         + [(kind, "b8_t512", 1) for kind in ("dot_noweights", "sdpa", "sdpa_materialised")]
         + [(kind, "b8_t512", 2) for kind in ("sdpa", "sdpa_materialised", "additive")])


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


def peak_memory(mode, T):
    """VmHWM growth (MiB) over one SDPA call on [8, T, 64] inputs."""
    def hwm_kib():
        with open("/proc/self/status") as f:
            return int(re.search(r"VmHWM:\s+(\d+)", f.read()).group(1))
    torch.manual_seed(0)
    q, k, v = (torch.randn(8, T, 64, requires_grad=mode == "forward_backward")
               for _ in range(3))
    before = hwm_kib()
    if mode == "forward":
        with torch.no_grad():
            out = SDPA(q, k, v)
    else:
        SDPA(q, k, v).sum().backward()
    print(f"# torch {torch.__version__}, {SDPA_NAME}, {mode}, B 8, T {T}, d 64")
    print(f"peak_mib {(hwm_kib() - before) / 1024:.1f}")


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--memory":
        set_threads(1, 1)
        peak_memory(sys.argv[2], int(sys.argv[3]))
        return
    capability = re.search(r"CPU capability usage: (\S+)", torch.__config__.show())
    blas = re.search(r"BLAS_INFO=([^,]+)", torch.__config__.show())
    print(f"# torch {torch.__version__}, "
          f"ATEN_CPU_CAPABILITY={os.environ.get('ATEN_CPU_CAPABILITY', '(unset)')}, "
          f"CPU capability {capability.group(1) if capability else '?'}, "
          f"BLAS {blas.group(1) if blas else '?'}, "
          f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}")
    print("# threads: torch.set_num_threads(n) and "
          + (f"openblas_set_num_threads(n) ({OPENBLAS_PATH})" if OPENBLAS is not None
             else "no OpenBLAS found to set (its own default applies)")
          + ", n = the case's thread count")
    print(f"# sdpa = {SDPA_NAME}")
    only = sys.argv[1] if len(sys.argv) > 1 else ""
    for kind, shape, threads in CASES:
        suffix = "" if threads == 1 else f"/{threads}threads"
        name = f"{kind}/{shape}"
        if only and not re.search(only, f"{name}/forward{suffix}"):
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

        for mode, fn in (("forward", forward), ("forward_backward", forward_backward)):
            best = None
            for split in thread_splits(threads):
                set_threads(*split)
                us = per_call_us(fn)
                if best is None or us < best[0]:
                    best = (us, split)
            note = "" if threads == 1 else f"  # torch {best[1][0]}, openblas {best[1][1]}"
            print(f"{name}/{mode}{suffix} {best[0]:.2f}{note}", flush=True)


if __name__ == "__main__":
    main()
