// Grades exercise 9 (starters/09_gru_cell.cpp): gru_cell against PyTorch's
// equations computed element by element (loops, std::exp, std::tanh), a case
// worked by hand, and its gradient by gradcheck.
#include <cmath>

#include "exercises.h"
#include "grader.h"

namespace {

// h' by loops: for each row and unit, the three gates' dot products.
ag::Tensor by_hand(const ag::Tensor& x, const ag::Tensor& h, const ex::GRUWeights& p) {
  const int64_t B = x.size(0), I = x.size(1), H = h.size(1);
  const std::vector<double> xv = ex::values(x), hv = ex::values(h), wi = ex::values(p.w_ih),
                            wh = ex::values(p.w_hh), bi = ex::values(p.b_ih),
                            bh = ex::values(p.b_hh);
  const auto input_side = [&](int64_t b, int64_t row) {
    double s = bi[row];
    for (int64_t c = 0; c < I; ++c) s += wi[row * I + c] * xv[b * I + c];
    return s;
  };
  const auto hidden_side = [&](int64_t b, int64_t row) {
    double s = bh[row];
    for (int64_t c = 0; c < H; ++c) s += wh[row * H + c] * hv[b * H + c];
    return s;
  };
  const auto sigmoid = [](double v) { return 1 / (1 + std::exp(-v)); };
  std::vector<double> out(static_cast<size_t>(B * H));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t u = 0; u < H; ++u) {
      const double r = sigmoid(input_side(b, u) + hidden_side(b, u));
      const double z = sigmoid(input_side(b, H + u) + hidden_side(b, H + u));
      const double n = std::tanh(input_side(b, 2 * H + u) + r * hidden_side(b, 2 * H + u));
      out[b * H + u] = (1 - z) * n + z * hv[b * H + u];
    }
  return ag::tensor(out, {B, H}, ag::kFloat64);
}

ex::GRUWeights random_weights(int64_t I, int64_t H, uint64_t seed) {
  return {ex::uniform({3 * H, I}, seed), ex::uniform({3 * H, H}, seed + 1),
          ex::uniform({3 * H}, seed + 2), ex::uniform({3 * H}, seed + 3)};
}

}  // namespace

int main() {
  ex::Grader g(9, "one GRU step", "core/src/ops_rnn.cpp (gru_cell)");
  const int64_t I = 3, H = 4;
  const ag::Tensor x = ex::uniform({2, I}, 50), h = ex::uniform({2, H}, 51);

  const ex::GRUWeights zero = {ag::zeros({3 * H, I}, ag::kFloat64),
                               ag::zeros({3 * H, H}, ag::kFloat64),
                               ag::zeros({3 * H}, ag::kFloat64), ag::zeros({3 * H}, ag::kFloat64)};
  g.close(
      "every weight 0: r = z = 1/2, n = tanh(0) = 0, so h' = h / 2",
      [&] { return ex::gru_cell(x, h, zero); }, h * 0.5, 1e-12,
      "h' = (1 - z) * n + z * h with z = sigmoid(0) = 1/2 and n = 0");

  const ex::GRUWeights p = random_weights(I, H, 52);
  g.close(
      "random weights, B = 2, I = 3, H = 4", [&] { return ex::gru_cell(x, h, p); },
      by_hand(x, h, p), 1e-12,
      "h' = (1 - z) * n + z * h (z keeps the old state); the gates stacked r, z, n in w_ih "
      "and w_hh's rows; n = tanh(W_in x + b_in + r * (W_hn h + b_hn)), r after the "
      "hidden side's linear map");

  g.gradcheck(
      "gradcheck: x, h and all four weights",
      [](const std::vector<ag::Tensor>& in) {
        return ex::gru_cell(in[0], in[1], {in[2], in[3], in[4], in[5]});
      },
      {ex::uniform({2, 2}, 60).requires_grad_(), ex::uniform({2, 3}, 61).requires_grad_(),
       ex::uniform({9, 2}, 62).requires_grad_(), ex::uniform({9, 3}, 63).requires_grad_(),
       ex::uniform({9}, 64).requires_grad_(), ex::uniform({9}, 65).requires_grad_()},
      "build it from differentiable ag:: ops only (linear, narrow, sigmoid, tanh)");
  g.close(
      "PyTorch's numbers: torch.nn.GRUCell",
      [] {
        return ex::gru_cell(ex::fixture("ex9.x"), ex::fixture("ex9.h"),
                            {ex::fixture("ex9.w_ih"), ex::fixture("ex9.w_hh"),
                             ex::fixture("ex9.b_ih"), ex::fixture("ex9.b_hh")});
      },
      ex::fixture("ex9.h_next"), 1e-12,
      "h' = (1 - z) * n + z * h, n = tanh(W_in x + b_in + r * (W_hn h + b_hn)): torch's "
      "GRUCell");
  return g.finish();
}
