// Which SIMD instruction sets this CPU and its OS support (cpu_features.h),
// detected once, and which one the kernels run: ATTOGRAD_ISA's, or the best.
// The GEMM dispatch (gemm.cpp) and the row kernels (row_kernels.cpp) ask it.
#include "cpu_features.h"

#include <cstdlib>
#include <string>

#include "attograd/error.h"

namespace ag::kernels {
namespace detail {

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = [] {
    CpuFeatures f;
#if defined(__x86_64__)
    // __builtin_cpu_supports also checks (through XGETBV) that the OS saves
    // the wide registers, so a "true" here means the instructions are usable.
    __builtin_cpu_init();
    f.avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    f.avx512 = f.avx2_fma && __builtin_cpu_supports("avx512f") &&
               __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
               __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512cd");
#elif defined(__aarch64__)
    f.neon = true;
#endif
    // Anywhere else (WebAssembly included) no flag is set: the scalar kernels
    // run, vectorised by the compiler where the target has SIMD (-msimd128).
    return f;
  }();
  return features;
}

bool instruction_set_available(InstructionSet set) {
  const CpuFeatures& cpu = cpu_features();
  switch (set) {
    case InstructionSet::Scalar:
      return true;
    case InstructionSet::Avx2:
      return cpu.avx2_fma;
    case InstructionSet::Avx512:
      return cpu.avx512;
    case InstructionSet::Neon:
      return cpu.neon;
  }
  return false;
}

}  // namespace detail

namespace {

constexpr InstructionSet kAllSets[] = {InstructionSet::Scalar, InstructionSet::Avx2,
                                       InstructionSet::Avx512, InstructionSet::Neon};

}  // namespace

InstructionSet detail::choose_instruction_set(const char* asked) {
  const std::vector<InstructionSet> available = available_instruction_sets();
  if (asked == nullptr || *asked == '\0') return available.back();
  std::string here;
  for (InstructionSet set : available)
    here += std::string(here.empty() ? "" : ", ") + instruction_set_name(set);
  for (InstructionSet set : kAllSets) {
    if (std::string(asked) != instruction_set_name(set)) continue;
    AG_CHECK(instruction_set_available(set), "ATTOGRAD_ISA",
             std::string("this CPU cannot run ") + asked + "; it can run " + here);
    return set;
  }
  throw Error(std::string("ATTOGRAD_ISA: expected one of scalar, avx2, avx512, neon, got '") +
              asked + "'; it can run " + here);
}

InstructionSet instruction_set() {
  static const InstructionSet set = detail::choose_instruction_set(std::getenv("ATTOGRAD_ISA"));
  return set;
}

std::vector<InstructionSet> available_instruction_sets() {
  std::vector<InstructionSet> sets;
  for (InstructionSet set : kAllSets)
    if (detail::instruction_set_available(set)) sets.push_back(set);
  return sets;
}

const char* instruction_set_name(InstructionSet set) {
  switch (set) {
    case InstructionSet::Scalar:
      return "scalar";
    case InstructionSet::Avx2:
      return "avx2";
    case InstructionSet::Avx512:
      return "avx512";
    case InstructionSet::Neon:
      return "neon";
  }
  return "unknown";
}

}  // namespace ag::kernels
