// The member forms of the ops (x.sum(), x.matmul(w), ...): each gives exactly
// what its free function gives (values bit for bit, shape, dtype, node name)
// and the same gradients, and chains read left to right.
#include "test_util.h"

namespace ag {
namespace {

using testing::leaf64;
using testing::throws_error;

// Same values (bit for bit, compared as doubles), shape, dtype and node.
::testing::AssertionResult same(const Tensor& member, const Tensor& free) {
  if (member.shape() != free.shape())
    return ::testing::AssertionFailure()
           << "shapes " << shape_str(member.shape()) << " vs " << shape_str(free.shape());
  if (member.dtype() != free.dtype())
    return ::testing::AssertionFailure()
           << "dtypes " << dtype_name(member.dtype()) << " vs " << dtype_name(free.dtype());
  if (member.to_vector() != free.to_vector())
    return ::testing::AssertionFailure() << "values " << member << " vs " << free;
  if (member.grad_fn_name() != free.grad_fn_name())
    return ::testing::AssertionFailure()
           << "nodes " << member.grad_fn_name() << " vs " << free.grad_fn_name();
  return ::testing::AssertionSuccess();
}

TEST(TensorMethodsTest, ElementwiseAgreeWithTheFreeFunctions) {
  manual_seed(1);
  const Tensor a = leaf64({2, 3}), b = leaf64({3});  // b broadcasts
  const Tensor pos = leaf64({2, 3}, 0.5, 2.0);
  EXPECT_TRUE(same(a.add(b), add(a, b)));
  EXPECT_TRUE(same(a.sub(b), sub(a, b)));
  EXPECT_TRUE(same(a.mul(b), mul(a, b)));
  EXPECT_TRUE(same(a.div(pos), div(a, pos)));
  EXPECT_TRUE(same(pos.pow(1.5), pow(pos, 1.5)));
  EXPECT_TRUE(same(pos.pow(b), pow(pos, b)));
  EXPECT_TRUE(same(a.neg(), neg(a)));
  EXPECT_TRUE(same(a.exp(), exp(a)));
  EXPECT_TRUE(same(pos.log(), log(pos)));
  EXPECT_TRUE(same(a.tanh(), tanh(a)));
  EXPECT_TRUE(same(a.sigmoid(), sigmoid(a)));
  EXPECT_TRUE(same(a.relu(), relu(a)));
  EXPECT_TRUE(same(pos.sqrt(), sqrt(pos)));
  EXPECT_TRUE(same(a.abs(), abs(a)));
}

TEST(TensorMethodsTest, ReductionsAgreeWithTheFreeFunctions) {
  manual_seed(2);
  const Tensor x = leaf64({2, 3, 4});
  EXPECT_TRUE(same(x.sum(), sum(x)));
  EXPECT_TRUE(same(x.sum(1), sum(x, 1)));
  EXPECT_TRUE(same(x.sum(-1, true), sum(x, -1, true)));
  EXPECT_TRUE(same(x.sum({0, 2}), sum(x, {0, 2})));
  EXPECT_TRUE(same(x.sum({0, 2}, true), sum(x, {0, 2}, true)));
  EXPECT_TRUE(same(x.mean(), mean(x)));
  EXPECT_TRUE(same(x.mean(2), mean(x, 2)));
  EXPECT_TRUE(same(x.mean(0, true), mean(x, 0, true)));
  EXPECT_TRUE(same(x.mean({0, 1}), mean(x, {0, 1})));
  EXPECT_TRUE(same(x.mean({0, 1}, true), mean(x, {0, 1}, true)));
  EXPECT_TRUE(same(x.max(), max(x)));
  EXPECT_TRUE(same(x.max(1), max(x, 1)));
  EXPECT_TRUE(same(x.max(1, true), max(x, 1, true)));
  EXPECT_TRUE(same(x.argmax(2), argmax(x, 2)));
  EXPECT_TRUE(same(x.argmax(2, true), argmax(x, 2, true)));
}

TEST(TensorMethodsTest, ShapeOpsAgreeWithTheFreeFunctions) {
  manual_seed(3);
  const Tensor x = leaf64({2, 3, 4});
  EXPECT_TRUE(same(x.reshape({6, -1}), reshape(x, {6, -1})));
  EXPECT_TRUE(same(x.view({4, 6}), view(x, {4, 6})));
  EXPECT_TRUE(same(x.flatten(), flatten(x)));
  EXPECT_TRUE(same(x.flatten(1), flatten(x, 1)));
  EXPECT_TRUE(same(x.transpose(0, 2), transpose(x, 0, 2)));
  EXPECT_TRUE(same(x.permute({2, 0, 1}), permute(x, {2, 0, 1})));
  EXPECT_TRUE(same(x.unsqueeze(1), unsqueeze(x, 1)));
  const Tensor y = leaf64({2, 1, 4});
  EXPECT_TRUE(same(y.squeeze(), squeeze(y)));
  EXPECT_TRUE(same(y.squeeze(1), squeeze(y, 1)));
  EXPECT_TRUE(same(y.expand({2, 3, -1}), expand(y, {2, 3, -1})));
  // Views stay views: the member shares the storage, as the free function does.
  EXPECT_EQ(x.transpose(0, 1).impl()->storage(), x.impl()->storage());
}

TEST(TensorMethodsTest, IndexingMatmulAndSoftmaxAgreeWithTheFreeFunctions) {
  manual_seed(4);
  const Tensor x = leaf64({2, 3, 4}), w = leaf64({2, 4, 5}), m = leaf64({4, 5});
  const Tensor mask = testing::bools({1, 0, 0, 1}, {4});
  const Tensor index = testing::lens({2, 0});
  EXPECT_TRUE(same(x.masked_fill(mask, -1e6), masked_fill(x, mask, -1e6)));
  EXPECT_TRUE(same(x.narrow(2, 1, 2), narrow(x, 2, 1, 2)));
  EXPECT_TRUE(same(x.index_select(1, index), index_select(x, 1, index)));
  EXPECT_TRUE(same(x.matmul(w), matmul(x, w)));
  EXPECT_TRUE(same(x.matmul(m), matmul(x, m)));
  EXPECT_TRUE(same(x.bmm(w), bmm(x, w)));
  EXPECT_TRUE(same(x.narrow(0, 0, 1).squeeze(0).mm(m), mm(squeeze(narrow(x, 0, 0, 1), 0), m)));
  EXPECT_TRUE(same(x.softmax(-1), softmax(x, -1)));
  EXPECT_TRUE(same(x.log_softmax(1), log_softmax(x, 1)));
}

TEST(TensorMethodsTest, ChainsGiveTheSameGradientsAsNestedCalls) {
  // Scaled dot-product attention, left to right and inside out.
  manual_seed(5);
  const Tensor q0 = leaf64({2, 3, 4}), k0 = leaf64({2, 5, 4}), v0 = leaf64({2, 5, 2});
  const Tensor padding = testing::bools({0, 0, 0, 1, 1}, {5});
  auto grads_of = [&](bool members) {
    Tensor q = q0.detach().clone().requires_grad_(), k = k0.detach().clone().requires_grad_(),
           v = v0.detach().clone().requires_grad_();
    const Tensor loss =
        members ? q.matmul(k.transpose(1, 2))
                      .div(scalar_tensor(2.0, kFloat64))
                      .masked_fill(padding, -1e6)
                      .softmax(-1)
                      .bmm(v)
                      .tanh()
                      .mean({0, 1})
                      .sum()
                : sum(mean(tanh(bmm(softmax(masked_fill(div(matmul(q, transpose(k, 1, 2)),
                                                            scalar_tensor(2.0, kFloat64)),
                                                        padding, -1e6),
                                            -1),
                                    v)),
                           {0, 1}));
    loss.backward();
    return std::vector<Tensor>{loss, q.grad(), k.grad(), v.grad()};
  };
  const std::vector<Tensor> chained = grads_of(true), nested = grads_of(false);
  for (size_t i = 0; i < chained.size(); ++i) EXPECT_TRUE(same(chained[i], nested[i])) << i;
}

TEST(TensorMethodsTest, ErrorsAreTheFreeFunctions) {
  const Tensor x = ones({2, 3});
  EXPECT_TRUE(throws_error([&] { x.transpose(0, 2); }, {"transpose", "dim 2", "[2, 3]"}));
  EXPECT_TRUE(throws_error([&] { x.matmul(ones({2, 3})); }, {"matmul", "[2, 3]"}));
  EXPECT_TRUE(throws_error([&] { x.mean({0, 5}); }, {"mean", "dim 5"}));
  EXPECT_TRUE(throws_error([] { Tensor().sum(); }, {"sum", "undefined"}));
}

}  // namespace
}  // namespace ag
