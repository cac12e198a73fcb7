// Grades exercise 2 (starters/02_stable_softmax.cpp): stable_softmax against
// values worked by hand, against the definition on small scores, on scores
// that overflow exp, and its gradient by gradcheck.
#include <cmath>

#include "exercises.h"
#include "grader.h"

int main() {
  ex::Grader g(2, "a softmax that does not overflow", "core/src/ops_softmax.cpp (softmax)");
  // By hand: softmax([0, ln 2, ln 3]) = [1, 2, 3] / 6.
  const ag::Tensor thirds = ag::tensor({0, std::log(2.0), std::log(3.0)}, {1, 3}, ag::kFloat64);
  g.close(
      "softmax([0, ln 2, ln 3]) = [1/6, 2/6, 3/6]", [&] { return ex::stable_softmax(thirds); },
      ag::tensor({1 / 6.0, 2 / 6.0, 3 / 6.0}, {1, 3}, ag::kFloat64), 1e-12,
      "softmax(x)_i = exp(x_i) / sum_j exp(x_j), over the last axis");

  // The definition, on small random scores of rank 3 (each row its own softmax).
  const ag::Tensor x = ex::uniform({2, 3, 5}, 2);
  const ag::Tensor e = ag::exp(x);
  g.close(
      "random scores [2, 3, 5]: each row of the last axis", [&] { return ex::stable_softmax(x); },
      e / ag::sum(e, -1, true), 1e-12,
      "the softmax runs over the last axis only: every reduction (the max, the sum) over "
      "dim -1 with keepdim true, so that it broadcasts back against its row");

  // Large scores: the same answer as the shifted row, no inf, no NaN.
  const ag::Tensor large = ag::tensor({1000, 1001, 1002, -1000, 0, 1000}, {2, 3}, ag::kFloat64);
  const ag::Tensor shifted = ag::tensor({0, 1, 2, -2000, -1000, 0}, {2, 3}, ag::kFloat64);
  const ag::Tensor es = ag::exp(shifted);
  g.close(
      "scores near 1000: [1000, 1001, 1002] gives softmax([0, 1, 2])",
      [&] { return ex::stable_softmax(large); }, es / ag::sum(es, -1, true), 1e-12,
      "exp(1000) is inf in float64: subtract each row's maximum before exp "
      "(ag::max(x, -1, true)); the result does not change");

  // Its gradient, through autograd, against central differences.
  g.gradcheck(
      "gradcheck: the gradient autograd takes through your ops",
      [](const std::vector<ag::Tensor>& in) { return ex::stable_softmax(in[0]); },
      {ex::uniform({2, 4}, 3).requires_grad_()},
      "build it from differentiable ag:: ops only (no to_vector, no data_ptr)");
  g.close(
      "PyTorch's numbers: [[1000, 1001, 1002], [-5, 0, 700]]",
      [] { return ex::stable_softmax(ex::fixture("ex2.x")); }, ex::fixture("ex2.y"), 1e-12,
      "subtract each row's own maximum: a row's scores may be far from another row's");
  return g.finish();
}
