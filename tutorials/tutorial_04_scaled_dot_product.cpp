// Tutorial 4 — Scaled dot-product attention, and why 1/sqrt(d).
//
// The chapter's argument: if the entries of q and k are independent with mean
// 0 and variance 1, then q . k has mean 0 and variance d, so the scores grow
// with the width d, softmax saturates, and its gradient vanishes. Dividing by
// sqrt(d) brings the variance back to 1. This tutorial measures each of those
// numbers for d from 2 to 512.
//
// Run: build/tutorial_04_scaled_dot_product [--no-pause] [--out DIR]
#include <algorithm>
#include <cmath>

#include "tutorial.h"

namespace {

const std::vector<int64_t> kWidths = {2, 4, 8, 16, 32, 64, 128, 256, 512};

// Entries uniform on [-sqrt(3), sqrt(3)): mean 0, variance (2 sqrt(3))^2 / 12 = 1.
// The argument needs only those two moments, not a Gaussian (and uniform
// numbers are several times cheaper to draw).
ag::Tensor unit_variance(const ag::Shape& shape) {
  return ag::uniform(shape, -std::sqrt(3.0), std::sqrt(3.0));
}

// The sample variance of the entries of x, in float64.
double variance(const ag::Tensor& x) {
  const ag::Tensor x64 = x.to(ag::kFloat64);
  const double mean = ag::mean(x64).item();
  return ag::mean((x64 - mean) * (x64 - mean)).item();
}

// Mean over rows of the entropy -sum_j w_j log w_j of weights [..., Tk] (nats).
// Weights that underflowed to 0 contribute 0 (the limit of w log w).
double mean_entropy(const ag::Tensor& weights) {
  const ag::Tensor w = weights.detach().to(ag::kFloat64);
  const ag::Tensor w_log_w = ag::where(ag::gt(w, ag::zeros_like(w)), w * ag::log(w), 0.0);
  return -ag::mean(ag::sum(w_log_w, -1)).item();
}

// Mean over rows of the L2 norm of g [..., Tk].
double mean_row_norm(const ag::Tensor& g) {
  return ag::mean(ag::sqrt(ag::sum(g * g, -1))).item();
}

}  // namespace

int main(int argc, char** argv) {
  tut::Tutorial t(argc, argv, 4, "Scaled dot-product attention and why 1/sqrt(d)");
  ag::manual_seed(4);

  t.step("The claim",
         "Take q and k in R^d with independent entries of mean 0 and variance 1. Each "
         "product q_i k_i has mean 0 and variance 1, and q . k is the sum of d of them, so "
         "Var(q . k) = d: the typical score grows like sqrt(d). Dividing by sqrt(d) divides "
         "the variance by d, back to 1, whatever the width. Let us measure it instead of "
         "believing it.");
  const ag::Tensor q_small = unit_variance({2, 4});
  t.show("four draws of q with d = 4 (uniform on [-1.73, 1.73), variance 1)", q_small);

  t.step("Var(q . k) for d = 2 ... 512",
         "For each d, draw 32768 independent pairs (q, k), compute every q . k at once as "
         "sum(q * k, -1), and measure the variance of the 32768 scores, before and after "
         "dividing by sqrt(d). The sampling error of a variance from 32768 samples is "
         "about 0.8%, so 5% is a safe tolerance.");
  const int64_t pairs = 32768;
  double worst_raw = 0, worst_scaled = 0;
  std::cout << "      d   Var(q.k)   Var(q.k / sqrt(d))\n";
  for (const int64_t d : kWidths) {
    const ag::Tensor q = unit_variance({pairs, d});           // [32768, d]
    const ag::Tensor k = unit_variance({pairs, d});           // [32768, d]
    const ag::Tensor scores = ag::sum(q * k, -1);             // [32768]
    const ag::Tensor scaled = scores / std::sqrt(double(d));  // [32768]
    const double raw_var = variance(scores), scaled_var = variance(scaled);
    worst_raw = std::max(worst_raw, std::abs(raw_var / double(d) - 1));
    worst_scaled = std::max(worst_scaled, std::abs(scaled_var - 1));
    std::cout << tut::num(double(d), "%7.0f") << tut::num(raw_var, "%11.2f")
              << tut::num(scaled_var, "%21.3f") << "\n";
  }
  t.check("Var(q.k) within 5% of d for every d", worst_raw < 0.05,
          "worst " + tut::num(100 * worst_raw, "%.1f") + "%");
  t.check("Var(q.k / sqrt(d)) within 5% of 1 for every d", worst_scaled < 0.05,
          "worst " + tut::num(100 * worst_scaled, "%.1f") + "%");

  t.step("What large scores do to softmax",
         "Now 64 batch items of 8 queries against 16 keys, softmax over the keys. The "
         "entropy of a row of weights says how spread out it is: log 16 = 2.77 nats when "
         "uniform, 0 when all the weight is on one key. Unscaled scores with spread "
         "sqrt(d) push softmax towards one key (a hard argmax); scaled scores keep it "
         "soft. The gradient that reaches the scores is W * (G - sum(W * G)) for an "
         "upstream gradient G: near one-hot weights make it vanish, so nothing learns.");
  std::cout << "      d   entropy unscaled   scaled    |dL/dscores| unscaled   scaled\n";
  ag::Tensor weights_unscaled, weights_scaled;  // of the last (widest) d, for the heatmap
  std::vector<double> entropy_unscaled, entropy_scaled, grad_unscaled, grad_scaled;
  const ag::Tensor upstream = ag::randn({64, 8, 16});  // G: a fixed dL/dweights [B, Tq, Tk]
  for (const int64_t d : kWidths) {
    const ag::Tensor Q = unit_variance({64, 8, d});             // [B, Tq, d]
    const ag::Tensor K = unit_variance({64, 16, d});            // [B, Tk, d]
    const ag::Tensor raw = ag::bmm(Q, ag::transpose(K, 1, 2));  // [B, Tq, Tk]
    for (const bool scale : {false, true}) {
      // The scores as a leaf, so that backward stops at them and grad() is dL/dscores.
      ag::Tensor S = (scale ? raw / std::sqrt(double(d)) : raw).detach().requires_grad_();
      const ag::Tensor W = ag::softmax(S, -1);  // [B, Tq, Tk]
      ag::sum(W * upstream).backward();         // L = sum(W * G), so dL/dW = G
      (scale ? entropy_scaled : entropy_unscaled).push_back(mean_entropy(W));
      (scale ? grad_scaled : grad_unscaled).push_back(mean_row_norm(S.grad()));
      (scale ? weights_scaled : weights_unscaled) = W;
    }
    std::cout << tut::num(double(d), "%7.0f") << tut::num(entropy_unscaled.back(), "%19.3f")
              << tut::num(entropy_scaled.back(), "%9.3f")
              << tut::num(grad_unscaled.back(), "%25.4f") << tut::num(grad_scaled.back(), "%9.4f")
              << "\n";
  }
  const auto [lo, hi] = std::minmax_element(entropy_scaled.begin(), entropy_scaled.end());
  t.check("scaled: the entropy stays within 10% across d", *hi / *lo < 1.1,
          tut::num(*lo, "%.3f") + " to " + tut::num(*hi, "%.3f") + " nats");
  t.check("unscaled: the entropy at d = 512 is below a quarter of d = 2's",
          entropy_unscaled.back() < 0.25 * entropy_unscaled.front(),
          tut::num(entropy_unscaled.back(), "%.3f") + " vs " +
              tut::num(entropy_unscaled.front(), "%.3f"));
  t.check("unscaled: the gradient at d = 512 is below a quarter of the scaled one",
          grad_unscaled.back() < 0.25 * grad_scaled.back(),
          tut::num(grad_unscaled.back(), "%.4f") + " vs " + tut::num(grad_scaled.back(), "%.4f"));
  ag::viz::HeatmapOptions options;
  options.titles = {"d = 512, unscaled", "d = 512, scaled by 1/sqrt(d)"};
  t.heatmap("weights_d512",
            ag::reshape(ag::stack({ag::narrow(weights_unscaled, 0, 0, 1),
                                   ag::narrow(weights_scaled, 0, 0, 1)}),
                        {1, 2, 8, 16}),
            options);
  t.say(
      "The heatmap shows batch item 0 at d = 512: unscaled, each query puts nearly all "
      "its weight on one key; scaled, the weights stay spread.");

  t.step("The library does the same",
         "ag::nn::DotProductAttention computes softmax(Q K^T / sqrt(d)) V (it scales the "
         "queries before the product, which is the same number up to rounding). Its "
         "attention_weights() match the scaled softmax of the last step.");
  const ag::Tensor Q = unit_variance({2, 3, 64});  // [B, Tq, d]
  const ag::Tensor K = unit_variance({2, 5, 64});  // [B, Tk, d]
  const ag::Tensor V = ag::randn({2, 5, 4});       // [B, Tk, v]
  ag::nn::DotProductAttention attention;
  const ag::Tensor out = attention(Q, K, V);  // [2, 3, 4]
  // softmax(Q K^T / 8) and its product with V by loops (tutorial.h), without
  // the library's bmm and softmax: a check they could pass only by being right.
  const tut::LoopAttention by_hand = tut::attention_by_loops(Q, K, V, 1 / 8.0);
  t.show("attention.attention_weights()", attention.attention_weights());
  t.check("DotProductAttention's weights are softmax(Q K^T / sqrt(d)), summed by loops",
          tut::max_abs_diff(attention.attention_weights(), by_hand.weights) < 1e-6);
  t.check("its output is weights @ V, summed by loops",
          tut::max_abs_diff(out, by_hand.output) < 1e-5);

  t.step("Summary",
         "With unit-variance entries, Var(q . k) = d; dividing by sqrt(d) keeps the scores "
         "at variance 1, the softmax soft and the gradient alive at any width.\n"
         "In the viewer: attograd-viewer --scene scaling, with d and scaling on a slider.\n"
         "Next: tutorial_05_additive_attention, the score for queries and keys of "
         "different sizes.");
  return t.finish();
}
