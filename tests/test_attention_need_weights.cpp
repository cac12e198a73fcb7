// need_weights = false: DotProductAttention and MultiHeadAttention stream the
// keys (ag::flash_attention) and give the same outputs and gradients as with
// the weights kept (d2l's default), under valid_lens (1-D, 2-D, zero
// lengths), keep and additive masks and both MaskedRows; the weights are
// then undefined; dropout in training mode still keeps them.
#include <string>
#include <vector>

#include "test_util.h"

namespace ag {
namespace {

using testing::all_close;

struct Run {
  Tensor out, weights;
  std::vector<Tensor> grads;  // queries, keys, values, then the module's parameters
};

template <typename Module>
Run run(Module& m, bool need_weights, const Tensor& q0, const Tensor& k0, const Tensor& v0,
        const Tensor& lens, const Tensor& mask) {
  m.need_weights = need_weights;
  m.zero_grad();
  Tensor q = q0.detach().clone().requires_grad_();
  Tensor k = k0.detach().clone().requires_grad_();
  Tensor v = v0.detach().clone().requires_grad_();
  const Tensor out = m(q, k, v, lens, mask);
  manual_seed(4);
  sum(out * uniform(out.shape(), -1, 1, out.dtype())).backward();
  Run r{out.detach(), m.attention_weights(), {q.grad(), k.grad(), v.grad()}};
  for (const Tensor& p : m.parameters())
    r.grads.push_back(p.grad().defined() ? p.grad().clone() : Tensor());
  return r;
}

template <typename Module>
void expect_same_without_weights(Module& m, const Tensor& q, const Tensor& k, const Tensor& v,
                                 const Tensor& lens, const Tensor& mask, double tol) {
  const Run kept = run(m, true, q, k, v, lens, mask), streamed = run(m, false, q, k, v, lens, mask);
  EXPECT_TRUE(kept.weights.defined());
  EXPECT_FALSE(streamed.weights.defined());
  EXPECT_TRUE(all_close(streamed.out, kept.out, tol, tol));
  ASSERT_EQ(streamed.grads.size(), kept.grads.size());
  for (size_t i = 0; i < kept.grads.size(); ++i) {
    SCOPED_TRACE("gradient " + std::to_string(i));
    EXPECT_TRUE(all_close(streamed.grads[i], kept.grads[i], tol, tol));
  }
}

struct Masks {
  std::string name;
  Tensor lens, mask;
};

std::vector<Masks> masks_for(int64_t B, int64_t Tq, int64_t Tk, DType dtype) {
  manual_seed(8);
  return {
      {"none", Tensor(), Tensor()},
      {"lengths [B] with a 0", testing::lens({0, 3, static_cast<double>(Tk)}), Tensor()},
      {"lengths [B, Tq]", (rand({B, Tq}) * static_cast<double>(Tk + 1)).to(kInt64), Tensor()},
      {"keep [B, Tq, Tk]", Tensor(), lt(rand({B, Tq, Tk}), scalar_tensor(0.6))},
      {"additive [Tq, Tk] + lengths", testing::lens({2, 1, static_cast<double>(Tk)}),
       uniform({Tq, Tk}, -2, 2, dtype)},
  };
}

TEST(NeedWeightsTest, DotProductAttentionStreamsTheSameResult) {
  for (const DType dtype : {kFloat64, kFloat32}) {
    for (const nn::MaskedRows rows : {nn::MaskedRows::Uniform, nn::MaskedRows::Zero}) {
      nn::DotProductAttention attention(0.5);
      attention.eval();
      attention.masked_rows = rows;
      manual_seed(2);
      const Tensor q = randn({3, 6, 5}, dtype), k = randn({3, 9, 5}, dtype),
                   v = randn({3, 9, 4}, dtype);
      for (const Masks& m : masks_for(3, 6, 9, dtype)) {
        SCOPED_TRACE(m.name + ", " + dtype_name(dtype));
        expect_same_without_weights(attention, q, k, v, m.lens, m.mask,
                                    dtype == kFloat64 ? 1e-12 : 1e-5);
      }
    }
  }
}

TEST(NeedWeightsTest, MultiHeadAttentionStreamsTheSameResult) {
  for (const DType dtype : {kFloat64, kFloat32}) {
    nn::MultiHeadAttention mha(5, 6, 7, 8, 2, 0.5, /*bias=*/true);
    mha.to(dtype);
    mha.eval();
    manual_seed(2);
    const Tensor q = randn({3, 6, 6}, dtype), k = randn({3, 9, 5}, dtype),
                 v = randn({3, 9, 7}, dtype);
    std::vector<Masks> cases = masks_for(3, 6, 9, dtype);
    cases.push_back({"keep [B, H, Tq, Tk]", Tensor(), lt(rand({3, 2, 6, 9}), scalar_tensor(0.6))});
    for (const Masks& m : cases) {
      SCOPED_TRACE(m.name + ", " + dtype_name(dtype));
      expect_same_without_weights(mha, q, k, v, m.lens, m.mask, dtype == kFloat64 ? 1e-12 : 1e-5);
    }
  }
}

TEST(NeedWeightsTest, DropoutInTrainingKeepsTheWeights) {
  nn::DotProductAttention attention(0.5);
  attention.need_weights = false;
  const Tensor q = randn({2, 3, 4}), k = randn({2, 5, 4}), v = randn({2, 5, 4});
  attention(q, k, v);
  EXPECT_TRUE(attention.attention_weights().defined());  // training: dropout needs them
  attention.eval();
  attention(q, k, v);
  EXPECT_FALSE(attention.attention_weights().defined());
}

TEST(NeedWeightsTest, BadInputStillNamesTheModule) {
  nn::DotProductAttention attention;
  attention.need_weights = false;
  const Tensor q = zeros({2, 3, 4}), k = zeros({2, 5, 4}), v = zeros({2, 5, 4});
  EXPECT_TRUE(testing::throws_error(
      [&] {
        attention(q, k, v, testing::lens({1, 6}));
      },
      {"DotProductAttention", "valid length 6"}));
  EXPECT_TRUE(testing::throws_error(
      [&] {
        attention(q, k, v, Tensor(), ones({3, 4}, kBool));
      },
      {"DotProductAttention", "[3, 4]", "[2, 3, 5]"}));
}

}  // namespace
}  // namespace ag
