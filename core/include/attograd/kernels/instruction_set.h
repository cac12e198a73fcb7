// The instruction set the fast path's kernels run: the GEMM micro-kernel
// (attograd/kernels/gemm.h) and the row kernels (exp, softmax, LayerNorm, the
// GRU gates, ...). By default the best this CPU has; the environment variable
//
//   ATTOGRAD_ISA=scalar|avx2|avx512|neon
//
// chooses one, read once, at the first kernel call, so that a machine can run
// and time the path a slower one would take (an AVX-512 machine its AVX2
// path). A set this CPU or this build lacks is refused with an ag::Error that
// names the sets it has. (PyTorch's ATEN_CPU_CAPABILITY does the same for
// its kernels.) Reference mode (attograd/reference_mode.h) goes further: no
// fast kernel at all.
#pragma once

#include <vector>

namespace ag::kernels {

enum class InstructionSet {
  Scalar,  // portable C++ loops (the compiler's baseline vectors: SSE2, NEON, wasm SIMD)
  Avx2,    // x86-64 AVX2 + FMA (Haswell, Zen 1 to 3 and later)
  Avx512,  // x86-64 AVX-512 F, BW, VL, DQ and CD (Skylake-X, Ice Lake, Zen 4 and later)
  Neon,    // AArch64 Advanced SIMD
};

// The set the kernels run (ATTOGRAD_ISA, or the best available).
InstructionSet instruction_set();
// The sets this build can run on this CPU, slowest first.
std::vector<InstructionSet> available_instruction_sets();
const char* instruction_set_name(InstructionSet set);  // "scalar", "avx2", "avx512", "neon"

}  // namespace ag::kernels
