// The kernels' instruction set (attograd/kernels/instruction_set.h): chosen
// by ATTOGRAD_ISA or the best this CPU has, and refused, with the sets this
// CPU has, when the CPU lacks it. ctest also runs this file and
// test_reference.cpp under ATTOGRAD_ISA=scalar and avx2 (CMakeLists.txt):
// there the whole fast path runs on that set against the plain code.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "../core/src/fast/kernels/cpu_features.h"
#include "attograd/error.h"
#include "attograd/kernels/gemm.h"

namespace {

using ag::kernels::InstructionSet;

TEST(InstructionSetTest, ASetThisCpuHasIsChosenByName) {
  const std::vector<InstructionSet> sets = ag::kernels::available_instruction_sets();
  ASSERT_FALSE(sets.empty());
  EXPECT_EQ(sets.front(), InstructionSet::Scalar);
  for (InstructionSet set : sets)
    EXPECT_EQ(ag::kernels::detail::choose_instruction_set(ag::kernels::instruction_set_name(set)),
              set);
  EXPECT_EQ(ag::kernels::detail::choose_instruction_set(nullptr), sets.back());  // unset: the best
  EXPECT_EQ(ag::kernels::detail::choose_instruction_set(""), sets.back());
}

// The refusal names the variable, what was asked and what this CPU can run.
void expect_refused(const char* asked, const std::string& says) {
  try {
    ag::kernels::detail::choose_instruction_set(asked);
    ADD_FAILURE() << "ATTOGRAD_ISA=" << asked << " was not refused";
  } catch (const ag::Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("ATTOGRAD_ISA"), std::string::npos) << message;
    EXPECT_NE(message.find(says), std::string::npos) << message;
    EXPECT_NE(message.find("it can run scalar"), std::string::npos) << message;
  }
}

TEST(InstructionSetTest, ASetThisCpuLacksOrNoSetAtAllIsRefused) {
  for (InstructionSet set : {InstructionSet::Avx2, InstructionSet::Avx512, InstructionSet::Neon}) {
    if (ag::kernels::detail::instruction_set_available(set)) continue;
    const std::string name = ag::kernels::instruction_set_name(set);
    expect_refused(name.c_str(), "this CPU cannot run " + name);
  }
  expect_refused("avx1024", "expected one of scalar, avx2, avx512, neon, got 'avx1024'");
  expect_refused("AVX2", "got 'AVX2'");  // the names are lower case
}

// The set the kernels run is ATTOGRAD_ISA's when it is set, and the GEMM runs
// that set's micro-kernel.
TEST(InstructionSetTest, TheKernelsRunTheChosenSet) {
  const char* asked = std::getenv("ATTOGRAD_ISA");
  const InstructionSet set = ag::kernels::instruction_set();
  if (asked != nullptr && *asked != '\0')
    EXPECT_EQ(std::string(ag::kernels::instruction_set_name(set)), asked);
  else
    EXPECT_EQ(set, ag::kernels::available_instruction_sets().back());
  EXPECT_STREQ(ag::kernels::gemm_path_name(), ag::kernels::instruction_set_name(set));
}

}  // namespace
