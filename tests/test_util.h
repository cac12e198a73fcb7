// Shared helpers for the GoogleTest suites.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "attograd/attograd.h"

namespace ag::testing {

// Path of a file under the source tree, e.g. source_path("tests/fixtures/core.npz").
std::string source_path(const std::string& relative);

// A fresh directory under the system's temporary directory, removed with
// everything in it when the object goes: dir / "file.npz" is a path in it.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& name);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  std::string operator/(const std::string& file) const { return path_ + "/" + file; }
  const std::string& str() const { return path_; }

 private:
  std::string path_;
};

// The path of `file` in the scratch folder `folder` (a ScratchDir made at
// the first call for that folder, removed when the program exits).
std::string scratch_file(const std::string& folder, const std::string& file);

// What a model's numbers meet against PyTorch's, per dtype: float32 rounds
// ~6e-8 per op, and through a model's few dozen ops and the cancellation in
// softmax's backward that leaves ~1e-6, well inside 1e-5.
struct Tolerance {
  DType dtype;
  double atol, rtol;
};
inline constexpr Tolerance kTolerances[] = {{kFloat64, 1e-10, 1e-10}, {kFloat32, 1e-5, 1e-5}};

// The whole file at `path` as bytes ("" when it cannot be read).
std::string read_file(const std::string& path);

// Fixtures written by scripts/make_*_fixtures.py (PyTorch), loaded with our own load_npz.
const std::map<std::string, Tensor>& fixture(const std::string& file);
const Tensor& fixture_tensor(const std::string& file, const std::string& name);

// Max |a - b| over all elements; shapes must match.
double max_abs_diff(const Tensor& a, const Tensor& b);

// Checks shape and every value within atol + rtol * |expected|.
::testing::AssertionResult all_close(const Tensor& actual, const Tensor& expected,
                                     double atol = 1e-5, double rtol = 1e-5);
::testing::AssertionResult all_close(const Tensor& actual, const std::vector<double>& expected,
                                     double atol = 1e-5, double rtol = 1e-5);

// int64 lengths and bool masks from literal values; an empty shape means 1-D.
Tensor lens(std::vector<double> values, Shape shape = {});
Tensor bools(std::vector<double> values, Shape shape);
// True when any element is NaN.
bool has_nan(const Tensor& t);

// float64 random leaves that require grad.
Tensor leaf64(const Shape& shape, double low = -1.0, double high = 1.0);

// gradcheck with the default tolerances, as an assertion.
::testing::AssertionResult grad_ok(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                                   const std::vector<Tensor>& inputs, double atol = 1e-5,
                                   double rtol = 1e-3);

// Runs fn and checks it throws ag::Error whose message contains every fragment.
::testing::AssertionResult throws_error(const std::function<void()>& fn,
                                        const std::vector<std::string>& fragments);

}  // namespace ag::testing
