// Peak memory of ONE scaled dot-product attention call, in a fresh process:
// the growth of VmHWM (the resident-set high-water mark, /proc/self/status)
// from just before the call to just after it, inputs excluded. Not a Google
// Benchmark program (a benchmark repeats the call; the first call is the
// point here), but it lives with them and builds with them.
//
//   bench_attention_memory MODE T [IMPL] [B] [D]
//     MODE  forward (under NoGradGuard) or forward_backward (sum(out).backward())
//     T     queries = keys; inputs q, k, v [B, T, D] float32 (B 8, D 64 by default)
//     IMPL  streamed (nn::functional::scaled_dot_product_attention, no weights
//           asked: ag::flash_attention) or materialised
//           (scaled_dot_product_attention_with_weights: scores and weights stored)
//   prints "# ..." (what ran) and "peak_mib <MiB>"
//
// scripts/bench_attention_memory.sh runs it next to PyTorch's
// (scripts/bench_attention_torch.py --memory) and prints the ratios.
#include <cstdio>
#include <fstream>
#include <string>

#include "attograd/attograd.h"

namespace {

// VmHWM in KiB, or -1 where /proc/self/status has none (not Linux).
long high_water_kib() {
  std::ifstream status("/proc/self/status");
  std::string key;
  long value = -1;
  while (status >> key) {
    if (key == "VmHWM:") {
      status >> value;
      return value;
    }
    status.ignore(1 << 12, '\n');
  }
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s forward|forward_backward T [streamed|materialised] [B] [D]\n",
                 argv[0]);
    return 2;
  }
  const std::string mode = argv[1], impl = argc > 3 ? argv[3] : "streamed";
  const int64_t T = std::stoll(argv[2]), B = argc > 4 ? std::stoll(argv[4]) : 8,
                D = argc > 5 ? std::stoll(argv[5]) : 64;
  const bool backward = mode == "forward_backward", streamed = impl == "streamed";
  if ((!backward && mode != "forward") || (!streamed && impl != "materialised")) {
    std::fprintf(stderr, "unknown mode %s or implementation %s\n", mode.c_str(), impl.c_str());
    return 2;
  }
  ag::set_num_threads(1);
  ag::manual_seed(0);
  ag::Tensor q = ag::randn({B, T, D}), k = ag::randn({B, T, D}), v = ag::randn({B, T, D});
  if (backward) {
    q.requires_grad_();
    k.requires_grad_();
    v.requires_grad_();
  }
  namespace F = ag::nn::functional;
  const long before = high_water_kib();
  const auto attend = [&] {
    return streamed ? F::scaled_dot_product_attention(q, k, v)
                    : F::scaled_dot_product_attention_with_weights(q, k, v).output;
  };
  if (backward) {
    ag::sum(attend()).backward();
  } else {
    ag::NoGradGuard no_grad;
    attend();
  }
  const long after = high_water_kib();
  std::printf("# attograd %s %s, B %lld, T %lld, d %lld, float32, 1 thread\n", impl.c_str(),
              mode.c_str(), static_cast<long long>(B), static_cast<long long>(T),
              static_cast<long long>(D));
  std::printf("peak_mib %.1f\n", (after - before) / 1024.0);
  return 0;
}
