// Tutorial 18's --viewer: the viewer opened by a program that registered its
// own scoring function (cosine, written in the tutorial's file), through
// ag::viewer::run_viewer. The compare scene shows cosine beside additive,
// and its cells are the registered function's weights.
#include <gtest/gtest.h>

#include <cmath>

#include "screen_check.h"

namespace ag::viewer_test {
namespace {

// x / |x| over the last dim.
Tensor unit(const Tensor& x) {
  return x / sqrt(sum(x * x, -1, true));
}

TEST(Tutorial18Screen, CosineBesideAdditiveInTheCompareScene) {
#ifdef ATTOGRAD_WEB_SCREEN
  GTEST_SKIP() << "the page is the viewer alone; tutorial 18 runs it natively";
#endif
  if (tutorial_18_program().empty()) GTEST_SKIP() << "the tutorials are not built";
  SceneRun run = run_program_scene(tutorial_18_program(), "compare", 4, {"--viewer"});
  ASSERT_EQ(run.exit_code, 0);
  const auto& in = run.inputs;
  const Tensor& queries = in.at("queries");
  const Tensor& keys = in.at("keys");
  const Tensor& valid_lens = in.at("valid_lens");
  const int64_t num_queries = queries.size(1), num_keys = keys.size(1);
  const Tensor keep = expand(sequence_mask(valid_lens, num_keys), {num_queries, num_keys});

  // The tutorial's score, from the parameters the scene drew for it:
  // exp(t) cos(W_q q, k), then the masked softmax over the valid keys.
  const Tensor W_q = in.at("cosine.W_q.weight");
  const Tensor log_temperature = in.at("cosine.log_temperature");
  const Tensor scores = squeeze(bmm(unit(linear(queries, W_q)), transpose(unit(keys), 1, 2)), 0) *
                        exp(log_temperature);
  const Tensor weights = masked_softmax(unsqueeze(scores, 0), valid_lens);
  EXPECT_TRUE(cells_match(run, "compare/cosine_scores", scores, keep));
  EXPECT_TRUE(cells_match(run, "compare/cosine", squeeze(weights, 0), keep));
  // And additive beside it, the table's own.
  EXPECT_NO_THROW(find_map(run, "compare/additive"));
  EXPECT_EQ(in.count("additive.W_k.weight"), 1u);
}

}  // namespace
}  // namespace ag::viewer_test
