// Grades exercise 7 (starters/07_dot_product_attention.cpp): the output
// against attention computed element by element (loops, std::exp), with no
// mask, each mask alone and both, and its gradient by gradcheck.
#include <cmath>

#include "exercises.h"
#include "grader.h"

namespace {

// Attention by loops: row (b, i) sees key j when j < its length and, if
// causal, j <= i; the others weigh exactly 0.
ag::Tensor by_hand(const ag::Tensor& q, const ag::Tensor& k, const ag::Tensor& v,
                   const std::vector<int64_t>& row_lengths, bool causal) {
  const int64_t B = q.size(0), Tq = q.size(1), Tk = k.size(1), d = q.size(2), dv = v.size(2);
  const std::vector<double> qv = ex::values(q), kv = ex::values(k), vv = ex::values(v);
  std::vector<double> out(static_cast<size_t>(B * Tq * dv), 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < Tq; ++i) {
      std::vector<double> weight(static_cast<size_t>(Tk), 0.0);
      double top = -INFINITY, total = 0;
      const auto sees = [&](int64_t j) {
        return j < row_lengths[b * Tq + i] && (!causal || j <= i);
      };
      for (int64_t j = 0; j < Tk; ++j) {
        if (!sees(j)) continue;
        double s = 0;
        for (int64_t x = 0; x < d; ++x) s += qv[(b * Tq + i) * d + x] * kv[(b * Tk + j) * d + x];
        weight[j] = s / std::sqrt(static_cast<double>(d));
        top = std::max(top, weight[j]);
      }
      for (int64_t j = 0; j < Tk; ++j) total += weight[j] = sees(j) ? std::exp(weight[j] - top) : 0;
      for (int64_t j = 0; j < Tk; ++j)
        for (int64_t x = 0; x < dv; ++x)
          out[(b * Tq + i) * dv + x] += weight[j] / total * vv[(b * Tk + j) * dv + x];
    }
  return ag::tensor(out, {B, Tq, dv}, ag::kFloat64);
}

}  // namespace

int main() {
  ex::Grader g(7, "scaled dot-product attention with masks",
               "nn/src/functional.cpp (scaled_dot_product_attention)");
  const ag::Tensor q = ex::uniform({2, 4, 4}, 30), k = ex::uniform({2, 4, 4}, 31);
  const ag::Tensor v = ex::uniform({2, 4, 3}, 32);
  const ag::Tensor none;
  const std::vector<int64_t> all(8, 4);
  const std::string scale =
      "scores = Q K^T / sqrt(d), d = 4 the queries' last size: the division keeps the scores' "
      "variance near 1";
  g.close(
      "no mask", [&] { return ex::dot_product_attention(q, k, v, none, false); },
      by_hand(q, k, v, all, false), 1e-12, scale + "; output = softmax(scores) V");
  g.close(
      "lengths [2, 3]",
      [&] {
        return ex::dot_product_attention(q, k, v, ag::tensor({2, 3}, {2}, ag::kInt64), false);
      },
      by_hand(q, k, v, {2, 2, 2, 2, 3, 3, 3, 3}, false), 1e-12,
      "keys at or past the item's length are masked (-1e6 before the softmax)");
  g.close(
      "causal", [&] { return ex::dot_product_attention(q, k, v, none, true); },
      by_hand(q, k, v, all, true), 1e-12,
      "query i sees keys j <= i only: key j > i is masked (the strict upper triangle)");
  g.close(
      "lengths per row [[1, 2, 2, 4], [4, 4, 1, 3]] and causal",
      [&] {
        return ex::dot_product_attention(
            q, k, v, ag::tensor({1, 2, 2, 4, 4, 4, 1, 3}, {2, 4}, ag::kInt64), true);
      },
      by_hand(q, k, v, {1, 2, 2, 4, 4, 4, 1, 3}, true), 1e-12,
      "a key is seen only when both masks keep it: logical_and of the two keep masks");
  g.gradcheck(
      "gradcheck, lengths [3, 2] and causal",
      [](const std::vector<ag::Tensor>& in) {
        return ex::dot_product_attention(in[0], in[1], in[2], ag::tensor({3, 2}, {2}, ag::kInt64),
                                         true);
      },
      {ex::uniform({2, 3, 2}, 33).requires_grad_(), ex::uniform({2, 3, 2}, 34).requires_grad_(),
       ex::uniform({2, 3, 2}, 35).requires_grad_()},
      "build it from differentiable ag:: ops only");
  g.close(
      "PyTorch's numbers: lengths per row and causal",
      [] {
        return ex::dot_product_attention(ex::fixture("ex7.q"), ex::fixture("ex7.k"),
                                         ex::fixture("ex7.v"), ex::fixture("ex7.lens"), true);
      },
      ex::fixture("ex7.out"), 1e-12, scale + "; both masks, -1e6 at every masked key");
  return g.finish();
}
