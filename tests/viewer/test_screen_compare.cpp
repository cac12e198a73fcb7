// The compare scene, as drawn: every cell of both weight maps, their
// difference and both outputs has the colour of the value the library
// computes from the same inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "screen_check.h"

namespace ag::viewer_test {
namespace {

TEST(CompareScreen, EveryCellHasTheColourOfTheLibrarysNumbers) {
  SceneRun run = run_scene("compare");
  ASSERT_EQ(run.exit_code, 0);
  const auto& in = run.inputs;
  const Tensor& queries = in.at("queries");
  const Tensor& keys = in.at("keys");
  const Tensor& values = in.at("values");
  const Tensor& valid_lens = in.at("valid_lens");
  const int64_t d = queries.size(2), num_queries = queries.size(1), num_keys = keys.size(1);
  const auto parameters = with_prefix(in, "additive.");

  nn::AdditiveAttention additive(d, d, parameters.at("W_k.weight").size(0));
  additive.load_state_dict(parameters);
  additive.eval();
  nn::DotProductAttention dot;
  dot.eval();
  const Tensor additive_out = squeeze(additive(queries, keys, values, valid_lens), 0);
  const Tensor dot_out = squeeze(dot(queries, keys, values, valid_lens), 0);
  const Tensor additive_weights = squeeze(additive.attention_weights(), 0);
  const Tensor dot_weights = squeeze(dot.attention_weights(), 0);
  const Tensor keep = expand(sequence_mask(valid_lens, num_keys), {num_queries, num_keys});

  // Scores before the mask: additive w_v . tanh(W_q q + W_k k), dot q . k / sqrt(d).
  const Tensor additive_scores =
      squeeze(sum(tanh(unsqueeze(linear(queries, parameters.at("W_q.weight")), 2) +
                       unsqueeze(linear(keys, parameters.at("W_k.weight")), 1)) *
                      reshape(parameters.at("w_v.weight"), {-1}),
                  -1),
              0);
  const Tensor dot_scores =
      squeeze(matmul(queries, transpose(keys, 1, 2)), 0) / std::sqrt(double(d));
  EXPECT_TRUE(cells_match(run, "compare/additive_scores", additive_scores, keep));
  EXPECT_TRUE(cells_match(run, "compare/dot_scores", dot_scores, keep));
  EXPECT_TRUE(cells_match(run, "compare/additive", additive_weights, keep));
  EXPECT_TRUE(cells_match(run, "compare/dot", dot_weights, keep));
  EXPECT_TRUE(cells_match(run, "compare/difference", additive_weights - dot_weights, keep));
  EXPECT_TRUE(cells_match(run, "compare/additive_output", additive_out));
  EXPECT_TRUE(cells_match(run, "compare/dot_output", dot_out));

  // Both weight maps share one scale, 0 to the largest weight of the two,
  // so equal colours mean equal weights; the difference is centred on 0.
  const LayoutEntry& weights_map = find_map(run, "compare/additive");
  EXPECT_EQ(weights_map.scale.lo, 0.0);
  EXPECT_NEAR(weights_map.scale.hi, std::max(max(additive_weights).item(), max(dot_weights).item()),
              1e-6);
  EXPECT_EQ(find_map(run, "compare/dot").scale.hi, weights_map.scale.hi);
  const LayoutEntry& difference_map = find_map(run, "compare/difference");
  EXPECT_EQ(difference_map.scale.map, viz::Colormap::Diverging);
  EXPECT_NEAR(difference_map.scale.lo, -difference_map.scale.hi, 1e-12);

  // The default inputs must show the learner a difference.
  EXPECT_GT(max(abs(additive_weights - dot_weights)).item(), 0.05);
}

TEST(CompareScreen, ListScenesNamesTheDefaultFirst) {
  const std::string list = viewer_path() + " --list-scenes";
  FILE* pipe = popen(list.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  char line[64] = {};
  ASSERT_NE(fgets(line, sizeof line, pipe), nullptr);
  EXPECT_STREQ(line, "compare\n");
  EXPECT_EQ(pclose(pipe), 0);
}

// Memory does not grow with frames: the resident set after 2,000 frames is
// within 2 MiB of the one after the first 100. (Frame times are printed for
// people; they are not asserted. A small window keeps software GL quick.)
TEST(CompareScreen, StatsAndNoMemoryGrowth) {
  if (!kMemoryIsMeasurable) GTEST_SKIP() << "AddressSanitizer's quarantine keeps freed memory";
  const SceneRun run = run_checking_memory("compare", 2000);
  EXPECT_EQ(read_stats(run.output).count("frame_ms_median"), 1u) << run.output;
}

}  // namespace
}  // namespace ag::viewer_test
