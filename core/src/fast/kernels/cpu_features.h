// What SIMD instruction sets this CPU (and its OS) can run, detected once at
// run time. The SIMD kernels are compiled for their instruction set whatever
// the build machine is; this is what decides whether they may be called.
#pragma once

namespace ag::kernels::detail {

struct CpuFeatures {
  bool avx2_fma = false;  // x86-64: AVX2 and FMA3 (Haswell, Zen and later)
  bool avx512f = false;   // x86-64: AVX-512 Foundation (Skylake-X, Zen 4 and later)
  bool avx512bw = false;  // and AVX-512BW + VL: byte masks, 128-bit masked ops (the same CPUs)
  bool neon = false;      // AArch64: Advanced SIMD, part of the base ISA
};

const CpuFeatures& cpu_features();

}  // namespace ag::kernels::detail
