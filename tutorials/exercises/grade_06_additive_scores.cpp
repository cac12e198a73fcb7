// Grades exercise 6 (starters/06_additive_scores.cpp): the forward against
// the definition computed element by element, its gradient by gradcheck, and
// the backward by hand against numerical derivatives of the definition.
#include <cmath>

#include "exercises.h"
#include "grader.h"

namespace {

// scores[b, i, j] = sum_x w[x] tanh(q[b, i, x] + k[b, j, x]), by loops.
ag::Tensor by_hand(const ag::Tensor& q, const ag::Tensor& k, const ag::Tensor& w) {
  const int64_t B = q.size(0), Tq = q.size(1), Tk = k.size(1), h = q.size(2);
  const std::vector<double> qv = ex::values(q), kv = ex::values(k), wv = ex::values(w);
  std::vector<double> out(static_cast<size_t>(B * Tq * Tk));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < Tq; ++i)
      for (int64_t j = 0; j < Tk; ++j) {
        double s = 0;
        for (int64_t x = 0; x < h; ++x)
          s += wv[x] * std::tanh(qv[(b * Tq + i) * h + x] + kv[(b * Tk + j) * h + x]);
        out[(b * Tq + i) * Tk + j] = s;
      }
  return ag::tensor(out, {B, Tq, Tk}, ag::kFloat64);
}

}  // namespace

int main() {
  ex::Grader g(6, "additive attention's scores, forward and backward",
               "core/src/ops_attention.cpp (additive_scores)");
  const ag::Tensor q = ex::uniform({2, 3, 4}, 20), k = ex::uniform({2, 5, 4}, 21);
  const ag::Tensor w = ex::uniform({4}, 22), ds = ex::uniform({2, 3, 5}, 23);
  g.close(
      "forward: scores [2, 3, 5]", [&] { return ex::additive_scores(q, k, w); }, by_hand(q, k, w),
      1e-12,
      "scores[b, i, j] = sum_x w[x] tanh(q[b, i, x] + k[b, j, x]): unsqueeze q at axis 2 "
      "and k at axis 1, so queries run down and keys across");
  g.gradcheck(
      "forward: gradcheck through your ops",
      [](const std::vector<ag::Tensor>& in) { return ex::additive_scores(in[0], in[1], in[2]); },
      {ex::uniform({1, 2, 3}, 24).requires_grad_(), ex::uniform({1, 4, 3}, 25).requires_grad_(),
       ex::uniform({3}, 26).requires_grad_()},
      "build the forward from differentiable ag:: ops only");

  const auto scores = [](const std::vector<ag::Tensor>& in) {
    return by_hand(in[0], in[1], in[2]);
  };
  ex::AdditiveGrads grads;
  const std::string tanh_rule =
      "du = dS[..., None] * w * (1 - t^2), t = tanh(q_i + k_j): tanh's derivative is 1 - tanh^2";
  if (g.run<ex::AdditiveGrads>(
          "backward runs", [&] { return ex::additive_scores_backward(q, k, w, ds); }, grads,
          tanh_rule)) {
    g.close(
        "backward: dq", [&] { return grads.dq; }, ex::numeric_vjp(scores, {q, k, w}, 0, ds), 1e-7,
        tanh_rule + "; dq sums du over the keys (axis 2)");
    g.close(
        "backward: dk", [&] { return grads.dk; }, ex::numeric_vjp(scores, {q, k, w}, 1, ds), 1e-7,
        tanh_rule + "; dk sums du over the queries (axis 1)");
    g.close(
        "backward: dw", [&] { return grads.dw; }, ex::numeric_vjp(scores, {q, k, w}, 2, ds), 1e-7,
        "dw[x] = sum over b, i, j of dS[b, i, j] t[b, i, j, x]: w multiplies t");
  }
  const ag::Tensor tq = ex::fixture("ex6.q"), tk = ex::fixture("ex6.k"), tw = ex::fixture("ex6.w");
  g.close(
      "PyTorch's numbers: the forward", [&] { return ex::additive_scores(tq, tk, tw); },
      ex::fixture("ex6.scores"), 1e-12,
      "scores[b, i, j] = sum_x w[x] tanh(q[b, i, x] + k[b, j, x])");
  ex::AdditiveGrads torch;
  if (g.run<ex::AdditiveGrads>(
          "PyTorch's numbers: the backward runs",
          [&] { return ex::additive_scores_backward(tq, tk, tw, ex::fixture("ex6.ds")); }, torch,
          tanh_rule)) {
    g.close(
        "PyTorch's numbers: dq", [&] { return torch.dq; }, ex::fixture("ex6.dq"), 1e-12, tanh_rule);
    g.close(
        "PyTorch's numbers: dk", [&] { return torch.dk; }, ex::fixture("ex6.dk"), 1e-12, tanh_rule);
    g.close(
        "PyTorch's numbers: dw", [&] { return torch.dw; }, ex::fixture("ex6.dw"), 1e-12,
        "dw[x] = sum over b, i, j of dS[b, i, j] t[b, i, j, x]");
  }
  return g.finish();
}
