// Grades exercise 3 (starters/03_masked_softmax.cpp): masked_softmax against
// the definition computed element by element (a loop over rows, std::exp),
// for both forms of d2l's lengths, a row of length 0, its gradient and bad
// lengths.
#include <cmath>

#include "exercises.h"
#include "grader.h"

namespace {

// Row r of X [rows, n] flattened: softmax over its first length[r] entries,
// 0 after them; a row of length 0 is uniform (every score the same -1e6).
ag::Tensor by_hand(const ag::Tensor& X, const std::vector<int64_t>& lengths) {
  const int64_t n = X.size(-1);
  std::vector<double> x = ex::values(X), out(x.size());
  for (size_t r = 0; r < lengths.size(); ++r) {
    const int64_t length = lengths[r];
    double* row = &out[r * static_cast<size_t>(n)];
    if (length == 0) {
      for (int64_t j = 0; j < n; ++j) row[j] = 1.0 / static_cast<double>(n);
      continue;
    }
    double top = -INFINITY, total = 0;
    for (int64_t j = 0; j < length; ++j) top = std::max(top, x[r * n + j]);
    for (int64_t j = 0; j < length; ++j) total += row[j] = std::exp(x[r * n + j] - top);
    for (int64_t j = 0; j < n; ++j) row[j] = j < length ? row[j] / total : 0.0;
  }
  return ag::tensor(out, X.shape(), ag::kFloat64);
}

}  // namespace

int main() {
  ex::Grader g(3, "d2l's masked softmax", "nn/src/masks.cpp (masked_softmax)");
  const ag::Tensor X = ex::uniform({2, 2, 4}, 4);
  const std::string padding =
      "every score at or past the row's valid length becomes -1e6 before the softmax "
      "(a 0 would still get weight exp(0)); positions j < length keep theirs";

  g.close(
      "no lengths: the plain softmax", [&] { return ex::masked_softmax(X, ag::Tensor()); },
      by_hand(X, {4, 4, 4, 4}), 1e-12, "an undefined valid_lens means no mask at all");
  g.close(
      "lengths per item [2, 3] (d2l's first demonstration)",
      [&] {
        return ex::masked_softmax(X, ag::tensor({2, 3}, {2}, ag::kInt64));
      },
      by_hand(X, {2, 2, 3, 3}), 1e-12,
      padding + "; a 1-D length is shared by all rows of its batch item");
  g.close(
      "lengths per row [[1, 3], [2, 4]] (d2l's second)",
      [&] {
        return ex::masked_softmax(X, ag::tensor({1, 3, 2, 4}, {2, 2}, ag::kInt64));
      },
      by_hand(X, {1, 3, 2, 4}), 1e-12, padding + "; a 2-D length [B, Tq] gives each row its own");
  g.close(
      "a row of length 0 is uniform",
      [&] {
        return ex::masked_softmax(X, ag::tensor({0, 4}, {2}, ag::kInt64));
      },
      by_hand(X, {0, 0, 4, 4}), 1e-12,
      "a fully masked row has every score -1e6: the softmax of equal scores is 1/n each");
  g.gradcheck(
      "gradcheck, lengths [1, 3]",
      [](const std::vector<ag::Tensor>& in) {
        return ex::masked_softmax(in[0], ag::tensor({1, 3}, {2}, ag::kInt64));
      },
      {ex::uniform({2, 3, 4}, 5).requires_grad_()},
      "build it from differentiable ag:: ops (where, softmax), not from to_vector");
  g.throws(
      "lengths [3] for a batch of 2 are an error",
      [&] {
        ex::masked_softmax(X, ag::tensor({1, 2, 3}, {3}, ag::kInt64));
      },
      "masked_softmax",
      "check the lengths' shape (1-D [B] or 2-D [B, Tq]) and throw ag::Error naming "
      "masked_softmax and both shapes (AG_CHECK)");
  g.close(
      "PyTorch's numbers: d2l's code, lengths per item",
      [] { return ex::masked_softmax(ex::fixture("ex3.X"), ex::fixture("ex3.lens1")); },
      ex::fixture("ex3.y1"), 1e-12, padding);
  g.close(
      "PyTorch's numbers: d2l's code, lengths per row",
      [] { return ex::masked_softmax(ex::fixture("ex3.X"), ex::fixture("ex3.lens2")); },
      ex::fixture("ex3.y2"), 1e-12, padding);
  return g.finish();
}
