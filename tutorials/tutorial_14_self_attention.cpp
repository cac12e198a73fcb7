// Tutorial 14 — Self-attention and positional encoding.
//
// d2l's section "Self-Attention and Positional Encoding": attention whose
// queries, keys and values are one sequence; what it costs against an RNN and
// a CNN (the section's table, then measured here); the sin/cos positional
// encoding, printed and drawn; and the section's exercise: the encoding of
// position i + delta is a fixed rotation of the encoding of position i.
//
// Legend: B batch, n (or T) sequence length, d features, k kernel size.
//
// Run: build/tutorial_14_self_attention [--no-pause] [--out DIR]
#include <chrono>
#include <cmath>
#include <functional>
#include <iostream>
#include <vector>

#include "tutorial.h"

namespace {

// A 1-D convolution with kernel size 3 and "same" zero padding, built from
// ops: each step's window [x_{t-1}, x_t, x_{t+1}] side by side, then one
// matmul.  X [B, T, d], W [3d, d] -> [B, T, d].
ag::Tensor conv1d_k3(const ag::Tensor& X, const ag::Tensor& W) {
  const int64_t B = X.size(0), T = X.size(1), d = X.size(2);
  const ag::Tensor pad = ag::zeros({B, 1, d}, X.dtype());
  const ag::Tensor padded = ag::cat({pad, X, pad}, 1);  // [B, T + 2, d]
  const ag::Tensor windows = ag::cat(
      {ag::narrow(padded, 1, 0, T), ag::narrow(padded, 1, 1, T), ag::narrow(padded, 1, 2, T)},
      -1);                        // [B, T, 3d]
  return ag::matmul(windows, W);  // [B, T, d]
}

// The best of `repeats` wall-clock times of `run`, in milliseconds (the best,
// because other programs on the machine only ever make a run slower).
double best_ms(const std::function<void()>& run, int repeats = 3) {
  double best = 1e300;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    run();
    const std::chrono::duration<double, std::milli> took = std::chrono::steady_clock::now() - start;
    best = std::min(best, took.count());
  }
  return best;
}

// |d out[0, last, :] / d X[0, 0, :]|: whether the last output step can see
// the first input step at all.
double reach_first_to_last(const ag::Tensor& X, const ag::Tensor& out) {
  const int64_t T = out.size(1);
  ag::sum(ag::narrow(out, 1, T - 1, 1)).backward();
  return ag::sum(ag::abs(ag::narrow(X.grad(), 1, 0, 1))).item();
}

}  // namespace

int main(int argc, char** argv) {
  tut::Tutorial t(argc, argv, 14, "Self-attention and positional encoding");
  ag::manual_seed(14);
  ag::set_num_threads(1);  // the timings below compare one thread with one thread

  t.step("Self-attention: queries = keys = values",
         "Most tutorials so far attended from queries to a separate set of key-value pairs "
         "(tutorial 7's look-ahead example was already self-attention). Self-attention feeds one "
         "sequence X [B, n, d] in all three places: every token "
         "is a query that looks at every token (itself included) and returns a weighted "
         "average of them. The output has X's shape, so self-attention layers stack like "
         "any other layer. With plain dot-product scores the score matrix X X^T is "
         "symmetric: token i likes token j exactly as much as j likes i.");
  const ag::Tensor X = ag::randn({2, 5, 8});  // [B=2, n=5, d=8]
  ag::nn::DotProductAttention attention;
  const ag::Tensor Y = attention(X, X, X);
  const ag::Tensor W = attention.attention_weights();  // [2, 5, 5]
  t.show("X", ag::narrow(X, 0, 0, 1));
  t.show("weights of item 0", ag::narrow(W, 0, 0, 1));
  t.check("the output has X's shape [2, 5, 8]", Y.shape() == X.shape());
  const ag::Tensor scores = ag::matmul(X, ag::transpose(X, 1, 2)) / std::sqrt(8.0);
  t.check("the scores X X^T / sqrt(d) are symmetric",
          tut::max_abs_diff(scores, ag::transpose(scores, 1, 2)) == 0.0);
  // By loops (tutorial.h), no attograd op: softmax(X X^T / sqrt(8)) and W X.
  const tut::LoopAttention by_loops = tut::attention_by_loops(X, X, X, 1 / std::sqrt(8.0));
  t.check("the weights are softmax(X X^T / sqrt(8)), by loops",
          tut::max_abs_diff(W, by_loops.weights) < 1e-6,
          "max |difference| " + tut::num(tut::max_abs_diff(W, by_loops.weights)));
  t.check("each output is a weighted average of the tokens: Y = W X, by loops",
          tut::max_abs_diff(Y, by_loops.output) < 1e-6,
          "max |difference| " + tut::num(tut::max_abs_diff(Y, by_loops.output)));
  t.say(
      "In a Transformer the three roles get their own projections (multi-head "
      "attention, tutorial 9): MultiHeadAttention(X, X, X) keeps the shape too.");
  ag::nn::MultiHeadAttention multihead(8, 8, 8, 8, 2);
  const ag::Tensor Y2 = multihead(X, X, X);
  t.check("MultiHeadAttention(X, X, X) has X's shape too", Y2.shape() == X.shape(),
          ag::shape_str(Y2.shape()));
  t.show("MultiHeadAttention(X, X, X) of item 0, token 0",
         ag::narrow(ag::narrow(Y2, 0, 0, 1), 1, 0, 1));
  t.heatmap("self_attention", ag::unsqueeze(W, 1), [&] {
    ag::viz::HeatmapOptions o;
    o.xlabel = "Key token";
    o.ylabel = "Query token";
    o.titles = {"item 0", "item 1"};
    return o;
  }());

  t.step("Comparing CNNs, RNNs and self-attention",
         "d2l's table for a sequence of n tokens of d features (k: the kernel size). "
         "Computational cost per layer; sequential operations, the steps that must wait "
         "for each other (they cannot run in parallel); and the maximum path length, how "
         "many layers or steps lie between the first token and the last:\n"
         "                   complexity      sequential ops   max path length\n"
         "  CNN              O(k n d^2)      O(1)             O(n / k)\n"
         "  RNN              O(n d^2)        O(n)             O(n)\n"
         "  self-attention   O(n^2 d)        O(1)             O(1)\n"
         "Self-attention connects every pair in one layer and runs in parallel, but its "
         "cost grows with n^2: as n grows, its cost grows fastest of the three.");

  t.step("The maximum path length, measured with autograd",
         "How far does information travel in one layer? Take n = 5 tokens and ask "
         "autograd whether the last output step depends on the first input step (a "
         "non-zero gradient). A kernel-3 convolution sees one step either side, so "
         "information moves one step per layer and the first token needs n - 1 = 4 "
         "stacked layers to reach the last (in general (n - 1) / floor(k / 2): O(n / k)). "
         "One self-attention layer is enough; a GRU gets there in one layer too, but "
         "through 4 sequential steps.");
  {
    const int64_t n = 5, d = 4;
    const ag::Tensor conv_weight = ag::rand({3 * d, d}) + 0.1;  // positive: no cancellations
    std::vector<double> conv_reach;
    for (int layers = 1; layers <= 4; ++layers) {
      const ag::Tensor input = ag::randn({1, n, d}).requires_grad_(true);
      ag::Tensor h = input;
      for (int l = 0; l < layers; ++l) h = conv1d_k3(h, conv_weight);
      conv_reach.push_back(reach_first_to_last(input, h));
      std::cout << layers << " conv layer(s): |d y_4 / d x_0| = " << tut::num(conv_reach.back())
                << "\n";
    }
    const ag::Tensor input = ag::randn({1, n, d}).requires_grad_(true);
    const double attention_reach = reach_first_to_last(input, attention(input, input, input));
    std::cout << "1 self-attention layer: |d y_4 / d x_0| = " << tut::num(attention_reach) << "\n";
    t.check("3 conv layers do not reach from token 0 to token 4, 4 do",
            conv_reach[2] == 0.0 && conv_reach[3] > 0.0);
    t.check("one self-attention layer does", attention_reach > 0.0);
    // The GRU reads the steps in order: x_0 reaches y_4 through 4 updates of
    // its state. nn::GRU takes time-major [n, B, d].
    ag::nn::GRU gru(d, d);
    const ag::Tensor steps = ag::randn({n, 1, d}).requires_grad_(true);
    ag::sum(ag::narrow(gru(steps).output, 0, n - 1, 1)).backward();
    const double gru_reach = ag::sum(ag::abs(ag::narrow(steps.grad(), 0, 0, 1))).item();
    std::cout << "1 GRU layer: |d y_4 / d x_0| = " << tut::num(gru_reach) << "\n";
    t.check("so does one GRU layer", gru_reach > 0.0);
  }

  t.step("The cost, measured",
         "Now time one layer of each, forward only, on one thread, for d = 64 and "
         "growing n (best of 3 runs, milliseconds): self-attention (DotProductAttention on "
         "X, X, X), a GRU (nn::GRU, one layer, 64 hidden units) and the kernel-3 "
         "convolution above. Doubling n should double the GRU's and the convolution's "
         "time, and in the end quadruple self-attention's.");
  {
    const int64_t d = 64;
    ag::nn::GRU gru(d, d);
    const ag::Tensor conv_weight = ag::randn({3 * d, d}) / std::sqrt(3.0 * d);
    ag::NoGradGuard no_grad;
    // Longer runs under the sanitizers take ~10x as long; the shape of the
    // growth is the same with the shorter list.
#if defined(__SANITIZE_ADDRESS__)
    const std::vector<int64_t> lengths = {64, 128, 256, 512};
#else
    const std::vector<int64_t> lengths = {128, 256, 512, 1024, 2048};
#endif
    std::vector<double> attention_ms, gru_ms, conv_ms;
    std::cout << "       n   self-attention        GRU       conv\n";
    for (const int64_t n : lengths) {
      const ag::Tensor x = ag::randn({1, n, d});
      const ag::Tensor x_time_major = ag::transpose(x, 0, 1).contiguous();  // [n, 1, d]
      attention_ms.push_back(best_ms([&] { attention(x, x, x); }));
      gru_ms.push_back(best_ms([&] { gru(x_time_major); }));
      conv_ms.push_back(best_ms([&] { conv1d_k3(x, conv_weight); }));
      std::cout << tut::num(double(n), "%8.0f") << tut::num(attention_ms.back(), "%17.2f")
                << tut::num(gru_ms.back(), "%11.2f") << tut::num(conv_ms.back(), "%11.2f") << "\n";
    }
    const double attention_growth = attention_ms.back() / attention_ms.front();
    const double gru_growth = gru_ms.back() / gru_ms.front();
    const double n_growth = double(lengths.back()) / double(lengths.front());
    std::cout << "From n = " << lengths.front() << " to n = " << lengths.back() << " (x"
              << tut::num(n_growth) << "): self-attention x" << tut::num(attention_growth, "%.1f")
              << ", GRU x" << tut::num(gru_growth, "%.1f") << ", conv x"
              << tut::num(conv_ms.back() / conv_ms.front(), "%.1f") << "\n";
    // Printed, not checked: a timing depends on the machine and on what else
    // runs on it, and a check must not. So the prose says what to look for,
    // not what the numbers are.
    t.say(
        "What to look for in the table (printed, not checked: timings depend on the "
        "machine and on what else runs on it): the GRU's n steps run one after another, "
        "each a small matrix product, so its time grows in proportion to n; "
        "self-attention's one big product grows with n^2, so its column grows fastest and "
        "overtakes the others once n is large enough.");
  }

  t.step("Positional encoding",
         "Self-attention ignores order: permute the tokens and the outputs are permuted "
         "the same way, nothing else changes. d2l adds a fixed positional encoding P to "
         "the input, X + P, with\n"
         "  P[i, 2j]   = sin(i / 10000^(2j/d))\n"
         "  P[i, 2j+1] = cos(i / 10000^(2j/d))\n"
         "Each pair of columns is a sine and cosine of one frequency; the frequency falls "
         "along the columns, like the bits of a binary number that flip more slowly the "
         "higher they are. nn::PositionalEncoding holds P [1, max_len, d] (float64).");
  const int64_t d = 32, T = 60;
  ag::nn::PositionalEncoding encoding(d, /*dropout=*/0.0, /*max_len=*/1000);
  t.check("P is [1, max_len, d] = [1, 1000, 32], float64",
          encoding.P.shape() == ag::Shape{1, 1000, d} && encoding.P.dtype() == ag::kFloat64);
  const ag::Tensor P = ag::reshape(encoding.P, {1000, d});  // [max_len, d]
  t.show("P[:4, :8]", ag::narrow(ag::narrow(P, 0, 0, 4), 1, 0, 8));
  {
    // Permuting the tokens permutes self-attention's output (before P is added).
    const ag::Tensor x = ag::randn({1, 5, d});
    const ag::Tensor order = ag::tensor({4, 2, 0, 3, 1}, {5}, ag::kInt64);
    const ag::Tensor shuffled = ag::index_select(x, 1, order);
    t.check("without P, shuffling the tokens only shuffles the outputs",
            tut::max_abs_diff(ag::index_select(attention(x, x, x), 1, order),
                              attention(shuffled, shuffled, shuffled)) < 1e-6);
  }
  const std::vector<double> p = P.to_vector();  // row-major: P[i, c] = p[i * d + c]
  double formula_error = 0;
  for (const int64_t i : {0, 1, 7, 59, 999}) {
    for (int64_t j = 0; j < d / 2; ++j) {
      const double angle = double(i) / std::pow(10000.0, 2.0 * double(j) / double(d));
      formula_error = std::max({formula_error, std::abs(p[i * d + 2 * j] - std::sin(angle)),
                                std::abs(p[i * d + 2 * j + 1] - std::cos(angle))});
    }
  }
  t.check("P follows the sin/cos formula", formula_error < 1e-12, tut::num(formula_error));
  t.heatmap("positional_encoding", ag::reshape(ag::narrow(P, 0, 0, T), {1, 1, T, d}), [&] {
    ag::viz::HeatmapOptions o;
    o.xlabel = "Encoding dimension";
    o.ylabel = "Position";
    o.titles = {"P[:60, :32]"};
    o.colormap = ag::viz::Colormap::Viridis;
    o.cell_size = 8;
    o.vmin = -1.0;
    o.vmax = 1.0;
    return o;
  }());

  t.step("Relative positions are a linear map",
         "d2l's exercise: for a fixed offset delta, P[i + delta] is a linear function of "
         "P[i], the same for every i. With w_j = 1 / 10000^(2j/d), the pair (sin(i w_j), "
         "cos(i w_j)) moved on by delta is a rotation by delta w_j:\n"
         "  [P[i+delta, 2j]  ]   [ cos(delta w_j)   sin(delta w_j)] [P[i, 2j]  ]\n"
         "  [P[i+delta, 2j+1]] = [-sin(delta w_j)   cos(delta w_j)] [P[i, 2j+1]]\n"
         "M_delta [d, d] is these 2x2 blocks on the diagonal. It depends on delta only, "
         "not on i: a model can learn to attend by relative position with one matrix.");
  double rotation_error = 0;
  for (const int64_t delta : {1, 5, 20}) {
    std::vector<double> entries(d * d, 0.0);
    for (int64_t j = 0; j < d / 2; ++j) {
      const double w = 1.0 / std::pow(10000.0, 2.0 * double(j) / double(d));
      const int64_t r = 2 * j;
      entries[r * d + r] = std::cos(delta * w);
      entries[r * d + r + 1] = std::sin(delta * w);
      entries[(r + 1) * d + r] = -std::sin(delta * w);
      entries[(r + 1) * d + r + 1] = std::cos(delta * w);
    }
    const ag::Tensor M = ag::tensor(entries, {d, d}, ag::kFloat64);
    if (delta == 1) t.show("M_1[:4, :4]", ag::narrow(ag::narrow(M, 0, 0, 4), 1, 0, 4));
    for (const int64_t i : {0, 3, 10, 100, 500}) {
      const ag::Tensor now = ag::narrow(P, 0, i, 1);                     // [1, d]
      const ag::Tensor later = ag::narrow(P, 0, i + delta, 1);           // [1, d]
      const ag::Tensor moved = ag::matmul(now, ag::transpose(M, 0, 1));  // (M P[i]^T)^T
      rotation_error = std::max(rotation_error, tut::max_abs_diff(later, moved));
    }
  }
  std::cout << "max |P[i + delta] - M_delta P[i]| over delta in {1, 5, 20}, i in {0, 3, 10, "
               "100, 500}: "
            << tut::num(rotation_error) << "\n";
  t.check("P[i + delta] = M_delta P[i] for every i tried, to 1e-6", rotation_error < 1e-6,
          tut::num(rotation_error));
  t.say(
      "The viewer trains a Transformer live and draws its self-attention maps, head by "
      "head: attograd-viewer --scene transformer.");
  return t.finish();
}
