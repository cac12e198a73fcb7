// Grades exercise 8 (starters/08_heads.cpp): split_heads against its
// definition element by element, merge_heads as its inverse and against the
// definition, and the gradient of both by gradcheck.
#include "exercises.h"
#include "grader.h"

namespace {

// out[b*h + i, t, x] = X[b, t, i*d + x], by loops.
ag::Tensor split_by_hand(const ag::Tensor& X, int64_t h) {
  const int64_t B = X.size(0), T = X.size(1), d = X.size(2) / h;
  const std::vector<double> x = ex::values(X);
  std::vector<double> out(x.size());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < h; ++i)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t e = 0; e < d; ++e)
          out[((b * h + i) * T + t) * d + e] = x[(b * T + t) * h * d + i * d + e];
  return ag::tensor(out, {B * h, T, d}, ag::kFloat64);
}

}  // namespace

int main() {
  ex::Grader g(8, "multi-head attention's head split and merge",
               "nn/src/attention.cpp (transpose_qkv, transpose_output)");
  const ag::Tensor X = ex::uniform({2, 3, 8}, 40);
  const std::string split =
      "out[b*h + i, t, x] = X[b, t, i*d + x]: reshape to [B, T, h, d], permute to "
      "[B, h, T, d], reshape to [B*h, T, d]; a reshape alone keeps the time steps mixed into "
      "the heads";
  g.close(
      "split_heads [2, 3, 8] into 4 heads -> [8, 3, 2]", [&] { return ex::split_heads(X, 4); },
      split_by_hand(X, 4), 0.0, split);
  g.close(
      "split_heads into 2 heads -> [4, 3, 4]", [&] { return ex::split_heads(X, 2); },
      split_by_hand(X, 2), 0.0, split);
  const std::string merge =
      "merge_heads undoes split_heads step by step: reshape to [B, h, T, d], permute to "
      "[B, T, h, d], reshape to [B, T, h*d]";
  g.close(
      "merge_heads(split_heads(X)) is X", [&] { return ex::merge_heads(split_by_hand(X, 4), 4); },
      X, 0.0, merge);
  const ag::Tensor Y = ex::uniform({6, 5, 3}, 41);
  g.close(
      "merge_heads of [6, 5, 3] (3 heads) against the definition",
      [&] { return split_by_hand(ex::merge_heads(Y, 3), 3); }, Y, 0.0, merge);
  g.gradcheck(
      "gradcheck: split then merge",
      [](const std::vector<ag::Tensor>& in) {
        return ex::merge_heads(ex::split_heads(in[0], 2) * 3.0, 2);
      },
      {ex::uniform({1, 2, 4}, 42).requires_grad_()},
      "reshape and permute are differentiable: build both from them");
  g.close(
      "PyTorch's numbers: d2l's transpose_qkv, 4 heads",
      [] { return ex::split_heads(ex::fixture("ex8.X"), 4); }, ex::fixture("ex8.split"), 0.0,
      split);
  return g.finish();
}
