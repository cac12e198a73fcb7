// The multi-head scene, as drawn: one map per head of
// MultiHeadAttention.attention_weights() and the output, recomputed from the
// dumped inputs and parameters with the library.
#include <gtest/gtest.h>

#include "screen_check.h"

namespace ag::viewer_test {
namespace {

TEST(MultiHeadScreen, EveryHeadAndTheOutputCellByCell) {
  SceneRun run = run_scene("multihead");
  ASSERT_EQ(run.exit_code, 0);
  const auto& in = run.inputs;
  const std::map<std::string, Tensor> parameters = with_prefix(in, "mha.");
  const Tensor& queries = in.at("queries");
  const Tensor& keys = in.at("keys");
  const Tensor& valid_lens = in.at("valid_lens");
  const int64_t heads = static_cast<int64_t>(in.at("num_heads").item());
  const int64_t d = queries.size(2), hiddens = parameters.at("W_q.weight").size(0);
  // d2l's example sizes: num_hiddens 100, 5 heads, valid_lens [3, 2].
  EXPECT_EQ(hiddens, 100);
  EXPECT_EQ(heads, 5);
  EXPECT_EQ(valid_lens.to_vector(), std::vector<double>({3, 2}));

  nn::MultiHeadAttention mha(d, d, d, hiddens, heads, 0.0, parameters.count("W_q.bias") > 0);
  mha.load_state_dict(parameters);
  mha.eval();
  const Tensor output = mha(queries, keys, in.at("values"), valid_lens);
  const Tensor weights = mha.attention_weights();  // [B, heads, Tq, Tk]
  const Tensor keep = slice_of(
      nn::lengths_to_keep(valid_lens, {queries.size(0), queries.size(1), keys.size(1)}), 0);
  for (int64_t h = 0; h < heads; ++h) {
    EXPECT_TRUE(cells_match(run, "multihead/head" + std::to_string(h),
                            slice_of(slice_of(weights, 0), h), keep));
  }
  EXPECT_THROW(find_map(run, "multihead/head" + std::to_string(heads)), Error);
  EXPECT_TRUE(cells_match(run, "multihead/output", slice_of(output, 0)));
  // The heads must disagree at first sight, or there is nothing to see.
  EXPECT_GT(max(abs(slice_of(slice_of(weights, 0), 0) - slice_of(slice_of(weights, 0), 1))).item(),
            0.05);
}

TEST(MultiHeadScreen, SaneAt1280x800) {
  SceneRun run = run_scene("multihead", 4, {"--size", "1280x800"});
  ASSERT_EQ(run.exit_code, 0);
  for (const LayoutEntry& map : run.layout) {
    EXPECT_LE(map.x + map.cell * static_cast<double>(map.cols), 1280) << map.id;
    EXPECT_LE(map.y + map.cell * static_cast<double>(map.rows), 800) << map.id;
  }
}

}  // namespace
}  // namespace ag::viewer_test
