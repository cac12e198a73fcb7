// What SIMD instruction sets this CPU (and its OS) can run, detected once at
// run time, and which one the kernels run (attograd/kernels/instruction_set.h).
// The SIMD kernels are compiled for their instruction set whatever the build
// machine is; this is what decides whether they may be called.
#pragma once

#include "attograd/kernels/instruction_set.h"

namespace ag::kernels::detail {

struct CpuFeatures {
  bool avx2_fma = false;  // x86-64: AVX2 and FMA3 (Haswell, Zen and later)
  // x86-64: AVX-512 F, BW, VL, DQ and CD (x86-64-v4): the row kernels' byte
  // masks (BW), 128-bit masked ops (VL) and 64-bit multiplies (DQ)
  bool avx512 = false;
  bool neon = false;  // AArch64: Advanced SIMD, part of the base ISA
};

const CpuFeatures& cpu_features();

// Whether this build has the set's kernels and this CPU can run them.
bool instruction_set_available(InstructionSet set);

// The set ATTOGRAD_ISA's value `asked` names (null or empty: the best
// available); ag::Error, naming the sets this CPU can run, for one it lacks
// or a name that is none. instruction_set() calls it once with the variable.
InstructionSet choose_instruction_set(const char* asked);

}  // namespace ag::kernels::detail
