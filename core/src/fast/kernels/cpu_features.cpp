// Which SIMD instruction sets this CPU and its OS support (cpu_features.h),
// detected once; the GEMM dispatch (gemm.cpp) and the row kernels ask it.
#include "cpu_features.h"

namespace ag::kernels::detail {

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = [] {
    CpuFeatures f;
#if defined(__x86_64__)
    // __builtin_cpu_supports also checks (through XGETBV) that the OS saves
    // the wide registers, so a "true" here means the instructions are usable.
    __builtin_cpu_init();
    f.avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    f.avx512f = __builtin_cpu_supports("avx512f");
    f.avx512bw =
        f.avx512f && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
#elif defined(__aarch64__)
    f.neon = true;
#endif
    // Anywhere else (WebAssembly included) no flag is set: the scalar kernel
    // runs, vectorised by the compiler where the target has SIMD (-msimd128).
    return f;
  }();
  return features;
}

}  // namespace ag::kernels::detail
