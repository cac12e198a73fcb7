// libFuzzer target for the .npy/.npz parsers: any input must either parse or
// raise ag::Error; a crash, a sanitizer report, a leak or a huge allocation
// is a bug.
//
// ctest runs it as the test fuzz_npy (fuzz/driver.cpp over tests/npy_corpus);
// for a long coverage-guided run, build it with libFuzzer (clang only):
//   cmake -B build-fuzz -DCMAKE_CXX_COMPILER=clang++ -DATTOGRAD_BUILD_FUZZERS=ON
//   cmake --build build-fuzz --target fuzz_npy
//   build-fuzz/fuzz/fuzz_npy -max_total_time=180 -max_len=4096 corpus_dir tests/npy_corpus
#include <cstddef>
#include <cstdint>

#include "attograd/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    ag::parse_npy(data, size);
  } catch (const ag::Error&) {
  }
  try {
    ag::parse_npz(data, size);
  } catch (const ag::Error&) {
  }
  return 0;
}
