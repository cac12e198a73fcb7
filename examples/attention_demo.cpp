// attention_demo — the d2l "Attention Scoring Functions" toy example, end to end:
// masked softmax, additive and scaled dot-product attention, their weights as
// a text heatmap, one backward pass, and a numerical gradient check.
//
// Run: build/attention_demo
#include <attograd/attograd.h>

#include <cstdio>
#include <iostream>
#include <string>

namespace {

// One character per weight, darker = larger: a heatmap that needs no window.
void print_heatmap(const std::string& title, const ag::Tensor& weights) {
  static const std::string shades = " .:-=+*#%@";
  std::cout << title << " (" << ag::shape_str(weights.shape())
            << ", rows = queries, cols = keys)\n";
  const ag::Tensor w = ag::reshape(weights.detach(), {-1, weights.size(-1)});
  const std::vector<double> values = w.to_vector();
  for (int64_t row = 0; row < w.size(0); ++row) {
    std::cout << "  |";
    for (int64_t col = 0; col < w.size(1); ++col) {
      const double v = values[static_cast<size_t>(row * w.size(1) + col)];
      std::cout << shades[static_cast<size_t>(std::min(9.0, v * 10.0))];
    }
    std::cout << "|\n";
  }
}

}  // namespace

int main() {
  ag::manual_seed(0);
  std::cout << "== 1. Masked softmax: positions past the valid length get no weight ==\n";
  const ag::Tensor scores = ag::rand({2, 2, 4});
  std::cout << ag::nn::masked_softmax(scores, ag::tensor({2, 3}, {2}, ag::kInt64)) << "\n\n";

  std::cout << "== 2. The toy example: 2 batches, 1 query, 10 key-value pairs ==\n";
  // keys are all ones, values are 0..39 in 10 rows of 4; valid lengths 2 and 6.
  const ag::Tensor keys = ag::ones({2, 10, 2});
  const ag::Tensor values = ag::expand(ag::reshape(ag::arange(40), {1, 10, 4}), {2, 10, 4});
  const ag::Tensor valid_lens = ag::tensor({2, 6}, {2}, ag::kInt64);

  ag::nn::AdditiveAttention additive(/*key_size=*/2, /*query_size=*/20, /*num_hiddens=*/8,
                                     /*dropout=*/0.1);
  additive.eval();
  const ag::Tensor q_additive = ag::randn({2, 1, 20}).requires_grad_();
  const ag::Tensor out_additive = additive(q_additive, keys, values, valid_lens);
  std::cout << "additive attention output:\n" << out_additive << "\n";
  print_heatmap("additive attention weights", additive.attention_weights());

  ag::nn::DotProductAttention dot(/*dropout=*/0.5);
  dot.eval();
  const ag::Tensor q_dot = ag::randn({2, 1, 2});
  const ag::Tensor out_dot = dot(q_dot, keys, values, valid_lens);
  std::cout << "\nscaled dot-product attention output:\n" << out_dot << "\n";
  print_heatmap("dot-product attention weights", dot.attention_weights());
  std::cout << "Every key is the same vector, so the weights are uniform over the valid\n"
               "keys: the outputs are the means of the first 2 and the first 6 value rows.\n\n";

  std::cout << "== 3. Backward: d(sum of outputs)/d(query) and d/d(W_q) ==\n";
  ag::sum(out_additive).backward();
  std::cout << "query grad shape " << ag::shape_str(q_additive.grad().shape())
            << ", W_q.weight grad shape " << ag::shape_str(additive.W_q.weight.grad().shape())
            << "\n\n";

  std::cout << "== 4. gradcheck: additive attention in float64 against finite differences ==\n";
  additive.to(ag::kFloat64);
  const ag::Tensor q64 = ag::randn({2, 1, 20}, ag::kFloat64).requires_grad_();
  const ag::Tensor k64 = ag::randn({2, 10, 2}, ag::kFloat64).requires_grad_();
  const ag::Tensor v64 = ag::randn({2, 10, 4}, ag::kFloat64).requires_grad_();
  const ag::GradcheckResult check = ag::gradcheck(
      [&](const std::vector<ag::Tensor>& in) { return additive(in[0], in[1], in[2], valid_lens); },
      {q64, k64, v64});
  std::cout << check.message << "\n";
  return check.ok ? 0 : 1;
}
