// Tutorial 3 — Batched matrix multiplication.
//
// Attention computes all its scores and all its outputs with two matrix
// products per batch item. bmm does a whole batch of them in one call; this
// tutorial shows its shapes, checks it against a loop of plain products, and
// builds attention's score matrix with it.
//
// Run: build/tutorial_03_bmm [--no-pause] [--out DIR]
#include <algorithm>
#include <chrono>

#include "tutorial.h"

namespace {

// Wall-clock milliseconds of fn(), best of 5 runs.
template <typename Fn>
double best_ms(Fn&& fn) {
  double best = 1e300;
  for (int run = 0; run < 5; ++run) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    const std::chrono::duration<double, std::milli> took = std::chrono::steady_clock::now() - start;
    best = std::min(best, took.count());
  }
  return best;
}

// Matrix i of a stack [b, n, k] -> [n, k] (a view).
ag::Tensor matrix(const ag::Tensor& stack, int64_t i) {
  return ag::squeeze(ag::narrow(stack, 0, i, 1), 0);
}

}  // namespace

int main(int argc, char** argv) {
  tut::Tutorial t(argc, argv, 3, "Batched matrix multiplication");
  ag::manual_seed(3);

  t.step("One matrix product",
         "mm(A, B) multiplies an [n, k] matrix by a [k, m] one: entry (i, j) is the dot "
         "product of row i of A with column j of B, so the inner sizes must agree and the "
         "result is [n, m].");
  const ag::Tensor A = ag::reshape(ag::arange(6), {2, 3});  // [n=2, k=3]
  const ag::Tensor B = ag::ones({3, 4});                    // [k=3, m=4]
  t.show("A", A);
  t.show("B", B);
  const ag::Tensor AB = ag::mm(A, B);  // [2, 4]
  t.show("mm(A, B)", AB);
  // By hand: B is all ones, so entry (i, j) is the sum of row i of A:
  // 0 + 1 + 2 = 3 and 3 + 4 + 5 = 12, the same in every column.
  t.check("mm(A, ones [3, 4]) is each row sum of A, 3 and 12, in every column",
          tut::max_abs_diff(AB, ag::tensor({3, 3, 3, 3, 12, 12, 12, 12}, {2, 4})) == 0);

  t.step("A batch of products",
         "bmm takes two stacks of matrices, [b, n, k] and [b, k, m], and multiplies them "
         "pair by pair: b independent products in one call, giving [b, n, m]. The older "
         "d2l edition's example: X = ones [2, 1, 4] and Y = ones [2, 4, 6] give [2, 1, 6], "
         "every entry a sum of four 1 x 1 products.");
  const ag::Tensor X = ag::ones({2, 1, 4});  // [b=2, n=1, k=4]
  const ag::Tensor Y = ag::ones({2, 4, 6});  // [b=2, k=4, m=6]
  const ag::Tensor XY = ag::bmm(X, Y);       // [2, 1, 6]
  t.show("bmm(X, Y)", XY);
  t.check("bmm(ones [2, 1, 4], ones [2, 4, 6]) is 4 everywhere, shape [2, 1, 6]",
          XY.shape() == ag::Shape{2, 1, 6} && tut::max_abs_diff(XY, ag::full({2, 1, 6}, 4)) == 0);

  t.step("bmm is a loop of mm",
         "Nothing mixes across the batch: item i of the result depends only on item i of "
         "both inputs. Check it on random stacks against a loop of mm, one batch item at a "
         "time, and see the error message when the shapes do not fit. matmul does the "
         "same on stacks, and also broadcasts: matmul(R, Q) with R [3, 7] multiplies R by "
         "each of Q's 5 matrices, as torch.matmul does.");
  const ag::Tensor P = ag::randn({5, 3, 7});  // [b=5, n=3, k=7]
  const ag::Tensor Q = ag::randn({5, 7, 2});  // [b=5, k=7, m=2]
  std::vector<ag::Tensor> items;
  for (int64_t i = 0; i < 5; ++i) {
    items.push_back(ag::mm(matrix(P, i), matrix(Q, i)));  // [3, 2]
  }
  const double loop_diff = tut::max_abs_diff(ag::bmm(P, Q), ag::stack(items));  // [5, 3, 2]
  t.check("bmm equals a loop of mm over the batch", loop_diff < 1e-5,
          "max |difference| " + tut::num(loop_diff));
  // matmul is bmm that also broadcasts: one [3, 7] matrix against the stack.
  const ag::Tensor R = ag::randn({3, 7});
  std::vector<ag::Tensor> r_items;
  for (int64_t i = 0; i < 5; ++i) r_items.push_back(ag::mm(R, matrix(Q, i)));
  const double matmul_diff = std::max(tut::max_abs_diff(ag::matmul(P, Q), ag::bmm(P, Q)),
                                      tut::max_abs_diff(ag::matmul(R, Q), ag::stack(r_items)));
  t.check("matmul is bmm on stacks, and broadcasts one matrix against a stack", matmul_diff < 1e-5,
          "max |difference| " + tut::num(matmul_diff));
  std::string message;
  try {
    ag::bmm(ag::ones({2, 1, 20}), ag::ones({3, 10, 20}));  // 2 vs 3 matrices
  } catch (const ag::Error& error) {
    message = error.what();
  }
  std::cout << "bmm(ones [2, 1, 20], ones [3, 10, 20]) throws: " << message << "\n";
  t.check("bmm refuses stacks of different lengths, naming both shapes",
          message.find("[2, 1, 20]") != std::string::npos &&
              message.find("[3, 10, 20]") != std::string::npos);

  t.step("Attention's scores are one bmm",
         "Queries Q [B, Tq, d] and keys K [B, Tk, d]: the score of query i and key j is the "
         "dot product q_i . k_j. Transposing the keys to [B, d, Tk] (a view of the same "
         "numbers, no copy) "
         "turns all of them into one bmm: S = bmm(Q, K^T) is [B, Tq, Tk], one row of "
         "scores per query. The weights W [B, Tq, Tk] times the values V [B, Tk, v] are a "
         "second bmm, [B, Tq, v]: one weighted average of the values per query.");
  const ag::Tensor queries = ag::randn({2, 3, 4});      // [B=2, Tq=3, d=4]
  const ag::Tensor keys = ag::randn({2, 5, 4});         // [B=2, Tk=5, d=4]
  const ag::Tensor values = ag::randn({2, 5, 6});       // [B=2, Tk=5, v=6]
  const ag::Tensor keys_t = ag::transpose(keys, 1, 2);  // [2, 4, 5]
  t.check("K^T is a view: the keys' own numbers, read with swapped strides",
          keys_t.data_ptr<float>() == keys.data_ptr<float>() && !keys_t.is_contiguous());
  const ag::Tensor S = ag::bmm(queries, keys_t);  // [2, 3, 5]
  t.show("S = bmm(Q, K^T)", S);
  // The dot products in plain loops, no attograd op: linear_by_loops(x, W)
  // (tutorial.h) gives x W^T, and Q_b K_b^T is that with W = K_b.
  std::vector<ag::Tensor> scores_by_loops;
  for (int64_t b = 0; b < 2; ++b)
    scores_by_loops.push_back(tut::linear_by_loops(matrix(queries, b), matrix(keys, b)));
  const double s_diff = tut::max_abs_diff(S, ag::stack(scores_by_loops));
  t.check("S[b, i, j] is the dot product q_i . k_j, by loops", s_diff < 1e-5,
          "max |difference| " + tut::num(s_diff));
  const ag::Tensor W = ag::softmax(S, -1);  // [2, 3, 5]
  const ag::Tensor O = ag::bmm(W, values);  // [2, 3, 6]
  t.show("O = bmm(softmax(S), V)", O);
  // Unscaled (scale 1) attention in loops: softmax of the dot products, then
  // the weighted sum of the values.
  const double o_diff =
      tut::max_abs_diff(O, tut::attention_by_loops(queries, keys, values, 1.0).output);
  t.check("O [B, Tq, v] = [2, 3, 6] is the weighted sum of the values, by loops",
          O.shape() == ag::Shape{2, 3, 6} && o_diff < 1e-5, "max |difference| " + tut::num(o_diff));
  ag::viz::HeatmapOptions options;
  options.titles = {"batch 0", "batch 1"};
  options.colormap = ag::viz::Colormap::Diverging;  // scores are signed
  t.heatmap("scores", ag::unsqueeze(S, 0), options);
  t.say(
      "The heatmap shows S for both batch items: red scores are positive, blue negative, "
      "white near 0.");

  t.step("Why batch",
         "A batch holds many sequences, and each needs its own products. One bmm call over "
         "[64, 32, 64] x [64, 64, 32] does the same arithmetic as 64 calls of mm but pays "
         "the call overhead once and can split the batch across threads. On this machine "
         "(timings vary; nothing is checked here):");
  const ag::Tensor big_q = ag::randn({64, 32, 64});
  const ag::Tensor big_k = ag::randn({64, 64, 32});
  const double one_call = best_ms([&] { ag::bmm(big_q, big_k); });
  const double loop = best_ms([&] {
    for (int64_t i = 0; i < 64; ++i) ag::mm(matrix(big_q, i), matrix(big_k, i));
  });
  std::cout << "  one bmm: " << tut::num(one_call, "%.3f")
            << " ms,  64 mm calls: " << tut::num(loop, "%.3f") << " ms\n";

  t.step("Summary",
         "bmm multiplies stacks of matrices pair by pair; attention uses it twice: "
         "S = bmm(Q, K^T) for the scores and bmm(W, V) for the output; matmul also "
         "broadcasts the batch dimensions.\n"
         "Next: tutorial_04_scaled_dot_product, and why the scores are divided by sqrt(d).");
  return t.finish();
}
