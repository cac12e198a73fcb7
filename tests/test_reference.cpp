// The reference switch (attograd/reference.h): every op with a fast path run
// both ways, and one training step of each model, compared. The fast path
// must agree with the plain code a learner reads: to 1e-10 in float64 (the
// same formulas, summed in another order) and 1e-5 in float32 (the vector
// kernels' exp and tanh are polynomials, within 3e-7 relative).
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "attograd/attograd.h"
#include "test_util.h"

namespace ag {
namespace {

using testing::max_abs_diff;

double tolerance(DType dtype) {
  return dtype == kFloat64 ? 1e-10 : 1e-5;
}

// A random tensor of dtype that requires grad, in [-1, 1).
Tensor leaf(const Shape& shape, DType dtype) {
  return uniform(shape, -1.0, 1.0, dtype).requires_grad_();
}

// f(inputs) and every input's gradient for a random upstream gradient, in
// the mode given; the inputs are cloned, so both runs start from the same values.
struct Run {
  Tensor out;
  std::vector<Tensor> grads;
};
Run run(const std::function<Tensor(const std::vector<Tensor>&)>& f,
        const std::vector<Tensor>& inputs, bool reference) {
  ReferenceModeGuard mode(reference);
  std::vector<Tensor> leaves;
  for (const Tensor& input : inputs) {
    Tensor copy = input.detach().clone();
    if (is_floating(input.dtype()) && input.requires_grad()) copy.requires_grad_();
    leaves.push_back(copy);
  }
  Run r;
  r.out = f(leaves);
  manual_seed(7);  // the same upstream gradient in both runs
  r.out.backward(uniform(r.out.shape(), -1.0, 1.0, r.out.dtype()));
  for (const Tensor& leaf : leaves)
    r.grads.push_back(leaf.requires_grad() ? leaf.grad() : Tensor());
  return r;
}

// The fast path against the reference, output and gradients; `name` says which.
void expect_same(const std::string& name,
                 const std::function<Tensor(const std::vector<Tensor>&)>& f,
                 const std::vector<Tensor>& inputs) {
  const Run fast = run(f, inputs, false), plain = run(f, inputs, true);
  const double tol = tolerance(fast.out.dtype());
  ASSERT_EQ(fast.out.shape(), plain.out.shape()) << name;
  EXPECT_LE(max_abs_diff(fast.out, plain.out), tol) << name << ": the output";
  for (size_t i = 0; i < fast.grads.size(); ++i) {
    if (!fast.grads[i].defined()) continue;
    ASSERT_TRUE(plain.grads[i].defined()) << name << ": input " << i << " got no gradient";
    EXPECT_LE(max_abs_diff(fast.grads[i], plain.grads[i]), tol)
        << name << ": the gradient of input " << i;
  }
}

const DType kDtypes[] = {kFloat64, kFloat32};

TEST(ReferenceTest, TheSwitchAndItsGuard) {
  const bool before = reference_mode();
  {
    ReferenceModeGuard on;
    EXPECT_TRUE(reference_mode());
    {
      ReferenceModeGuard off(false);
      EXPECT_FALSE(reference_mode());
    }
    EXPECT_TRUE(reference_mode());
  }
  EXPECT_EQ(reference_mode(), before);
}

TEST(ReferenceTest, TheReferenceGraphIsD2lsOps) {
  // Fused, additive scores are one node; in reference mode, d2l's broadcast.
  const Tensor q = leaf({1, 2, 3}, kFloat64), k = leaf({1, 4, 3}, kFloat64),
               w = leaf({3}, kFloat64);
  EXPECT_EQ(additive_scores(q, k, w).grad_fn_name(), "AdditiveScoresBackward");
  ReferenceModeGuard plain;
  EXPECT_EQ(additive_scores(q, k, w).grad_fn_name(), "SumBackward");
}

TEST(ReferenceTest, MatrixProducts) {
  for (const DType dtype : kDtypes) {
    manual_seed(1);
    expect_same("matmul [37, 53] @ [53, 29]", [](auto& in) { return matmul(in[0], in[1]); },
                {leaf({37, 53}, dtype), leaf({53, 29}, dtype)});
    expect_same("bmm [3, 20, 70] @ [3, 70, 9]", [](auto& in) { return bmm(in[0], in[1]); },
                {leaf({3, 20, 70}, dtype), leaf({3, 70, 9}, dtype)});
    expect_same("linear", [](auto& in) { return linear(in[0], in[1], in[2]); },
                {leaf({5, 16}, dtype), leaf({24, 16}, dtype), leaf({24}, dtype)});
  }
}

TEST(ReferenceTest, ElementwiseSoftmaxAndSums) {
  for (const DType dtype : kDtypes) {
    manual_seed(2);
    const Tensor x = leaf({6, 33}, dtype);
    expect_same("exp", [](auto& in) { return exp(in[0]); }, {x});
    expect_same("tanh", [](auto& in) { return tanh(in[0]); }, {x});
    expect_same("softmax, last dim", [](auto& in) { return softmax(in[0], -1); }, {x});
    expect_same("softmax, first dim", [](auto& in) { return softmax(in[0], 0); }, {x});
    expect_same("sum of rows", [](auto& in) { return sum(in[0], -1); }, {x});
    expect_same("sum of columns", [](auto& in) { return sum(in[0], 0); }, {x});
  }
}

TEST(ReferenceTest, FusedAttentionOps) {
  for (const DType dtype : kDtypes) {
    manual_seed(3);
    expect_same("additive_scores", [](auto& in) { return additive_scores(in[0], in[1], in[2]); },
                {leaf({2, 3, 8}, dtype), leaf({2, 5, 8}, dtype), leaf({8}, dtype)});
    const Tensor keep = testing::bools({1, 1, 0, 1, 0, 0, 0, 0, 1, 1, 1, 0}, {3, 4});
    for (const bool zero_masked : {false, true}) {
      expect_same("masked_softmax_last (a row with no key left)",
                  [&](auto& in) { return masked_softmax_last(in[0], keep, -1e6, zero_masked); },
                  {leaf({2, 3, 4}, dtype)});
    }
    const Tensor q = leaf({2, 2, 5, 4}, dtype), k = leaf({2, 2, 6, 4}, dtype),
                 v = leaf({2, 2, 6, 3}, dtype);
    const auto flash = [](const AttentionMasks& masks) {
      return [masks](auto& in) { return flash_attention(in[0], in[1], in[2], 0.5, masks); };
    };
    expect_same("flash_attention, no mask", flash({}), {q, k, v});
    AttentionMasks causal;
    causal.causal = true;
    expect_same("flash_attention, causal", flash(causal), {q, k, v});
    AttentionMasks lengths;
    lengths.lengths = testing::lens({3, 0, 6, 1, 2, 2, 5, 6, 0, 1}, {2, 1, 5});  // rows with none
    expect_same("flash_attention, lengths", flash(lengths), {q, k, v});
    lengths.masked_rows_uniform = true;
    expect_same("flash_attention, lengths, uniform rows", flash(lengths), {q, k, v});
    AttentionMasks keep_and_additive;
    keep_and_additive.keep = testing::bools({1, 1, 0, 1, 1, 0}, {1, 1, 1, 6});
    keep_and_additive.additive =
        where(testing::bools({1, 0, 1, 1, 1, 1}, {6}), uniform({6}, -1.0, 1.0, dtype),
              -std::numeric_limits<double>::infinity());
    expect_same("flash_attention, keep and additive", flash(keep_and_additive), {q, k, v});
  }
}

TEST(ReferenceTest, FusedRecurrentAndNormOps) {
  for (const DType dtype : kDtypes) {
    manual_seed(4);
    expect_same("gru_cell", [](auto& in) { return gru_cell(in[0], in[1], in[2]); },
                {leaf({3, 12}, dtype), leaf({3, 12}, dtype), leaf({3, 4}, dtype)});
    for (const bool reverse : {false, true}) {
      expect_same(
          std::string("gru_layer, lengths, ") + (reverse ? "reverse" : "forward"),
          [reverse](auto& in) {
            return gru_layer(in[0], in[1], in[2], in[3], reverse, testing::lens({5, 2, 1}));
          },
          {leaf({5, 3, 12}, dtype), leaf({3, 4}, dtype), leaf({12, 4}, dtype), leaf({12}, dtype)});
    }
    expect_same("layer_norm",
                [](auto& in) {
                  return layer_norm(in[0], {2, 8}, in[1], in[2]);
                },
                {leaf({3, 2, 8}, dtype), leaf({2, 8}, dtype), leaf({2, 8}, dtype)});
    expect_same("layer_norm, no affine", [](auto& in) { return layer_norm(in[0], {8}); },
                {leaf({4, 8}, dtype)});
  }
}

// One training step's loss and every parameter's gradient, in the mode given.
struct Step {
  double loss;
  std::vector<Tensor> grads;
};
Step training_step(nn::EncoderDecoder& model, bool reference) {
  ReferenceModeGuard mode(reference);
  model.zero_grad();
  const Tensor src = testing::lens({3, 5, 7, 2, 1, 0, 4, 6, 8, 9}, {2, 5});
  const Tensor dec_input = testing::lens({1, 4, 6, 2, 1, 3, 5, 7}, {2, 4});
  const Tensor labels = testing::lens({4, 6, 2, 3, 3, 5, 7, 2}, {2, 4});
  const Tensor src_valid = testing::lens({5, 3}), tgt_valid = testing::lens({4, 2});
  const Tensor logits = model(src, dec_input, src_valid);
  const Tensor loss = sum(nn::masked_softmax_ce_loss(logits, labels, tgt_valid));
  loss.backward();
  Step step{loss.item(), {}};
  for (const Tensor& p : model.parameters()) step.grads.push_back(p.grad().detach().clone());
  return step;
}

void expect_same_step(nn::EncoderDecoder& model, DType dtype, const std::string& name) {
  model.to(dtype);
  model.eval();  // no dropout: the two runs must see the same network
  const Step fast = training_step(model, false), plain = training_step(model, true);
  const double tol = tolerance(dtype);
  EXPECT_NEAR(fast.loss, plain.loss, tol * std::max(1.0, std::abs(fast.loss))) << name;
  ASSERT_EQ(fast.grads.size(), plain.grads.size());
  for (size_t i = 0; i < fast.grads.size(); ++i)
    EXPECT_LE(max_abs_diff(fast.grads[i], plain.grads[i]), tol)
        << name << ": parameter " << i << "'s gradient";
}

TEST(ReferenceTest, OneTrainingStepOfEachModel) {
  for (const DType dtype : kDtypes) {
    for (const std::string scoring : {"additive", "dot", "multihead"}) {
      manual_seed(5);
      const bool bidirectional = scoring != "dot";
      auto seq2seq = nn::make_bahdanau_seq2seq(11, 12, 8, 8, 2, 0.0, scoring, bidirectional,
                                               scoring == "multihead" ? 2 : 1);
      expect_same_step(*seq2seq, dtype, "seq2seq, " + scoring);
    }
    for (const bool norm_first : {false, true}) {
      manual_seed(6);
      auto transformer = nn::make_transformer(11, 12, 16, 32, 4, 2, 0.0, norm_first);
      expect_same_step(*transformer, dtype, norm_first ? "Transformer, pre-LN" : "Transformer");
    }
  }
}

}  // namespace
}  // namespace ag
