#include "test_util.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include <unistd.h>

// Under AddressSanitizer an impossible allocation aborts the program unless
// the allocator may return null; attograd turns that null into ag::Error,
// which is what the out-of-memory tests (test_allocator, test_robustness)
// check. Set here, once for every test program: the test files share
// programs (CMakeLists.txt), and a program has one set of options. Ignored
// without ASan; the ThreadSanitizer pass sets its own (scripts/test.sh).
extern "C" __attribute__((used)) const char* __asan_default_options() {
  return "allocator_may_return_null=1";
}

namespace ag::testing {

std::string source_path(const std::string& relative) {
  // Joined by std::filesystem: GCC 12 at -O2 with -fsanitize=thread reads
  // `std::string(dir) + "/" + relative` as an out-of-bounds memcpy
  // (-Warray-bounds, a false positive that depends on the path's length: CI's
  // checkout at /check/work/main fails, /work/main does not).
  return (std::filesystem::path(ATTOGRAD_SOURCE_DIR) / relative).string();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

ScratchDir::ScratchDir(const std::string& name)
    // The process id keeps two runs of the suite (Release, sanitizers) apart.
    : path_((std::filesystem::temp_directory_path() / (name + "_" + std::to_string(::getpid())))
                .string()) {
  std::filesystem::remove_all(path_);
  std::filesystem::create_directories(path_);
}

ScratchDir::~ScratchDir() {
  std::error_code ignored;  // a destructor must not throw
  std::filesystem::remove_all(path_, ignored);
}

std::string scratch_file(const std::string& folder, const std::string& file) {
  static std::map<std::string, std::unique_ptr<ScratchDir>> folders;  // removed at exit
  std::unique_ptr<ScratchDir>& dir = folders[folder];
  if (!dir) dir = std::make_unique<ScratchDir>(folder);
  return *dir / file;
}

const std::map<std::string, Tensor>& fixture(const std::string& file) {
  static std::map<std::string, std::map<std::string, Tensor>> cache;
  auto it = cache.find(file);
  if (it == cache.end())
    it = cache.emplace(file, load_npz(source_path("tests/fixtures/" + file))).first;
  return it->second;
}

const Tensor& fixture_tensor(const std::string& file, const std::string& name) {
  const auto& entries = fixture(file);
  auto it = entries.find(name);
  if (it == entries.end()) throw Error("fixture: no entry '" + name + "' in " + file);
  return it->second;
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  AG_CHECK(a.shape() == b.shape(), "max_abs_diff",
           "shapes differ: " + shape_str(a.shape()) + " vs " + shape_str(b.shape()));
  const std::vector<double> x = a.to_vector(), y = b.to_vector();
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double d = std::abs(x[i] - y[i]);
    if (std::isnan(d)) return INFINITY;
    worst = std::max(worst, d);
  }
  return worst;
}

::testing::AssertionResult all_close(const Tensor& actual, const Tensor& expected, double atol,
                                     double rtol) {
  if (actual.shape() != expected.shape())
    return ::testing::AssertionFailure() << "shape " << shape_str(actual.shape()) << " vs expected "
                                         << shape_str(expected.shape());
  const std::vector<double> x = actual.to_vector(), y = expected.to_vector();
  for (size_t i = 0; i < x.size(); ++i) {
    if (!(std::abs(x[i] - y[i]) <= atol + rtol * std::abs(y[i])))
      return ::testing::AssertionFailure()
             << "element " << i << ": " << x[i] << " vs expected " << y[i] << " (max abs diff "
             << max_abs_diff(actual, expected) << ")";
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult all_close(const Tensor& actual, const std::vector<double>& expected,
                                     double atol, double rtol) {
  if (actual.numel() != static_cast<int64_t>(expected.size()))
    return ::testing::AssertionFailure()
           << "numel " << actual.numel() << " vs expected " << expected.size();
  return all_close(actual, reshape(tensor(expected, {}, kFloat64), actual.shape()), atol, rtol);
}

Tensor lens(std::vector<double> values, Shape shape) {
  return tensor(std::move(values), std::move(shape), kInt64);
}

Tensor bools(std::vector<double> values, Shape shape) {
  return tensor(std::move(values), std::move(shape), kBool);
}

bool has_nan(const Tensor& t) {
  for (double v : t.to_vector())
    if (std::isnan(v)) return true;
  return false;
}

Tensor leaf64(const Shape& shape, double low, double high) {
  return uniform(shape, low, high, kFloat64).requires_grad_();
}

::testing::AssertionResult grad_ok(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                                   const std::vector<Tensor>& inputs, double atol, double rtol) {
  const GradcheckResult r = gradcheck(fn, inputs, 1e-6, atol, rtol);
  if (r.ok) return ::testing::AssertionSuccess() << r.message;
  return ::testing::AssertionFailure() << r.message;
}

::testing::AssertionResult throws_error(const std::function<void()>& fn,
                                        const std::vector<std::string>& fragments) {
  try {
    fn();
  } catch (const Error& e) {
    const std::string message = e.what();
    for (const std::string& f : fragments)
      if (message.find(f) == std::string::npos)
        return ::testing::AssertionFailure()
               << "message \"" << message << "\" lacks \"" << f << "\"";
    return ::testing::AssertionSuccess();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "threw a non-ag::Error: " << e.what();
  }
  return ::testing::AssertionFailure() << "did not throw";
}

}  // namespace ag::testing
