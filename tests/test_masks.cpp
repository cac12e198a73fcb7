// Masks and masked softmax: d2l's demonstrations, fully masked rows (both
// choices), every conversion between conventions, broadcasting, gradients
// and bad input.
#include <cmath>
#include <limits>

#include "test_util.h"

namespace ag {
namespace {

using testing::all_close;
using testing::grad_ok;
using testing::leaf64;
using testing::throws_error;

using testing::bools;
using testing::has_nan;
using testing::lens;

// Sum over the last axis, as a flat vector.
std::vector<double> row_sums(const Tensor& t) {
  return sum(t, -1).to_vector();
}

// ---- sequence_mask, causal_mask ------------------------------------------------------

TEST(SequenceMaskTest, D2lExample) {
  // d2l: sequence_mask(X [2, 3], valid_len [1, 2]) keeps [[1, 0, 0], [1, 1, 0]].
  Tensor m = nn::sequence_mask(lens({1, 2}), 3);
  EXPECT_EQ(m.dtype(), kBool);
  EXPECT_EQ(m.shape(), (Shape{2, 3}));
  EXPECT_EQ(m.to_vector(), (std::vector<double>{1, 0, 0, 1, 1, 0}));
}

TEST(SequenceMaskTest, AnyRankAndEdgeLengths) {
  Tensor m = nn::sequence_mask(lens({0, 3, 1, 2}, {2, 2}), 3);
  EXPECT_EQ(m.shape(), (Shape{2, 2, 3}));
  EXPECT_EQ(m.to_vector(), (std::vector<double>{0, 0, 0, 1, 1, 1, 1, 0, 0, 1, 1, 0}));
}

TEST(SequenceMaskTest, BadInput) {
  EXPECT_TRUE(throws_error(
      [] {
        nn::sequence_mask(tensor({1, 2}), 3);
      },
      {"sequence_mask", "int64", "float32"}));
  EXPECT_TRUE(throws_error(
      [] {
        nn::sequence_mask(lens({1, 4}), 3);
      },
      {"sequence_mask", "4", "[0, 3]"}));
  EXPECT_TRUE(throws_error([] { nn::sequence_mask(lens({-1}), 3); }, {"sequence_mask", "-1"}));
  EXPECT_TRUE(throws_error([] { nn::sequence_mask(lens({1}), 0); }, {"sequence_mask", "maxlen"}));
}

TEST(CausalMaskTest, LowerTriangleAlignedTopLeft) {
  Tensor m = nn::causal_mask(3, 4);
  EXPECT_EQ(m.dtype(), kBool);
  EXPECT_EQ(m.to_vector(), (std::vector<double>{1, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 0}));
  EXPECT_TRUE(throws_error([] { nn::causal_mask(-1, 2); }, {"causal_mask", ">= 0"}));
}

// ---- masked_softmax: d2l's demonstrations ------------------------------------------------

TEST(MaskedSoftmaxTest, D2lOneLengthPerBatchItem) {
  // masked_softmax(torch.rand(2, 2, 4), torch.tensor([2, 3])): zeros beyond
  // the valid lengths, every row sums to one.
  manual_seed(0);
  Tensor X = rand({2, 2, 4}, kFloat64);
  Tensor w = nn::masked_softmax(X, lens({2, 3}));
  EXPECT_EQ(w.shape(), (Shape{2, 2, 4}));
  const std::vector<double> v = w.to_vector();
  for (int row = 0; row < 4; ++row) {
    const int valid = row < 2 ? 2 : 3;
    for (int j = 0; j < 4; ++j) {
      if (j < valid)
        EXPECT_GT(v[row * 4 + j], 0.0);
      else
        EXPECT_EQ(v[row * 4 + j], 0.0) << "row " << row << " key " << j;
    }
  }
  EXPECT_TRUE(all_close(sum(w, -1), {1, 1, 1, 1}, 1e-12));
  // The valid part of item 0 is a plain softmax of its two valid scores.
  Tensor item0 = narrow(X, 0, 0, 1);
  EXPECT_TRUE(all_close(narrow(narrow(w, 0, 0, 1), -1, 0, 2).contiguous(),
                        softmax(narrow(item0, -1, 0, 2), -1), 1e-12));
}

TEST(MaskedSoftmaxTest, D2lOneLengthPerRow) {
  // masked_softmax(torch.rand(2, 2, 4), torch.tensor([[1, 3], [2, 4]]))
  manual_seed(1);
  Tensor w = nn::masked_softmax(rand({2, 2, 4}, kFloat64), lens({1, 3, 2, 4}, {2, 2}));
  const std::vector<double> v = w.to_vector();
  const int valid[4] = {1, 3, 2, 4};
  for (int row = 0; row < 4; ++row)
    for (int j = valid[row]; j < 4; ++j) EXPECT_EQ(v[row * 4 + j], 0.0);
  EXPECT_EQ(v[0], 1.0);  // a single valid key takes all the weight
  EXPECT_TRUE(all_close(sum(w, -1), {1, 1, 1, 1}, 1e-12));
}

TEST(MaskedSoftmaxTest, NoLengthsIsPlainSoftmax) {
  Tensor X = rand({2, 3, 4}, kFloat64);
  EXPECT_TRUE(all_close(nn::masked_softmax(X), softmax(X, -1), 0, 0));
}

TEST(MaskedSoftmaxTest, FloatScoresKeepTheirDtype) {
  Tensor w = nn::masked_softmax(rand({2, 2, 4}), lens({2, 3}));
  EXPECT_EQ(w.dtype(), kFloat32);
  EXPECT_TRUE(all_close(sum(w, -1), {1, 1, 1, 1}, 1e-6));
}

// ---- fully masked rows -------------------------------------------------------------------

TEST(MaskedSoftmaxTest, D2lFullyMaskedRowIsUniformOverPadding) {
  // Valid length 0: every score becomes -1e6, so softmax gives 1/Tk to every
  // key, padding included. No NaN.
  Tensor X = tensor({5, -3, 2, 0.5, 1, 2, 3, 4}, {2, 1, 4}, kFloat64);
  Tensor w = nn::masked_softmax(X, lens({0, 2}));
  EXPECT_FALSE(has_nan(w));
  const std::vector<double> v = w.to_vector();
  for (int j = 0; j < 4; ++j) EXPECT_DOUBLE_EQ(v[static_cast<size_t>(j)], 0.25);
  EXPECT_EQ(v[6], 0.0);
  EXPECT_EQ(v[7], 0.0);
}

TEST(MaskedSoftmaxTest, ZeroChoiceGivesZeroWeightsForFullyMaskedRows) {
  Tensor X = tensor({5, -3, 2, 0.5, 1, 2, 3, 4}, {2, 1, 4}, kFloat64);
  Tensor keep = nn::lengths_to_keep(lens({0, 2}), X.shape());
  Tensor zero = nn::masked_softmax_keep(X, keep, nn::MaskedRows::Zero);
  Tensor uniform = nn::masked_softmax_keep(X, keep, nn::MaskedRows::Uniform);
  EXPECT_FALSE(has_nan(zero));
  EXPECT_EQ(row_sums(zero), (std::vector<double>{0.0, 1.0}));
  EXPECT_TRUE(all_close(narrow(zero, 0, 0, 1).contiguous(), {0, 0, 0, 0}, 0, 0));
  EXPECT_TRUE(all_close(uniform, nn::masked_softmax(X, lens({0, 2})), 0, 0));
  // Partially masked rows are the same under both choices.
  EXPECT_TRUE(
      all_close(narrow(zero, 0, 1, 1).contiguous(), narrow(uniform, 0, 1, 1).contiguous(), 0, 0));
}

TEST(MaskedSoftmaxTest, FullyMaskedRowsGetNoGradient) {
  for (nn::MaskedRows rows : {nn::MaskedRows::Uniform, nn::MaskedRows::Zero}) {
    Tensor X = leaf64({2, 1, 3});
    Tensor keep = bools({0, 0, 0, 1, 1, 0}, {2, 1, 3});
    sum(nn::masked_softmax_keep(X, keep, rows) * tensor({1, 2, 3, 4, 5, 6}, {2, 1, 3}, kFloat64))
        .backward();
    const std::vector<double> g = X.grad().to_vector();
    EXPECT_FALSE(has_nan(X.grad()));
    EXPECT_EQ(g[0], 0.0);
    EXPECT_EQ(g[1], 0.0);
    EXPECT_EQ(g[2], 0.0);
    EXPECT_EQ(g[5], 0.0);  // a masked key of a partial row
    EXPECT_NE(g[3], 0.0);
  }
}

TEST(MaskedSoftmaxTest, KeepMaskDefaultMasksEvenVeryNegativeScores) {
  // d2l's -1e6 leaks when the real scores are below it; the keep-mask
  // overload's default (-FLT_MAX) never does.
  Tensor X = tensor({-5e6, -5e6 - 1, 0}, {1, 3}, kFloat64);
  Tensor keep = bools({1, 1, 0}, {1, 3});
  EXPECT_NEAR(nn::masked_softmax_keep(X, keep, nn::MaskedRows::Uniform).to_vector()[2], 0.0, 0.0);
  EXPECT_NEAR(nn::masked_softmax(X, lens({2})).to_vector()[2], 1.0, 1e-12);  // the book's leak
}

// ---- keep masks broadcast ------------------------------------------------------------------

TEST(MaskedSoftmaxTest, KeepMasksBroadcastToTheScores) {
  manual_seed(2);
  Tensor scores = randn({2, 3, 4}, kFloat64);
  Tensor full = nn::lengths_to_keep(lens({2, 3}), scores.shape());  // [B, Tq, Tk]
  Tensor key_padding =
      nn::key_keep_to_keep(bools({1, 1, 0, 0, 1, 1, 1, 0}, {2, 4}), scores.shape());
  EXPECT_EQ(key_padding.shape(), (Shape{2, 1, 4}));
  EXPECT_TRUE(all_close(nn::masked_softmax_keep(scores, key_padding, nn::MaskedRows::Zero),
                        nn::masked_softmax_keep(scores, full, nn::MaskedRows::Zero), 0, 0));
  // [Tq, Tk] causal, shared by the batch.
  Tensor causal = nn::masked_softmax_keep(scores, nn::causal_mask(3, 4), nn::MaskedRows::Zero);
  EXPECT_EQ(causal.to_vector()[1], 0.0);
  EXPECT_EQ(causal.to_vector()[0], 1.0);
  // [B, 1, Tq, Tk] for heads: scores [B, H, Tq, Tk].
  Tensor heads = randn({2, 2, 3, 4}, kFloat64);
  Tensor per_item = unsqueeze(full, 1);
  Tensor w = nn::masked_softmax_keep(heads, per_item, nn::MaskedRows::Zero);
  EXPECT_TRUE(
      all_close(narrow(w, 1, 1, 1).contiguous(),
                unsqueeze(nn::masked_softmax_keep(reshape(narrow(heads, 1, 1, 1), {2, 3, 4}), full,
                                                  nn::MaskedRows::Zero),
                          1),
                1e-15));
  EXPECT_TRUE(throws_error(
      [&] {
        nn::masked_softmax_keep(scores, bools({1, 0}, {2}), nn::MaskedRows::Zero);
      },
      {"masked_softmax", "[2]", "[2, 3, 4]"}));
  EXPECT_TRUE(
      throws_error([&] { nn::masked_softmax_keep(scores, ones({4}), nn::MaskedRows::Zero); },
                   {"masked_softmax", "bool", "float32"}));
}

// ---- conversions ---------------------------------------------------------------------------

TEST(MaskConversionTest, LengthsToKeep) {
  Tensor per_item = nn::lengths_to_keep(lens({1, 3}), {2, 2, 3});
  EXPECT_EQ(per_item.shape(), (Shape{2, 2, 3}));
  EXPECT_EQ(per_item.to_vector(), (std::vector<double>{1, 0, 0, 1, 0, 0, 1, 1, 1, 1, 1, 1}));
  Tensor per_row = nn::lengths_to_keep(lens({0, 2, 3, 1}, {2, 2}), {2, 2, 3});
  EXPECT_EQ(per_row.to_vector(), (std::vector<double>{0, 0, 0, 1, 1, 0, 1, 1, 1, 1, 0, 0}));
  // [B, H, Tq, Tk] with one length per batch item.
  EXPECT_EQ(nn::lengths_to_keep(lens({1, 2}), {2, 3, 2, 4}).shape(), (Shape{2, 3, 2, 4}));
}

TEST(MaskConversionTest, KeepAdditivePaddingRoundTrips) {
  Tensor keep = bools({1, 1, 0, 1, 0, 0}, {2, 3});
  Tensor additive = nn::keep_to_additive(keep);
  EXPECT_EQ(additive.dtype(), kFloat32);
  EXPECT_EQ(additive.to_vector(), (std::vector<double>{0, 0, -1e9, 0, -1e9, -1e9}));
  EXPECT_EQ(nn::keep_to_additive(keep, kFloat64, -INFINITY).to_vector()[2], -INFINITY);
  EXPECT_EQ(nn::additive_to_keep(additive).to_vector(), keep.to_vector());
  // Small biases are kept; -inf is masked.
  EXPECT_EQ(nn::additive_to_keep(tensor({0.5, -3, -1e5, -INFINITY})).to_vector(),
            (std::vector<double>{1, 1, 0, 0}));
  // The padding indicator M of the TensorFlow post on padding and look-ahead
  // masks (masks.h): 1 at padding.
  Tensor M = nn::keep_to_padding(keep);
  EXPECT_EQ(M.to_vector(), (std::vector<double>{0, 0, 1, 0, 1, 1}));
  EXPECT_EQ(nn::padding_to_keep(M).to_vector(), keep.to_vector());
  EXPECT_EQ(nn::padding_to_keep(logical_not(keep)).to_vector(), keep.to_vector());
  EXPECT_EQ(nn::padding_to_additive(M).to_vector(), additive.to_vector());
  EXPECT_EQ(nn::padding_to_additive(logical_not(keep)).dtype(), kFloat32);
}

TEST(MaskConversionTest, TensorFlowPostPaddingExample) {
  // vec = [2, 0.5, 0.8, 1, 0, 0, 0, 0], the last four are padding:
  // softmax(vec)            = [0.41, 0.09, 0.12, 0.15, 0.06, 0.06, 0.06, 0.06]
  // softmax(vec - 1e9 * M)  = [0.53, 0.12, 0.16, 0.19, 0, 0, 0, 0]
  Tensor vec = tensor({2, 0.5, 0.8, 1, 0, 0, 0, 0}, {1, 8}, kFloat64);
  Tensor M = tensor({0, 0, 0, 0, 1, 1, 1, 1}, {1, 8}, kFloat64);
  EXPECT_TRUE(
      all_close(softmax(vec, -1), {0.41, 0.09, 0.12, 0.15, 0.06, 0.06, 0.06, 0.06}, 0.006, 0));
  Tensor masked = softmax(vec + nn::padding_to_additive(M), -1);
  EXPECT_TRUE(all_close(masked, {0.53, 0.12, 0.16, 0.19, 0, 0, 0, 0}, 0.006, 0));
  // All conventions agree on a partially masked row.
  Tensor keep = nn::padding_to_keep(M);
  EXPECT_TRUE(
      all_close(masked, nn::masked_softmax_keep(vec, keep, nn::MaskedRows::Zero), 1e-15, 0));
  EXPECT_TRUE(all_close(masked, nn::masked_softmax(vec, lens({4})), 1e-15, 0));
  EXPECT_TRUE(all_close(masked, softmax(vec + nn::keep_to_additive(keep, kFloat64), -1), 1e-15, 0));
}

TEST(MaskConversionTest, KeyKeepAndMerge) {
  Tensor key_keep = bools({1, 0, 1, 1}, {2, 2});
  EXPECT_EQ(nn::key_keep_to_keep(key_keep, {2, 5, 2}).shape(), (Shape{2, 1, 2}));
  EXPECT_EQ(nn::key_keep_to_keep(key_keep, {2, 4, 5, 2}).shape(), (Shape{2, 1, 1, 2}));
  EXPECT_TRUE(throws_error(
      [&] {
        nn::key_keep_to_keep(key_keep, {3, 5, 2});
      },
      {"key_keep_to_keep", "[2, 2]", "[3, 5, 2]"}));
  Tensor a = bools({1, 1, 0}, {3});
  EXPECT_TRUE(nn::merge_keep(a, Tensor()).is_same(a));
  EXPECT_TRUE(nn::merge_keep(Tensor(), a).is_same(a));
  EXPECT_FALSE(nn::merge_keep(Tensor(), Tensor()).defined());
  EXPECT_EQ(nn::merge_keep(a, bools({0, 1, 1}, {3})).to_vector(), (std::vector<double>{0, 1, 0}));
  EXPECT_TRUE(throws_error([&] { nn::merge_keep(a, ones({3})); }, {"merge_keep", "bool"}));
}

// ---- attention_softmax: every mask at once ----------------------------------------------------

TEST(AttentionSoftmaxTest, CombinesLengthsCausalBoolAndAdditive) {
  manual_seed(3);
  Tensor scores = randn({2, 3, 4}, kFloat64);
  Tensor valid = lens({3, 2});
  Tensor keep =
      bools({1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, {2, 3, 4});
  Tensor expected_keep = logical_and(
      logical_and(nn::lengths_to_keep(valid, scores.shape()), nn::causal_mask(3, 4)), keep);
  EXPECT_TRUE(all_close(nn::attention_softmax(scores, {.valid_lens = valid,
                                                       .attn_mask = keep,
                                                       .is_causal = true,
                                                       .fully_masked_rows = nn::MaskedRows::Zero,
                                                       .mask_value = nn::kMaskedScore}),
                        nn::masked_softmax_keep(scores, expected_keep, nn::MaskedRows::Zero), 0,
                        0));
  Tensor bias = randn({3, 4}, kFloat64);
  EXPECT_TRUE(all_close(nn::attention_softmax(scores, {.attn_mask = bias,
                                                       .fully_masked_rows = nn::MaskedRows::Zero,
                                                       .mask_value = nn::kMaskedScore}),
                        softmax(scores + bias, -1), 1e-15, 0));
}

TEST(AttentionSoftmaxTest, MinusInfinityRowsNeverGiveNaN) {
  Tensor scores = randn({2, 3}, kFloat64);
  Tensor bias = tensor({-INFINITY, -INFINITY, -INFINITY, 0, -INFINITY, 0}, {2, 3}, kFloat64);
  for (nn::MaskedRows rows : {nn::MaskedRows::Uniform, nn::MaskedRows::Zero}) {
    Tensor w = nn::attention_softmax(
        scores, {.attn_mask = bias, .fully_masked_rows = rows, .mask_value = nn::kMaskedScore});
    EXPECT_FALSE(has_nan(w));
    EXPECT_EQ(w.to_vector()[4], 0.0);
    EXPECT_EQ(row_sums(w)[0], rows == nn::MaskedRows::Zero ? 0.0 : 1.0);
  }
}

TEST(AttentionSoftmaxTest, AnAdditiveRowOfMinus1e9OnlyShiftsTheScores) {
  // Documented in masks.h: float32 cannot see the scores next to 1e9
  // (uniform), float64 still can (close to the unmasked softmax).
  Tensor scores = tensor({1, 2, 3}, {1, 3}, kFloat64);
  Tensor everywhere = full({1, 3}, nn::kAdditiveMaskValue, kFloat64);
  const auto run = [&](DType dtype) {
    return nn::attention_softmax(scores.to(dtype), {.attn_mask = everywhere.to(dtype),
                                                    .fully_masked_rows = nn::MaskedRows::Zero,
                                                    .mask_value = nn::kMaskedScore});
  };
  EXPECT_TRUE(all_close(run(kFloat32), {1 / 3., 1 / 3., 1 / 3.}, 1e-7));
  EXPECT_TRUE(all_close(run(kFloat64), softmax(scores, -1), 1e-6));
}

// ---- gradients -------------------------------------------------------------------------------

TEST(MaskedSoftmaxTest, Gradcheck) {
  Tensor X = leaf64({2, 3, 4}, -2, 2);
  // 1-D lengths (one item fully masked), 2-D lengths (single valid keys, empty rows).
  for (const Tensor& valid : {lens({0, 3}), lens({1, 0, 4, 2, 1, 3}, {2, 3})})
    EXPECT_TRUE(grad_ok(
        [&](const std::vector<Tensor>& in) { return nn::masked_softmax(in[0], valid); }, {X}));
  Tensor keep = bools({1, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 1}, {1, 3, 4});
  for (nn::MaskedRows rows : {nn::MaskedRows::Uniform, nn::MaskedRows::Zero})
    EXPECT_TRUE(grad_ok(
        [&](const std::vector<Tensor>& in) { return nn::masked_softmax_keep(in[0], keep, rows); },
        {X}));
}

// ---- bad input ---------------------------------------------------------------------------------

TEST(MaskedSoftmaxTest, BadValidLengths) {
  Tensor X = rand({2, 3, 4});
  EXPECT_TRUE(throws_error(
      [&] {
        nn::masked_softmax(X, tensor({2, 3}));
      },
      {"masked_softmax", "int64", "float32", "[2]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        nn::masked_softmax(X, bools({1, 0}, {2}));
      },
      {"masked_softmax", "int64", "bool"}));
  EXPECT_TRUE(throws_error(
      [&] {
        nn::masked_softmax(X, lens({1, 2, 3}));
      },
      {"masked_softmax", "[3]", "[2, 3]", "[2, 3, 4]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        nn::masked_softmax(X, lens({1, 2, 3, 4}, {2, 2}));
      },
      {"masked_softmax", "[2, 2]", "[2, 3]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        nn::masked_softmax(X, lens({1, 5}));
      },
      {"masked_softmax", "5", "[0, 4]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        nn::masked_softmax(X, lens({-1, 2}));
      },
      {"masked_softmax", "-1", "[0, 4]"}));
  EXPECT_TRUE(throws_error([&] { nn::masked_softmax(rand({4}), lens({1})); },
                           {"masked_softmax", "rank >= 2"}));
  EXPECT_TRUE(throws_error(
      [&] {
        nn::masked_softmax_keep(arange(4, kInt64), bools({1, 1, 1, 1}, {4}), nn::MaskedRows::Zero);
      },
      {"masked_softmax", "float32 or float64", "int64"}));
}

TEST(MaskCheckTest, BadMasks) {
  const Shape scores{2, 3, 4};
  EXPECT_NO_THROW(nn::check_mask(Tensor(), scores, kFloat32, "op"));
  EXPECT_NO_THROW(nn::check_mask(ones({3, 4}), scores, kFloat32, "op"));
  EXPECT_TRUE(throws_error(
      [&] {
        nn::check_mask(ones({3, 4}, kFloat64), scores, kFloat32, "Op");
      },
      {"Op", "float64", "float32"}));
  EXPECT_TRUE(throws_error(
      [&] {
        nn::check_mask(ones({2, 4}), scores, kFloat32, "Op");
      },
      {"Op", "[2, 4]", "[2, 3, 4]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        nn::check_mask(ones({1, 2, 3, 4}), scores, kFloat32, "Op");
      },
      {"Op", "[1, 2, 3, 4]"}));
  EXPECT_TRUE(
      throws_error([&] { nn::check_mask(lens({1}), scores, kFloat32, "Op"); }, {"Op", "int64"}));
}

TEST(MaskConversionTest, BadConversions) {
  EXPECT_TRUE(throws_error([] { nn::keep_to_additive(ones({2})); }, {"keep_to_additive", "bool"}));
  EXPECT_TRUE(throws_error([] { nn::keep_to_additive(bools({1}, {1}), kInt64); },
                           {"keep_to_additive", "int64"}));
  EXPECT_TRUE(
      throws_error([] { nn::additive_to_keep(bools({1}, {1})); }, {"additive_to_keep", "bool"}));
  EXPECT_TRUE(throws_error([] { nn::padding_to_keep(lens({1})); }, {"padding_to_keep", "int64"}));
  EXPECT_TRUE(throws_error(
      [] {
        nn::lengths_to_keep(Tensor(), {2, 3});
      },
      {"lengths_to_keep", "undefined"}));
}

}  // namespace
}  // namespace ag

namespace ag {
namespace {

// The fused kernel behind masked_softmax against its composed definition,
// with keep masks of every broadcast form and both fully-masked-row modes.
TEST(MaskedSoftmaxKernelTest, MatchesTheComposedOpsForwardAndBackward) {
  manual_seed(7);
  const Shape shape{2, 3, 5};
  const std::vector<Tensor> keeps = {
      lt(rand({2, 3, 5}), full({}, 0.6)),                        // full
      tensor({1, 1, 0, 0, 0, 0, 0, 0, 0, 0}, {2, 1, 5}, kBool),  // key padding, a masked item
      nn::causal_mask(3, 5),                                     // [Tq, Tk]
      tensor({1, 0, 1}, {3, 1}, kBool),                          // whole rows
  };
  for (const Tensor& keep : keeps) {
    for (bool zero_masked : {false, true}) {
      for (DType dtype : {kFloat32, kFloat64}) {
        Tensor x = (randn(shape, dtype) * 3.0).requires_grad_();
        const Tensor w = randn(shape, dtype);
        const Tensor fused = masked_softmax_last(x, keep, -1e6, zero_masked);
        sum(fused * w).backward();
        const Tensor fused_grad = x.grad();
        x.zero_grad();
        Tensor composed = softmax(where(keep, x, -1e6), -1);
        if (zero_masked) composed = where(keep, composed, 0.0);
        sum(composed * w).backward();
        EXPECT_TRUE(testing::all_close(fused, composed, 1e-6, 1e-5)) << shape_str(keep.shape());
        EXPECT_TRUE(testing::all_close(fused_grad, x.grad(), 1e-6, 1e-5))
            << shape_str(keep.shape());
      }
    }
  }
}

// Rows longer than a SIMD vector, with a ragged end (float32 sums and scales
// them in vector lanes): 37 keys, masked at random and causally.
TEST(MaskedSoftmaxKernelTest, LongRowsMatchTheComposedOps) {
  manual_seed(8);
  const Shape shape{2, 3, 37};
  for (const Tensor& keep : {lt(rand(shape), full({}, 0.6)), nn::causal_mask(3, 37)}) {
    for (bool zero_masked : {false, true}) {
      Tensor x = (randn(shape, kFloat64) * 3.0).requires_grad_();
      Tensor x32 = x.detach().to(kFloat32).requires_grad_();
      const Tensor w = randn(shape, kFloat64);
      sum(masked_softmax_last(x32, keep, -1e6, zero_masked) * w.to(kFloat32)).backward();
      Tensor composed = softmax(where(keep, x, -1e6), -1);
      if (zero_masked) composed = where(keep, composed, 0.0);
      sum(composed * w).backward();
      EXPECT_TRUE(testing::all_close(x32.grad().to(kFloat64), x.grad(), 1e-5, 1e-5))
          << shape_str(keep.shape()) << (zero_masked ? " zero_masked" : "");
    }
  }
}

TEST(MaskedSoftmaxKernelTest, Gradcheck) {
  const Tensor keep = tensor({1, 1, 0, 0, 0, 0, 1, 0, 1, 1, 1, 0}, {2, 2, 3}, kBool);
  for (bool zero_masked : {false, true}) {
    EXPECT_TRUE(testing::grad_ok(
        [&](const std::vector<Tensor>& in) {
          return masked_softmax_last(in[0], keep, nn::kD2lMaskValue, zero_masked);
        },
        {testing::leaf64({2, 2, 3})}));
  }
}

TEST(MaskedSoftmaxKernelTest, BadInput) {
  EXPECT_TRUE(testing::throws_error(
      [] {
        masked_softmax_last(ones({2, 3}), ones({2, 3}), 0, false);
      },
      {"masked_softmax", "bool", "[2, 3]"}));
  EXPECT_TRUE(testing::throws_error(
      [] {
        masked_softmax_last(ones({2, 3}), ones({4}, kBool), 0, false);
      },
      {"masked_softmax", "[4]", "[2, 3]"}));
}

// ---- the names that keep the two mask forms apart ---------------------------------------

TEST(MaskedSoftmaxKeepTest, EqualsTheComposedOps) {
  manual_seed(5);
  Tensor scores = randn({2, 3, 4}, kFloat64);
  const Tensor keep = bools({1, 1, 0, 1, 0, 0, 0, 0, 1, 0, 1, 1}, {3, 4});  // row 1 fully masked
  for (nn::MaskedRows rows : {nn::MaskedRows::Uniform, nn::MaskedRows::Zero}) {
    // softmax(where(keep, scores, lowest)), then 0 where !keep for Zero
    Tensor expected = softmax(where(keep, scores, nn::kMaskedScore), -1);
    if (rows == nn::MaskedRows::Zero) expected = where(keep, expected, 0.0);
    const Tensor w = nn::masked_softmax_keep(scores, keep, rows);
    EXPECT_TRUE(all_close(w, expected, 1e-15, 0));
  }
}

TEST(MaskedSoftmaxKeepTest, ABoolMaskInTheLengthsPlaceIsAClearError) {
  const Tensor scores = zeros({2, 3});
  const Tensor keep = bools({1, 0, 1, 1, 1, 0}, {2, 3});
  EXPECT_TRUE(throws_error([&] { nn::masked_softmax(scores, keep); },
                           {"masked_softmax", "valid_lens is a bool tensor [2, 3]",
                            "masked_softmax_keep(scores, keep, MaskedRows::"}));
  EXPECT_TRUE(
      throws_error([&] { nn::attention_softmax(scores, {.valid_lens = keep}); },
                   {"attention_softmax", "valid_lens is a bool tensor", "pass it as attn_mask"}));
}

TEST(AttentionSoftmaxOptionsTest, NamedFieldsCombineTheMasks) {
  manual_seed(6);
  Tensor scores = randn({2, 3, 4}, kFloat64);
  Tensor valid = lens({3, 2});
  Tensor keep = bools({1, 1, 0, 1, 1, 1, 1, 1, 0, 1, 1, 1}, {3, 4});
  // Every mask at once is the keep form of their logical and.
  const Tensor all_kept = logical_and(
      logical_and(nn::lengths_to_keep(valid, scores.shape()), nn::causal_mask(3, 4)), keep);
  EXPECT_TRUE(all_close(
      nn::attention_softmax(scores, {.valid_lens = valid, .attn_mask = keep, .is_causal = true}),
      nn::masked_softmax_keep(scores, all_kept, nn::MaskedRows::Uniform, nn::kD2lMaskValue), 0, 0));
  EXPECT_TRUE(all_close(
      nn::attention_softmax(scores, {.is_causal = true,
                                     .fully_masked_rows = nn::MaskedRows::Zero,
                                     .mask_value = nn::kMaskedScore}),
      nn::masked_softmax_keep(scores, nn::causal_mask(3, 4), nn::MaskedRows::Zero), 0, 0));
  // No options: a plain softmax over the last axis.
  EXPECT_TRUE(all_close(nn::attention_softmax(scores), softmax(scores, -1), 0, 0));
  // Errors carry the given name.
  EXPECT_TRUE(throws_error(
      [&] {
        nn::attention_softmax(scores, {.valid_lens = lens({9, 9}), .op = "Mine"});
      },
      {"Mine", "valid length 9"}));
}

}  // namespace
}  // namespace ag
