// The scaling scene on screen: its weight map cell by cell against the
// library's scaled_dot_product_attention on the dumped queries and keys, and
// the numbers it prints (variance, entropy, gradient norms) recomputed here,
// by another path (the fused masked softmax and its own backward).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "attograd/nn/functional.h"
#include "screen_check.h"

namespace ag::viewer_test {
namespace {

namespace F = nn::functional;

constexpr int64_t kShownQueries = 8;  // the rows the scene draws

// The run dumped the scaling scene's inputs (not another tab's).
::testing::AssertionResult is_scaling(const SceneRun& run) {
  if (run.exit_code != 0) return ::testing::AssertionFailure() << "the viewer failed";
  for (const char* name : {"queries", "keys", "targets", "scale", "shown.variance"}) {
    if (run.inputs.count(name) == 0) {
      return ::testing::AssertionFailure()
             << "no input '" << name << "': the viewer did not draw the scaling scene";
    }
  }
  return ::testing::AssertionSuccess();
}

double shown(const SceneRun& run, const std::string& name) {
  return run.inputs.at("shown." + name).item();
}

void check_scaling(const SceneRun& run) {
  ASSERT_TRUE(is_scaling(run));
  const Tensor& keys = run.inputs.at("keys");
  const Tensor& targets = run.inputs.at("targets");
  const double scale = run.inputs.at("scale").item();
  Tensor queries = run.inputs.at("queries").detach().requires_grad_();
  const int64_t d = queries.size(2), num_keys = keys.size(1);

  const F::AttentionResult attention = F::scaled_dot_product_attention_with_weights(
      queries, keys, keys, Tensor(), 0.0, false, scale);
  const Tensor weights = squeeze(attention.weights, 0);  // [Tq, Tk]
  EXPECT_TRUE(cells_match(run, "scaling/weights", narrow(weights.detach(), 0, 0, kShownQueries)));

  // Variance of the scores: the scene's number, and the chapter's d * scale^2.
  const std::vector<double> scores =
      (matmul(queries.detach(), transpose(keys, 1, 2)) * scale).to_vector();
  double mean = 0, variance = 0;
  for (double s : scores) mean += s;
  mean /= static_cast<double>(scores.size());
  for (double s : scores) variance += (s - mean) * (s - mean);
  variance /= static_cast<double>(scores.size() - 1);
  EXPECT_NEAR(shown(run, "variance"), variance, 1e-4 * variance);
  const double predicted = static_cast<double>(d) * scale * scale;
  EXPECT_NEAR(variance, predicted, 0.2 * predicted) << "d = " << d << ", scale = " << scale;

  // Mean row entropy, in nats.
  const Tensor w = weights.detach().to(kFloat64);
  // (0 log 0 = 0: the floor only keeps log away from -inf.)
  const double entropy = -sum(w * log(maximum(w, full(w.shape(), 1e-300, kFloat64)))).item() /
                         static_cast<double>(w.size(0));
  EXPECT_NEAR(shown(run, "entropy"), entropy, 1e-3 * std::log(static_cast<double>(num_keys)));

  // Gradients of L = sum(weights * targets): dL/dscores in closed form,
  // dL/dqueries from the library's backward through the fused softmax.
  const Tensor t = squeeze(targets, 0).to(kFloat64);
  const Tensor grad_scores = w * (t - sum(w * t, -1, true));
  const double grad_scores_norm = std::sqrt(sum(grad_scores * grad_scores).item());
  sum(attention.weights * targets).backward();
  const double grad_queries_norm = std::sqrt(sum(queries.grad() * queries.grad()).item());
  EXPECT_NEAR(shown(run, "grad_scores_norm"), grad_scores_norm, 1e-3 * grad_scores_norm + 1e-7);
  std::vector<double> row_norms = sqrt(sum(grad_scores * grad_scores, -1)).to_vector();
  std::sort(row_norms.begin(), row_norms.end());
  const double median = row_norms[row_norms.size() / 2];
  EXPECT_NEAR(shown(run, "grad_row_median"), median, 1e-3 * median + 1e-7);
  // Saturated rows: one key takes more than 0.99 of the weight.
  const double saturated =
      sum(gt(max(w, -1), full({w.size(0)}, 0.99, kFloat64)).to(kFloat64)).item();
  EXPECT_EQ(shown(run, "saturated_rows"), saturated);
  EXPECT_NEAR(shown(run, "grad_queries_norm"), grad_queries_norm, 1e-3 * grad_queries_norm + 1e-7);
}

TEST(ScalingScreen, WeightsAndNumbersAreTheLibrarys) {
  const SceneRun run = run_scene("scaling");
  check_scaling(run);
}

TEST(ScalingScreen, SmallWindow) {
  const SceneRun run = run_scene("scaling", 4, {"--size", "1280x800"});
  check_scaling(run);
  const LayoutEntry& map = find_map(run, "scaling/weights");
  EXPECT_LE(map.x + map.cell * static_cast<double>(map.cols), run.screenshot.width);
  EXPECT_LE(map.y + map.cell * static_cast<double>(map.rows), run.screenshot.height);
}

// The first view shows the problem: without scaling, at the default d, the
// softmax is close to one-hot and its gradient small.
TEST(ScalingScreen, DefaultsShowSaturation) {
  const SceneRun run = run_scene("scaling", 2);
  ASSERT_TRUE(is_scaling(run));
  const int64_t d = run.inputs.at("queries").size(2);
  EXPECT_GE(d, 64);
  EXPECT_DOUBLE_EQ(run.inputs.at("scale").item(), 1.0);  // not scaled, tau = 1
  EXPECT_LT(shown(run, "entropy"), 0.25 * std::log(64.0));
  EXPECT_GE(shown(run, "saturated_rows"), 10);
  // ... and the median row passes back less than a third of what the scaled scores would.
  const Tensor scores = matmul(run.inputs.at("queries"), transpose(run.inputs.at("keys"), 1, 2));
  const Tensor t = run.inputs.at("targets");
  auto median_row_gradient = [&](const Tensor& s) {
    const Tensor w = softmax(s, -1);
    const Tensor g = w * (t - sum(w * t, -1, true));
    std::vector<double> norms = sqrt(sum(g * g, -1)).to_vector();
    std::sort(norms.begin(), norms.end());
    return norms[norms.size() / 2];
  };
  EXPECT_LT(median_row_gradient(scores),
            median_row_gradient(scores / std::sqrt(static_cast<double>(d))) / 3);
}

}  // namespace
}  // namespace ag::viewer_test
