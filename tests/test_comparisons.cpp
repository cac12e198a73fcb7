// The comparison operators (< <= > >= == !=, tensor or number on either
// side) and & | ~ on bool tensors, with their member forms. Expected values
// were printed by PyTorch 1.13 (/usr/bin/python3) for the same inputs; each
// test says where attograd deliberately differs.
#include <cmath>
#include <limits>

#include "test_util.h"

namespace ag {
namespace {

using testing::bools;
using testing::lens;
using testing::throws_error;

using Values = std::vector<double>;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// x [2, 3] against y [3] (broadcast over rows); NaN in both.
Tensor x23() {
  return tensor({0.25, 0.5, kNaN, 1.0, -2.0, 0.5}, {2, 3});
}
Tensor y3() {
  return tensor({0.5, 0.5, kNaN}, {3});
}

TEST(ComparisonTest, TensorOperatorsBroadcastLikePyTorch) {
  // torch: getattr(x, op)(y).int().flatten().tolist()
  const Tensor x = x23(), y = y3();
  EXPECT_EQ((x == y).to_vector(), (Values{0, 1, 0, 0, 0, 0}));
  EXPECT_EQ((x != y).to_vector(), (Values{1, 0, 1, 1, 1, 1}));
  EXPECT_EQ((x < y).to_vector(), (Values{1, 0, 0, 0, 1, 0}));
  EXPECT_EQ((x <= y).to_vector(), (Values{1, 1, 0, 0, 1, 0}));
  EXPECT_EQ((x > y).to_vector(), (Values{0, 0, 0, 1, 0, 0}));
  EXPECT_EQ((x >= y).to_vector(), (Values{0, 1, 0, 1, 0, 0}));
  const Tensor r = x < y;
  EXPECT_EQ(r.dtype(), kBool);
  EXPECT_EQ(r.shape(), (Shape{2, 3}));
  // The other way round broadcasts the same way.
  EXPECT_EQ((y > x).to_vector(), (x < y).to_vector());
}

TEST(ComparisonTest, NumberOnEitherSide) {
  // torch: getattr(x, op)(0.5), and 0.5 < x, 0.5 >= x
  const Tensor x = x23();
  EXPECT_EQ((x == 0.5).to_vector(), (Values{0, 1, 0, 0, 0, 1}));
  EXPECT_EQ((x != 0.5).to_vector(), (Values{1, 0, 1, 1, 1, 0}));
  EXPECT_EQ((x < 0.5).to_vector(), (Values{1, 0, 0, 0, 1, 0}));
  EXPECT_EQ((x <= 0.5).to_vector(), (Values{1, 1, 0, 0, 1, 1}));
  EXPECT_EQ((x > 0.5).to_vector(), (Values{0, 0, 0, 1, 0, 0}));
  EXPECT_EQ((x >= 0.5).to_vector(), (Values{0, 1, 0, 1, 0, 1}));
  EXPECT_EQ((0.5 < x).to_vector(), (Values{0, 0, 0, 1, 0, 0}));
  EXPECT_EQ((0.5 >= x).to_vector(), (Values{1, 1, 0, 0, 1, 1}));
  // Each number-on-the-left form is its mirror image.
  EXPECT_EQ((0.5 == x).to_vector(), (x == 0.5).to_vector());
  EXPECT_EQ((0.5 != x).to_vector(), (x != 0.5).to_vector());
  EXPECT_EQ((0.5 <= x).to_vector(), (x >= 0.5).to_vector());
  EXPECT_EQ((0.5 > x).to_vector(), (x < 0.5).to_vector());
  // An int literal works as well as a double.
  EXPECT_EQ((x > 0).to_vector(), (Values{1, 1, 0, 1, 0, 1}));
}

TEST(ComparisonTest, NaNIsUnequalToEverything) {
  // torch: (x == nan).any() False, (x != nan).all() True, also for int64.
  const Tensor x = x23();
  EXPECT_EQ((x == kNaN).to_vector(), (Values{0, 0, 0, 0, 0, 0}));
  EXPECT_EQ((x != kNaN).to_vector(), (Values{1, 1, 1, 1, 1, 1}));
  EXPECT_EQ((x <= kNaN).to_vector(), (Values{0, 0, 0, 0, 0, 0}));
  const Tensor nan = tensor({kNaN}, {1}, kFloat64);
  EXPECT_EQ((nan != nan).to_vector(), (Values{1}));
  EXPECT_EQ((nan == nan).to_vector(), (Values{0}));
  const Tensor l = lens({0, 1, 2, 3});
  EXPECT_EQ((l != kNaN).to_vector(), (Values{1, 1, 1, 1}));
  EXPECT_EQ((l < kNaN).to_vector(), (Values{0, 0, 0, 0}));
  EXPECT_EQ((kNaN >= l).to_vector(), (Values{0, 0, 0, 0}));
}

TEST(ComparisonTest, FloatingTensorsCompareInTheirOwnDtype) {
  // torch: tensor([0.1], float32) == 0.1 is True: the number is rounded to
  // the tensor's dtype, as the arithmetic operators do.
  EXPECT_EQ((tensor({0.1}, {1}, kFloat32) == 0.1).to_vector(), (Values{1}));
  EXPECT_EQ((tensor({0.1}, {1}, kFloat64) == 0.1).to_vector(), (Values{1}));
  // A float64 tensor is not rounded to float32.
  EXPECT_EQ((tensor({0.1}, {1}, kFloat64) == static_cast<double>(0.1f)).to_vector(), (Values{0}));
  // Numbers beyond float32's range stay above (below) every finite float32.
  const Tensor big = tensor({3e38, -3e38}, {2}, kFloat32);
  EXPECT_EQ((big < 1e300).to_vector(), (Values{1, 1}));
  EXPECT_EQ((big > -1e300).to_vector(), (Values{1, 1}));
  EXPECT_EQ((big == 1e300).to_vector(), (Values{0, 0}));
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ((tensor({inf, 1.0}, {2}) == inf).to_vector(), (Values{1, 0}));
}

TEST(ComparisonTest, Int64AndBoolTensors) {
  // torch: lens < 2.5, lens == 2, lens >= 2.0, lens > -0.5
  const Tensor l = lens({0, 1, 2, 3});
  EXPECT_EQ((l < 2.5).to_vector(), (Values{1, 1, 1, 0}));
  EXPECT_EQ((l == 2).to_vector(), (Values{0, 0, 1, 0}));
  EXPECT_EQ((l >= 2.0).to_vector(), (Values{0, 0, 1, 1}));
  EXPECT_EQ((l > -0.5).to_vector(), (Values{1, 1, 1, 1}));
  EXPECT_EQ((l <= -0.5).to_vector(), (Values{0, 0, 0, 0}));
  EXPECT_EQ((l < lens({1, 1, 1, 1})).to_vector(), (Values{1, 0, 0, 0}));
  // torch: b == 1, b < 0.5, b == [True, True], b < [True, True]
  const Tensor b = bools({1, 0}, {2});
  EXPECT_EQ((b == 1).to_vector(), (Values{1, 0}));
  EXPECT_EQ((b < 0.5).to_vector(), (Values{0, 1}));
  EXPECT_EQ((b == bools({1, 1}, {2})).to_vector(), (Values{1, 0}));
  EXPECT_EQ((b < bools({1, 1}, {2})).to_vector(), (Values{0, 1}));
  // The results are bool whatever the operands.
  EXPECT_EQ((l < 2.5).dtype(), kBool);
  EXPECT_EQ((b == 1).dtype(), kBool);
}

TEST(ComparisonTest, Int64ComparesExactlyWithLargeNumbers) {
  // attograd compares int64 with a number exactly. (PyTorch rounds both to
  // float32 for a float number, so there tensor([2**53 + 1]) == 2.0**53 is True.)
  const Tensor two53 = tensor({0x1p53}, {1}, kInt64);
  const Tensor two53_plus_1 = two53 + tensor({1}, {1}, kInt64);
  EXPECT_EQ((two53_plus_1 == 0x1p53).to_vector(), (Values{0}));
  EXPECT_EQ((two53_plus_1 > 0x1p53).to_vector(), (Values{1}));
  EXPECT_EQ((two53 == 0x1p53).to_vector(), (Values{1}));
  // The ends of int64's range, and beyond them.
  const Tensor ends = tensor({-0x1p63, 0}, {2}, kInt64);  // INT64_MIN, 0
  EXPECT_EQ((ends == -0x1p63).to_vector(), (Values{1, 0}));
  EXPECT_EQ((ends > -1e300).to_vector(), (Values{1, 1}));
  EXPECT_EQ((ends < 0x1p63).to_vector(), (Values{1, 1}));  // 2^63 is above every int64
  EXPECT_EQ((ends < 1e300).to_vector(), (Values{1, 1}));
  EXPECT_EQ((ends >= -0.5).to_vector(), (Values{0, 1}));
}

TEST(ComparisonTest, LogicOperatorsOnBoolTensors) {
  // torch: m [2, 1] & k [3], m | k, ~k
  const Tensor m = bools({1, 0}, {2, 1});
  const Tensor k = bools({1, 0, 1}, {3});
  EXPECT_EQ((m & k).to_vector(), (Values{1, 0, 1, 0, 0, 0}));
  EXPECT_EQ((m | k).to_vector(), (Values{1, 1, 1, 1, 0, 1}));
  EXPECT_EQ((~k).to_vector(), (Values{0, 1, 0}));
  EXPECT_EQ((m & k).shape(), (Shape{2, 3}));
  // A mask in one line, as a PyTorch user writes it.
  const Tensor x = x23();
  EXPECT_EQ(((x > 0) & ~(x >= 1.0)).to_vector(), (Values{1, 1, 0, 0, 0, 1}));
  EXPECT_EQ(((x < -1.0) | (x == 1.0)).to_vector(), (Values{0, 0, 0, 1, 1, 0}));
}

TEST(ComparisonTest, MemberFormsAreTheFreeFunctions) {
  const Tensor x = x23(), y = y3();
  EXPECT_EQ(x.eq(y).to_vector(), eq(x, y).to_vector());
  EXPECT_EQ(x.ne(y).to_vector(), ne(x, y).to_vector());
  EXPECT_EQ(x.lt(y).to_vector(), lt(x, y).to_vector());
  EXPECT_EQ(x.le(y).to_vector(), le(x, y).to_vector());
  EXPECT_EQ(x.gt(y).to_vector(), gt(x, y).to_vector());
  EXPECT_EQ(x.ge(y).to_vector(), ge(x, y).to_vector());
  EXPECT_EQ(x.eq(0.5).to_vector(), (x == 0.5).to_vector());
  EXPECT_EQ(x.ne(0.5).to_vector(), (x != 0.5).to_vector());
  EXPECT_EQ(x.lt(0.5).to_vector(), (x < 0.5).to_vector());
  EXPECT_EQ(x.le(0.5).to_vector(), (x <= 0.5).to_vector());
  EXPECT_EQ(x.gt(0.5).to_vector(), (x > 0.5).to_vector());
  EXPECT_EQ(x.ge(0.5).to_vector(), (x >= 0.5).to_vector());
  const Tensor m = bools({1, 0}, {2, 1}), k = bools({1, 0, 1}, {3});
  EXPECT_EQ(m.logical_and(k).to_vector(), (m & k).to_vector());
  EXPECT_EQ(m.logical_or(k).to_vector(), (m | k).to_vector());
  EXPECT_EQ(k.logical_not().to_vector(), (~k).to_vector());
}

TEST(ComparisonTest, EqualityIsElementwiseNotIdentity) {
  // == compares values, as in PyTorch; is_same compares handles.
  const Tensor a = tensor({1, 2}, {2});
  const Tensor b = tensor({1, 2}, {2});
  EXPECT_EQ((a == b).to_vector(), (Values{1, 1}));
  EXPECT_FALSE(a.is_same(b));
  EXPECT_TRUE(a.is_same(a));
}

TEST(ComparisonTest, ResultsRecordNoGraph) {
  Tensor x = tensor({0.5, 1.5}, {2}, kFloat64).requires_grad_();
  const Tensor below = x < 1.0;
  EXPECT_FALSE(below.requires_grad());
  EXPECT_TRUE(below.is_leaf());
  EXPECT_FALSE((x == x).requires_grad());
  // A mask made by a comparison steers the gradient of where().
  sum(where(below, x * 2.0, x * 3.0)).backward();
  EXPECT_TRUE(testing::all_close(x.grad(), {2.0, 3.0}));
}

TEST(ComparisonTest, BadInputThrows) {
  // Shapes that do not broadcast: the op and both shapes are named (torch
  // says "The size of tensor a (3) must match the size of tensor b (4)").
  EXPECT_TRUE(throws_error([] { (void)(ones({2, 3}) < ones({4})); }, {"lt", "[2, 3]", "[4]"}));
  EXPECT_TRUE(throws_error([] { (void)(ones({2, 3}) == ones({2})); }, {"eq", "[2, 3]", "[2]"}));
  EXPECT_TRUE(throws_error([] { (void)(ones({3}) != ones({2})); }, {"ne", "[3]", "[2]"}));
  // No silent promotion between dtypes.
  EXPECT_TRUE(
      throws_error([] { (void)(ones({2}) >= ones({2}, kInt64)); }, {"ge", "float32", "int64"}));
  // & | ~ on anything but bool (torch: "bitwise_and_cpu" not implemented for 'Float').
  EXPECT_TRUE(throws_error(
      [] {
        (void)(ones({2, 3}) & bools({1, 0, 1}, {3}));
      },
      {"logical_and", "bool", "float32 [2, 3]"}));
  EXPECT_TRUE(throws_error([] { (void)(bools({1}, {1}) | lens({1})); },
                           {"logical_or", "bool", "int64 [1]"}));
  EXPECT_TRUE(throws_error([] { (void)~ones({2}); }, {"logical_not", "float32 [2]"}));
  EXPECT_TRUE(throws_error(
      [] {
        (void)(bools({1, 0}, {2}) & bools({1, 0, 1}, {3}));
      },
      {"logical_and", "[2]", "[3]"}));
  // Undefined operands.
  EXPECT_TRUE(throws_error([] { (void)(Tensor() < 0.5); }, {"lt", "undefined"}));
  EXPECT_TRUE(throws_error([] { (void)(0.5 == Tensor()); }, {"eq", "undefined"}));
  EXPECT_TRUE(throws_error([] { (void)(Tensor() & bools({1}, {1})); }, {"logical_and", "none"}));
}

}  // namespace
}  // namespace ag
