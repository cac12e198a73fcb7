// The Tensor handle: creation, dtypes and conversion, reading values, strides
// and views, the random generator, and PyTorch-style printing.
#include <cmath>
#include <limits>
#include <sstream>
#include <type_traits>
#include <utility>

#include "test_util.h"

namespace ag {
namespace {

using testing::all_close;
using testing::throws_error;

// ---- creation -----------------------------------------------------------------------

TEST(TensorTest, TensorFromValuesAndShape) {
  Tensor t = tensor({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(t.shape(), (Shape{2, 3}));
  EXPECT_EQ(t.dim(), 2);
  EXPECT_EQ(t.numel(), 6);
  EXPECT_EQ(t.size(0), 2);
  EXPECT_EQ(t.size(-1), 3);
  EXPECT_EQ(t.dtype(), kFloat32);
  EXPECT_EQ(t.to_vector(), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  // No shape: a 1-D tensor of the values.
  EXPECT_EQ(tensor({7, 8, 9}).shape(), (Shape{3}));
  EXPECT_TRUE(throws_error([] { tensor({1, 2, 3, 4, 5}, {2, 2}); }, {"tensor", "5", "[2, 2]"}));
  EXPECT_TRUE(throws_error([&] { t.size(2); }, {"size", "dim 2", "[2, 3]"}));
}

TEST(TensorTest, ScalarTensorsAreZeroDimensional) {
  Tensor s = scalar_tensor(2.5);
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.shape(), Shape{});
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(s.item(), 2.5);
  EXPECT_EQ(scalar_tensor(3, kInt64).item(), 3.0);
  EXPECT_EQ(zeros({}).dim(), 0);
}

TEST(TensorTest, FilledCreationFunctions) {
  EXPECT_EQ(zeros({2, 2}).to_vector(), (std::vector<double>{0, 0, 0, 0}));
  EXPECT_EQ(ones({3}, kInt64).to_vector(), (std::vector<double>{1, 1, 1}));
  EXPECT_EQ(ones({3}, kInt64).dtype(), kInt64);
  EXPECT_EQ(full({2}, -1.5, kFloat64).to_vector(), (std::vector<double>{-1.5, -1.5}));
  // empty() promises a shape and a dtype, not values (it is uninitialised).
  const Tensor e = empty({2, 3}, kInt64);
  EXPECT_EQ(e.shape(), (Shape{2, 3}));
  EXPECT_EQ(e.dtype(), kInt64);
  EXPECT_TRUE(e.is_contiguous());
  Tensor like = zeros_like(ones({2, 1}, kFloat64));
  EXPECT_EQ(like.shape(), (Shape{2, 1}));
  EXPECT_EQ(like.dtype(), kFloat64);
  EXPECT_EQ(ones_like(zeros({2}, kBool)).to_vector(), (std::vector<double>{1, 1}));
  EXPECT_EQ(zeros({0, 3}).numel(), 0);
  EXPECT_TRUE(throws_error([] { zeros({2, -1}); }, {"zeros", "negative", "[2, -1]"}));
}

TEST(TensorTest, Arange) {
  Tensor a = arange(4);
  EXPECT_EQ(a.dtype(), kFloat32);
  EXPECT_EQ(a.to_vector(), (std::vector<double>{0, 1, 2, 3}));
  EXPECT_EQ(arange(3, kInt64).dtype(), kInt64);
  EXPECT_EQ(arange(0).shape(), (Shape{0}));
  EXPECT_TRUE(throws_error([] { arange(-1); }, {"arange", "-1"}));
}

// ---- dtypes and conversion ------------------------------------------------------------

TEST(DTypeTest, NamesSizesAndKinds) {
  EXPECT_STREQ(dtype_name(kFloat32), "float32");
  EXPECT_STREQ(dtype_name(kFloat64), "float64");
  EXPECT_STREQ(dtype_name(kInt64), "int64");
  EXPECT_STREQ(dtype_name(kBool), "bool");
  EXPECT_EQ(dtype_size(kFloat32), 4u);
  EXPECT_EQ(dtype_size(kFloat64), 8u);
  EXPECT_EQ(dtype_size(kInt64), 8u);
  EXPECT_EQ(dtype_size(kBool), 1u);
  EXPECT_TRUE(is_floating(kFloat32));
  EXPECT_TRUE(is_floating(kFloat64));
  EXPECT_FALSE(is_floating(kInt64));
  EXPECT_FALSE(is_floating(kBool));
}

TEST(DTypeTest, ValuesAreStoredInTheTensorsDtype) {
  // float32 rounds 0.1; int64 truncates toward zero; bool is "nonzero".
  EXPECT_EQ(tensor({0.1}).item(), static_cast<double>(0.1f));
  EXPECT_EQ(tensor({0.1}, {1}, kFloat64).item(), 0.1);
  EXPECT_EQ(tensor({1.7, -1.7}, {2}, kInt64).to_vector(), (std::vector<double>{1, -1}));
  EXPECT_EQ(tensor({2, 0, -0.5}, {3}, kBool).to_vector(), (std::vector<double>{1, 0, 1}));
  EXPECT_TRUE(
      throws_error([] { tensor({1}).data_ptr<double>(); }, {"data_ptr", "float32", "float64"}));
}

TEST(DTypeTest, ToConvertsBetweenDtypes) {
  Tensor x = tensor({-1.5, 0, 2.25}, {3});
  Tensor d = x.to(kFloat64);
  EXPECT_EQ(d.dtype(), kFloat64);
  EXPECT_EQ(d.to_vector(), (std::vector<double>{-1.5, 0, 2.25}));
  EXPECT_EQ(x.to(kInt64).to_vector(), (std::vector<double>{-1, 0, 2}));
  EXPECT_EQ(x.to(kBool).to_vector(), (std::vector<double>{1, 0, 1}));
  EXPECT_EQ(tensor({1, 0}, {2}, kBool).to(kFloat32).to_vector(), (std::vector<double>{1, 0}));
  EXPECT_TRUE(x.to(kFloat32).is_same(x));  // same dtype: the tensor itself
  // Reads strided views in row-major order.
  Tensor t = transpose(tensor({1, 2, 3, 4, 5, 6}, {2, 3}), 0, 1).to(kInt64);
  EXPECT_EQ(t.to_vector(), (std::vector<double>{1, 4, 2, 5, 3, 6}));
}

TEST(DTypeTest, ToIsDifferentiableBetweenFloatTypes) {
  Tensor x = tensor({1, 2}, {2}, kFloat64).requires_grad_();
  Tensor y = x.to(kFloat32);
  EXPECT_EQ(y.grad_fn_name(), "ToCopyBackward");
  sum(y * 3.0).backward();
  EXPECT_EQ(x.grad().dtype(), kFloat64);
  EXPECT_TRUE(all_close(x.grad(), {3, 3}));
  // Integer results carry no gradient.
  EXPECT_FALSE(x.to(kInt64).requires_grad());
}

// ---- reading values -----------------------------------------------------------------

TEST(TensorTest, ItemAndToVector) {
  EXPECT_EQ(tensor({4}, {1, 1}).item(), 4.0);
  EXPECT_EQ(tensor({1, 0}, {2}, kBool).to_vector(), (std::vector<double>{1, 0}));
  EXPECT_TRUE(throws_error([] { tensor({1, 2}).item(); }, {"item", "[2]"}));
  EXPECT_TRUE(throws_error([] { zeros({0}).item(); }, {"item", "[0]"}));
}

TEST(TensorTest, UndefinedTensorIsNone) {
  Tensor none;
  EXPECT_FALSE(none.defined());
  EXPECT_TRUE(throws_error([&] { none.shape(); }, {"undefined"}));
  EXPECT_TRUE(throws_error([&] { none.dtype(); }, {"undefined"}));
  EXPECT_EQ(to_string(none), "None");
  EXPECT_FALSE(Tensor(ones({1})).grad().defined());
}

TEST(TensorTest, NamesAreLabels) {
  Tensor t = ones({2});
  EXPECT_EQ(t.name(), "");
  t.set_name("scores");
  EXPECT_EQ(t.name(), "scores");
  EXPECT_EQ(t.detach().name(), "scores");
}

// ---- TensorImpl is read-only outside the library (issue 15) ---------------------------
// impl() hands out a pointer to const, the fields are read through const
// accessors, and users can neither build nor copy a TensorImpl: the
// invariants it keeps (a view inside its storage, grad matching the shape)
// are written only by the library, through core/src/tensor_impl_access.h.
static_assert(std::is_same_v<decltype(std::declval<const Tensor&>().impl()), const TensorImpl*>);
static_assert(
    !std::is_constructible_v<TensorImpl, std::shared_ptr<Storage>, int64_t, Shape, Shape, DType>);
static_assert(!std::is_copy_constructible_v<TensorImpl> && !std::is_copy_assignable_v<TensorImpl>);
static_assert(std::is_same_v<decltype(std::declval<const TensorImpl&>().shape()), const Shape&>);

TEST(TensorImplTest, AccessorsReadWhatTheTensorHolds) {
  Tensor x = arange(6, kFloat64).reshape({2, 3}).transpose(0, 1);
  x.set_name("x").requires_grad_();
  const TensorImpl& impl = *x.impl();
  EXPECT_EQ(impl.shape(), (Shape{3, 2}));
  EXPECT_EQ(impl.strides(), (Shape{1, 3}));
  EXPECT_EQ(impl.offset(), 0);
  EXPECT_EQ(impl.dtype(), kFloat64);
  EXPECT_EQ(impl.name(), "x");
  EXPECT_TRUE(impl.requires_grad());
  EXPECT_EQ(impl.grad_fn(), nullptr);
  EXPECT_EQ(impl.storage(), x.detach().impl()->storage());  // detach shares the bytes
  const Tensor y = x.mul(x);
  EXPECT_EQ(y.impl()->grad_fn(), y.grad_fn());
  EXPECT_TRUE(y.impl()->requires_grad());
}

// ---- strides, contiguity, views ------------------------------------------------------

TEST(StridesTest, ContiguousTensorsAreRowMajor) {
  Tensor t = zeros({2, 3, 4});
  EXPECT_EQ(t.strides(), (Shape{12, 4, 1}));
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(contiguous_strides({5}), (Shape{1}));
  EXPECT_EQ(contiguous_strides({}), Shape{});
  EXPECT_EQ(shape_numel({2, 3, 4}), 24);
  EXPECT_EQ(shape_numel({}), 1);
  EXPECT_TRUE(t.contiguous().is_same(t));
}

TEST(StridesTest, ViewsShareStorageAndChangeStrides) {
  Tensor x = reshape(arange(24), {2, 3, 4});
  Tensor t = transpose(x, 0, 2);
  EXPECT_EQ(t.shape(), (Shape{4, 3, 2}));
  EXPECT_EQ(t.strides(), (Shape{1, 4, 12}));
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_EQ(t.data_ptr<float>(), x.data_ptr<float>());
  Tensor p = permute(x, {1, 2, 0});
  EXPECT_EQ(p.strides(), (Shape{4, 1, 12}));
  Tensor u = unsqueeze(x, 1);
  EXPECT_EQ(u.shape(), (Shape{2, 1, 3, 4}));
  EXPECT_TRUE(u.is_contiguous());
  EXPECT_EQ(u.data_ptr<float>(), x.data_ptr<float>());
  Tensor e = expand(tensor({1, 2, 3}, {3, 1}), {3, 4});
  EXPECT_EQ(e.strides(), (Shape{1, 0}));
  EXPECT_FALSE(e.is_contiguous());
  EXPECT_EQ(e.to_vector(), (std::vector<double>{1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3}));
  // contiguous() of a view copies it into row-major order.
  Tensor c = t.contiguous();
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_NE(c.data_ptr<float>(), x.data_ptr<float>());
  EXPECT_EQ(c.strides(), (Shape{6, 2, 1}));
  EXPECT_EQ(c.to_vector(), t.to_vector());
  // Rows contiguous but not each after the other: copied row by row.
  EXPECT_EQ(permute(x, {1, 0, 2}).contiguous().to_vector(),
            (std::vector<double>{0,  1,  2,  3,  12, 13, 14, 15, 4,  5,  6,  7,
                                 16, 17, 18, 19, 8,  9,  10, 11, 20, 21, 22, 23}));
  // The detached copy shares storage; clone does not.
  EXPECT_EQ(x.detach().data_ptr<float>(), x.data_ptr<float>());
  EXPECT_NE(x.clone().data_ptr<float>(), x.data_ptr<float>());
}

TEST(StridesTest, SizeOneDimsDoNotBreakContiguity) {
  // [3, 1] transposed to [1, 3] has strides [1, 1]: still row-major in memory.
  Tensor t = transpose(zeros({3, 1}), 0, 1);
  EXPECT_TRUE(t.is_contiguous());
}

TEST(StridesTest, NormalizeDimAndBroadcastShapes) {
  EXPECT_EQ(normalize_dim(-1, {2, 3}, "op"), 1);
  EXPECT_EQ(normalize_dim(-2, {2, 3}, "op"), 0);
  EXPECT_EQ(normalize_dim(0, {}, "op"), 0);
  EXPECT_TRUE(throws_error(
      [] {
        normalize_dim(2, {2, 3}, "myop");
      },
      {"myop", "dim 2", "2-D", "[2, 3]"}));
  EXPECT_TRUE(throws_error([] { normalize_dim(-3, {2, 3}, "myop"); }, {"myop", "dim -3"}));
  EXPECT_EQ(broadcast_shapes({3, 1}, {4}, "op"), (Shape{3, 4}));
  EXPECT_EQ(broadcast_shapes({2, 1, 4}, {3, 1}, "op"), (Shape{2, 3, 4}));
  EXPECT_EQ(broadcast_shapes({}, {2, 3}, "op"), (Shape{2, 3}));
  EXPECT_TRUE(throws_error(
      [] {
        broadcast_shapes({2, 3}, {4}, "myop");
      },
      {"myop", "[2, 3]", "[4]", "broadcast"}));
}

// ---- random ---------------------------------------------------------------------------

TEST(RandomTest, ManualSeedMakesDrawsReproducible) {
  manual_seed(1234);
  const std::vector<double> a = rand({5}).to_vector(), b = randn({7}).to_vector(),
                            c = uniform({3}, -2, 2, kFloat64).to_vector();
  const uint64_t r = random_u64();
  manual_seed(1234);
  EXPECT_EQ(rand({5}).to_vector(), a);
  EXPECT_EQ(randn({7}).to_vector(), b);
  EXPECT_EQ(uniform({3}, -2, 2, kFloat64).to_vector(), c);
  EXPECT_EQ(random_u64(), r);
  manual_seed(1235);
  EXPECT_NE(rand({5}).to_vector(), a);
}

// get_rng_state / set_rng_state: the draws after a saved state come again
// once it is put back, whatever was drawn in between; the words survive a
// .npz file bit for bit; a tensor that is no state is refused.
TEST(RandomTest, TheGeneratorsStateComesBack) {
  manual_seed(42);
  rand({3});
  const Tensor state = get_rng_state();
  EXPECT_EQ(state.dtype(), kInt64);
  const std::vector<double> a = randn({9}).to_vector();
  const uint64_t r = random_u64();
  manual_seed(7);
  rand({100});
  set_rng_state(parse_npy(serialize_npy(state).data(), serialize_npy(state).size()));
  EXPECT_EQ(randn({9}).to_vector(), a);
  EXPECT_EQ(random_u64(), r);
  // A generator of one's own, the same way.
  std::mt19937_64 mine(3);
  mine();
  const Tensor saved = generator_state(mine);
  const uint64_t next = mine();
  std::mt19937_64 other;
  set_generator_state(other, saved, "test");
  EXPECT_EQ(other(), next);
  EXPECT_TRUE(
      throws_error([&] { set_rng_state(zeros({3}, kInt64)); },
                   {"set_rng_state", "int64 [" + std::to_string(state.numel()) + "]", "[3]"}));
  EXPECT_TRUE(
      throws_error([&] { set_rng_state(zeros(state.shape())); }, {"set_rng_state", "float32"}));
  EXPECT_TRUE(
      throws_error([&] { set_generator_state(other, Tensor(), "mine"); }, {"mine", "none"}));
}

TEST(RandomTest, UniformStaysInRange) {
  manual_seed(7);
  for (double v : rand({1000}).to_vector()) {
    EXPECT_GE(v, 0.0);
    EXPECT_LT(v, 1.0);
  }
  for (double v : uniform({1000}, -3, -1, kFloat64).to_vector()) {
    EXPECT_GE(v, -3.0);
    EXPECT_LT(v, -1.0);
  }
  EXPECT_NEAR(mean(rand({10000}, kFloat64)).item(), 0.5, 0.02);
  EXPECT_EQ(rand({2, 3}).shape(), (Shape{2, 3}));
  EXPECT_EQ(randn({3}, kFloat64).dtype(), kFloat64);
}

TEST(RandomTest, RandnHasZeroMeanAndUnitStd) {
  manual_seed(0);
  const std::vector<double> v = randn({20001}, kFloat64).to_vector();  // odd count on purpose
  double m = 0, sq = 0;
  for (double x : v) m += x;
  m /= static_cast<double>(v.size());
  for (double x : v) sq += (x - m) * (x - m);
  const double std = std::sqrt(sq / static_cast<double>(v.size()));
  EXPECT_NEAR(m, 0.0, 0.03);
  EXPECT_NEAR(std, 1.0, 0.03);
  for (double x : v) EXPECT_TRUE(std::isfinite(x));
}

TEST(RandomTest, SkipDrawsGuardGivesZerosAndLeavesTheGeneratorAlone) {
  manual_seed(42);
  const std::vector<double> next = rand({4}).to_vector();
  manual_seed(42);
  {
    SkipDrawsGuard no_draws;
    EXPECT_EQ(uniform({3}, -1, 1, kFloat64).to_vector(), std::vector<double>(3, 0.0));
    EXPECT_EQ(randn({2, 2}).to_vector(), std::vector<double>(4, 0.0));
    { SkipDrawsGuard nested; }
    EXPECT_EQ(rand({2}).to_vector(), std::vector<double>(2, 0.0));  // the outer one still lives
    EXPECT_TRUE(throws_error([] { uniform({2}, 1, 0); }, {"uniform", "low"}));  // still checked
  }
  EXPECT_EQ(rand({4}).to_vector(), next);  // nothing was drawn
}

TEST(RandomTest, BadArgumentsThrow) {
  EXPECT_TRUE(throws_error([] { rand({2}, kInt64); }, {"rand", "int64"}));
  EXPECT_TRUE(throws_error([] { randn({2}, kBool); }, {"randn", "bool"}));
  EXPECT_TRUE(throws_error([] { uniform({2}, 1, 0); }, {"uniform", "low"}));
}

// ---- printing ---------------------------------------------------------------------------
// Expected strings are what PyTorch prints for the same tensors (PyTorch
// says "dtype=torch.float64" and "MulBackward0"; we say "dtype=float64" and
// "MulBackward").

TEST(PrintTest, FloatsLikePyTorch) {
  EXPECT_EQ(to_string(tensor({2, 3}, {1, 2})), "tensor([[2., 3.]])");
  EXPECT_EQ(to_string(tensor({0.5, 1.25})), "tensor([0.5000, 1.2500])");
  EXPECT_EQ(to_string(tensor({1, -2, 10})), "tensor([ 1., -2., 10.])");
  EXPECT_EQ(to_string(tensor({1.0, -2.5, 10.0, 3.0}, {2, 2})),
            "tensor([[ 1.0000, -2.5000],\n        [10.0000,  3.0000]])");
  EXPECT_EQ(to_string(tensor({0.1})), "tensor([0.1000])");
  EXPECT_EQ(to_string(tensor({0.1234567, -1.5, 2.25, 100.125})),
            "tensor([  0.1235,  -1.5000,   2.2500, 100.1250])");
}

TEST(PrintTest, ScientificNotationWhenMagnitudesSpreadOrAreExtreme) {
  EXPECT_EQ(to_string(tensor({1e-5, 1e3})), "tensor([1.0000e-05, 1.0000e+03])");
  EXPECT_EQ(to_string(tensor({1, 2000})), "tensor([1.0000e+00, 2.0000e+03])");
  EXPECT_EQ(to_string(tensor({1.5, 1e-5}, {2}, kFloat64)),
            "tensor([1.5000e+00, 1.0000e-05], dtype=float64)");
  EXPECT_EQ(to_string(tensor({1e8})), "tensor([100000000.])");
  EXPECT_EQ(to_string(tensor({1e8 + 1}, {1}, kFloat64)), "tensor([1.0000e+08], dtype=float64)");
  EXPECT_EQ(to_string(scalar_tensor(1e-5)), "tensor(1.0000e-05)");
}

TEST(PrintTest, NonFiniteValues) {
  EXPECT_EQ(to_string(tensor({1, INFINITY})), "tensor([1., inf])");
  EXPECT_EQ(to_string(tensor({NAN, 1.5})), "tensor([   nan, 1.5000])");
  EXPECT_EQ(to_string(tensor({INFINITY, -INFINITY})), "tensor([inf, -inf])");
  EXPECT_EQ(to_string(tensor({0, 0})), "tensor([0., 0.])");
  EXPECT_EQ(to_string(tensor({-NAN})), "tensor([nan])");
}

TEST(PrintTest, ZeroDimensionalTensors) {
  EXPECT_EQ(to_string(scalar_tensor(3)), "tensor(3.)");
  EXPECT_EQ(to_string(scalar_tensor(0.5)), "tensor(0.5000)");
  EXPECT_EQ(to_string(scalar_tensor(-0.0)), "tensor(-0.)");
  EXPECT_EQ(to_string(scalar_tensor(7, kInt64)), "tensor(7)");
  EXPECT_EQ(to_string(scalar_tensor(1, kBool)), "tensor(True)");
  EXPECT_EQ(to_string(scalar_tensor(2, kFloat64)), "tensor(2., dtype=float64)");
}

TEST(PrintTest, IntegersAndBools) {
  EXPECT_EQ(to_string(tensor({1, 2, 3}, {3}, kInt64)), "tensor([1, 2, 3])");
  EXPECT_EQ(to_string(tensor({-5, 100}, {2}, kInt64)), "tensor([ -5, 100])");
  Tensor big = zeros({1}, kInt64);
  big.data_ptr<int64_t>()[0] = 4611686018427387905LL;  // 2^62 + 1: no trip through double
  EXPECT_EQ(to_string(big), "tensor([4611686018427387905])");
  EXPECT_EQ(to_string(tensor({1, 0}, {2}, kBool)), "tensor([ True, False])");
  EXPECT_EQ(to_string(tensor({1, 0, 0, 1}, {2, 2}, kBool)),
            "tensor([[ True, False],\n        [False,  True]])");
}

TEST(PrintTest, Float64Suffix) {
  EXPECT_EQ(to_string(tensor({1, 2}, {2}, kFloat64)), "tensor([1., 2.], dtype=float64)");
}

TEST(PrintTest, AutogradSuffixes) {
  Tensor x = tensor({1, 2, 3, 4}, {2, 2}).requires_grad_();
  EXPECT_EQ(to_string(x), "tensor([[1., 2.],\n        [3., 4.]], requires_grad=True)");
  Tensor y = tensor({2, 3}).requires_grad_() * 2.0;
  EXPECT_EQ(to_string(y), "tensor([4., 6.], grad_fn=<MulBackward>)");
  Tensor z = tensor({1, 2}, {2}, kFloat64).requires_grad_() * 0.5;
  EXPECT_EQ(to_string(z), "tensor([0.5000, 1.0000], dtype=float64, grad_fn=<MulBackward>)");
  std::ostringstream os;
  os << y.detach();
  EXPECT_EQ(os.str(), "tensor([4., 6.])");
}

TEST(PrintTest, LongRowsWrapAt80Columns) {
  EXPECT_EQ(to_string(arange(20)),
            "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13.,\n"
            "        14., 15., 16., 17., 18., 19.])");
  EXPECT_EQ(to_string(arange(20, kFloat64).requires_grad_()),
            "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13.,\n"
            "        14., 15., 16., 17., 18., 19.], dtype=float64, requires_grad=True)");
}

TEST(PrintTest, HigherDimensionsGetBlankLines) {
  EXPECT_EQ(to_string(reshape(arange(24), {2, 3, 4})),
            "tensor([[[ 0.,  1.,  2.,  3.],\n"
            "         [ 4.,  5.,  6.,  7.],\n"
            "         [ 8.,  9., 10., 11.]],\n"
            "\n"
            "        [[12., 13., 14., 15.],\n"
            "         [16., 17., 18., 19.],\n"
            "         [20., 21., 22., 23.]]])");
  // A strided view prints in logical (row-major) order.
  EXPECT_EQ(to_string(transpose(tensor({1, 2, 3, 4}, {2, 2}), 0, 1)),
            "tensor([[1., 3.],\n        [2., 4.]])");
}

TEST(PrintTest, MoreThan1000ElementsAreSummarised) {
  // Only the shown edge items decide the format: 0..2 and 1997..1999 span
  // more than 1000, hence scientific notation.
  EXPECT_EQ(to_string(arange(2000)),
            "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n"
            "        1.9990e+03])");
  EXPECT_EQ(to_string(arange(1001, kInt64) - scalar_tensor(500, kInt64)),
            "tensor([-500, -499, -498,  ...,  498,  499,  500])");
  EXPECT_EQ(to_string(arange(1000)).find("..."), std::string::npos);  // at the threshold: all
  EXPECT_EQ(to_string(reshape(arange(2000), {40, 50})),
            "tensor([[0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 4.7000e+01, 4.8000e+01,\n"
            "         4.9000e+01],\n"
            "        [5.0000e+01, 5.1000e+01, 5.2000e+01,  ..., 9.7000e+01, 9.8000e+01,\n"
            "         9.9000e+01],\n"
            "        [1.0000e+02, 1.0100e+02, 1.0200e+02,  ..., 1.4700e+02, 1.4800e+02,\n"
            "         1.4900e+02],\n"
            "        ...,\n"
            "        [1.8500e+03, 1.8510e+03, 1.8520e+03,  ..., 1.8970e+03, 1.8980e+03,\n"
            "         1.8990e+03],\n"
            "        [1.9000e+03, 1.9010e+03, 1.9020e+03,  ..., 1.9470e+03, 1.9480e+03,\n"
            "         1.9490e+03],\n"
            "        [1.9500e+03, 1.9510e+03, 1.9520e+03,  ..., 1.9970e+03, 1.9980e+03,\n"
            "         1.9990e+03]])");
  const std::string cube = to_string(reshape(arange(3000, kInt64), {10, 10, 30}));
  EXPECT_EQ(cube.substr(0, 63), "tensor([[[   0,    1,    2,  ...,   27,   28,   29],\n         [");
  EXPECT_NE(cube.find("  897,  898,  899]],\n\n        ...,\n\n        [[2100, 2101"),
            std::string::npos);
}

TEST(PrintTest, EmptyTensorsSpellOutShapeAndDtype) {
  EXPECT_EQ(to_string(zeros({0})), "tensor([])");
  EXPECT_EQ(to_string(zeros({2, 0})), "tensor([], size=(2, 0))");
  EXPECT_EQ(to_string(zeros({0}, kInt64)), "tensor([], dtype=int64)");
  EXPECT_EQ(to_string(zeros({0, 3}, kBool)), "tensor([], size=(0, 3), dtype=bool)");
  EXPECT_EQ(to_string(zeros({0}, kFloat64)), "tensor([], dtype=float64)");
}

}  // namespace
}  // namespace ag

namespace ag {
namespace {

TEST(TensorConversionTest, NonFiniteOrHugeValuesDoNotBecomeInt64) {
  using testing::throws_error;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(throws_error([&] { tensor({1.0, nan}, {2}).to(kInt64); }, {"to", "nan", "int64"}));
  EXPECT_TRUE(throws_error([] { tensor({1e30}, {1}, kInt64); }, {"tensor", "1e+30", "int64"}));
  EXPECT_TRUE(throws_error([] { full({2}, -INFINITY, kInt64); }, {"full", "-inf", "int64"}));
  EXPECT_EQ(tensor({-2.5, 2.5}, {2}).to(kInt64).to_vector(), (std::vector<double>{-2, 2}));
  EXPECT_EQ(tensor({0.0, 0.5, std::nan("")}, {3}).to(kBool).to_vector(),
            (std::vector<double>{0, 1, 1}));
}

}  // namespace
}  // namespace ag

namespace ag {
namespace {

using testing::throws_error;

// The two dtype checks are worded once (check_floating, check_same_dtype in
// tensor.h); every op that runs them says the same thing.
TEST(DtypeChecks, EveryOpWordsTheFloatingCheckAlike) {
  const Tensor ints = zeros({2, 3}, kInt64);
  EXPECT_TRUE(throws_error([&] { softmax(ints, -1); },
                           {"softmax", "input must be float32 or float64, got int64 [2, 3]"}));
  EXPECT_TRUE(throws_error([&] { exp(ints); },
                           {"exp", "input must be float32 or float64, got int64 [2, 3]"}));
  EXPECT_TRUE(throws_error([&] { mean(ints); },
                           {"mean", "input must be float32 or float64, got int64 [2, 3]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        mm(ints, zeros({3, 2}, kInt64));
      },
      {"mm", "operands must be float32 or float64, got int64 [2, 3]"}));
  EXPECT_TRUE(throws_error([] { randn({2}, kInt64); },
                           {"randn", "dtype must be float32 or float64, got int64"}));
  EXPECT_TRUE(
      throws_error([&] { check_floating(Tensor(), "op", "scores"); }, {"op: undefined scores"}));
}

TEST(DtypeChecks, EveryOpWordsTheSameDtypeCheckAlike) {
  const Tensor f = zeros({2}), d = zeros({2}, kFloat64);
  EXPECT_TRUE(throws_error([&] { f + d; }, {"add: dtypes differ: float32 [2] vs float64 [2]"}));
  EXPECT_TRUE(throws_error([&] { eq(f, d); }, {"eq: dtypes differ: float32 [2] vs float64 [2]"}));
  EXPECT_TRUE(throws_error([&] { where(ones({2}, kBool), f, d); },
                           {"where: dtypes differ: float32 [2] vs float64 [2]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        cat({f, f, d}, 0);
      },
      {"cat: dtypes differ: float32 [2] (tensor 0) vs float64 [2] (tensor 2)"}));
  EXPECT_TRUE(
      throws_error([&] { mse_loss(f, d); },
                   {"mse_loss: dtypes differ: float32 [2] (input) vs float64 [2] (target)"}));
}

}  // namespace
}  // namespace ag
