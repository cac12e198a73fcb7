// Core ops against PyTorch: every case of tests/fixtures/core.npz (written by
// scripts/make_core_fixtures.py, loaded with our own load_npz) is recomputed
// here, forward and backward, in float64 and in float32.
//
// For a case with inputs x0, x1, ... the file holds the output and the
// gradients of L = sum(output * w) with respect to each floating-point input.
// float64 must agree to ~1e-10; float32 (inputs rounded from the float64
// ones) to ~1e-5 relative.
#include <cmath>
#include <set>

#include "test_util.h"

namespace ag {
namespace {

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

// The same expressions as CASES in scripts/make_core_fixtures.py.
const std::map<std::string, Fn>& cases() {
  using V = const std::vector<Tensor>&;
  static const std::map<std::string, Fn> table = {
      // ---- elementwise, with broadcasting ----
      {"broadcast_arith",
       [](V x) { return ((x[0] + x[1]) * x[2]) / (x[2] * x[2] + 1.0) - x[0] * 2.0; }},
      {"exp", [](V x) { return exp(x[0]); }},
      {"log", [](V x) { return log(x[0]); }},
      {"tanh", [](V x) { return tanh(x[0]); }},
      {"sigmoid", [](V x) { return sigmoid(x[0]); }},
      {"relu", [](V x) { return relu(x[0]); }},
      {"sqrt", [](V x) { return sqrt(x[0]); }},
      {"pow_scalar", [](V x) { return pow(x[0], 2.5); }},
      {"pow_tensor", [](V x) { return pow(x[0], x[1]); }},
      {"unary_chain", [](V x) { return sqrt(exp(tanh(x[0])) + log(x[0]) * sigmoid(x[0])); }},
      // ---- reductions ----
      {"sum_dim_keepdim", [](V x) { return sum(x[0], 1, /*keepdim=*/true) * x[0]; }},
      {"sum_all", [](V x) { return sum(x[0] * x[0]); }},
      {"mean_dim", [](V x) { return mean(x[0], 0); }},
      {"mean_all", [](V x) { return mean(exp(x[0])); }},
      {"max_dim", [](V x) { return max(x[0], -1); }},
      {"max_all", [](V x) { return max(x[0]) * x[0]; }},
      // ---- softmax ----
      {"softmax_dim0", [](V x) { return softmax(x[0], 0); }},
      {"softmax_dim1", [](V x) { return softmax(x[0], 1); }},
      {"softmax_last", [](V x) { return softmax(x[0], -1); }},
      {"log_softmax_dim1", [](V x) { return log_softmax(x[0], 1); }},
      {"log_softmax_last", [](V x) { return log_softmax(x[0], -1); }},
      {"masked_fill_softmax", [](V x) { return softmax(masked_fill(x[0], x[1], -1e6), -1); }},
      // ---- matmul family ----
      {"mm", [](V x) { return mm(x[0], x[1]); }},
      {"matmul_batched_broadcast", [](V x) { return matmul(x[0], x[1]); }},
      {"matmul_shared_weight", [](V x) { return matmul(x[0], x[1]); }},
      {"matmul_vector_batch", [](V x) { return matmul(x[0], x[1]); }},
      {"matmul_dot", [](V x) { return matmul(x[0], x[1]); }},
      {"bmm_transposed", [](V x) { return bmm(x[0], transpose(x[1], 1, 2)); }},
      {"linear", [](V x) { return linear(x[0], x[1], x[2]); }},
      {"linear_vector_no_bias", [](V x) { return linear(x[0], x[1]); }},
      // ---- selecting, joining, repeating ----
      {"where", [](V x) { return where(x[0], x[1], x[2]); }},
      {"cat_stack",
       [](V x) {
         return stack({cat({x[0], x[1]}, 1), x[2] * 2.0}, 0);
       }},
      {"repeat_interleave", [](V x) { return repeat_interleave(x[0], 2, 1); }},
      {"repeat_interleave_tensor", [](V x) { return repeat_interleave(x[0], x[1], 0); }},
      // ---- views ----
      {"view_chain",
       [](V x) {
         return unsqueeze(permute(reshape(transpose(x[0], 0, 2), {4, 6}), {1, 0}), 0) * 3.0;
       }},
      {"view_chain_broadcast",
       [](V x) {
         const Tensor v = reshape(permute(expand(x[0], {3, 2, 4}), {2, 0, 1}), {4, 6});
         return matmul(transpose(v, 0, 1), squeeze(x[1], 1));
       }},
      // ---- losses ----
      {"mse_loss", [](V x) { return mse_loss(x[0], x[1]); }},
      {"cross_entropy", [](V x) { return cross_entropy(x[0], x[1]); }},
  };
  return table;
}

const char* kFile = "core.npz";

// The inputs x0, x1, ... of a case, as stored (float64, int64 or bool).
std::vector<Tensor> case_inputs(const std::string& name) {
  const auto& entries = testing::fixture(kFile);
  std::vector<Tensor> inputs;
  for (size_t i = 0;; ++i) {
    auto it = entries.find(name + ".x" + std::to_string(i));
    if (it == entries.end()) return inputs;
    inputs.push_back(it->second);
  }
}

class TorchParityTest : public ::testing::TestWithParam<std::string> {
 protected:
  // Runs the case with floating-point inputs (and w) cast to `dtype`.
  void check_case(DType dtype, double tol) {
    const std::string& name = GetParam();
    std::vector<Tensor> leaves;
    for (const Tensor& x : case_inputs(name)) {
      if (!is_floating(x.dtype())) {
        leaves.push_back(x);
        continue;
      }
      leaves.push_back(x.to(dtype).detach().clone().requires_grad_());
    }
    ASSERT_FALSE(leaves.empty()) << "no inputs for " << name << " in " << kFile;
    const Tensor out = cases().at(name)(leaves);
    ASSERT_EQ(out.dtype(), dtype);
    const Tensor& expected = testing::fixture_tensor(kFile, name + ".output");
    EXPECT_TRUE(testing::all_close(out, expected, tol, tol)) << name << " output";

    const Tensor w = testing::fixture_tensor(kFile, name + ".w").to(dtype);
    sum(out * w).backward();
    for (size_t i = 0; i < leaves.size(); ++i) {
      if (!leaves[i].requires_grad()) continue;
      const std::string key = name + ".grad.x" + std::to_string(i);
      ASSERT_TRUE(leaves[i].grad().defined()) << key << ": no gradient reached x" << i;
      EXPECT_TRUE(
          testing::all_close(leaves[i].grad(), testing::fixture_tensor(kFile, key), tol, tol))
          << key;
    }
  }
};

TEST_P(TorchParityTest, Float64) {
  check_case(kFloat64, 1e-10);
}

TEST_P(TorchParityTest, Float32) {
  check_case(kFloat32, 1e-5);
}

std::vector<std::string> case_names() {
  std::vector<std::string> names;
  for (const auto& [name, fn] : cases()) names.push_back(name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(Core, TorchParityTest, ::testing::ValuesIn(case_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

// The file and the table above must describe the same cases.
TEST(TorchParityFixture, EveryCaseInTheFileHasAnExpression) {
  std::set<std::string> in_file;
  for (const auto& [key, tensor] : testing::fixture(kFile))
    in_file.insert(key.substr(0, key.find('.')));
  std::set<std::string> in_table;
  for (const auto& [name, fn] : cases()) in_table.insert(name);
  EXPECT_EQ(in_file, in_table);
}

}  // namespace
}  // namespace ag
