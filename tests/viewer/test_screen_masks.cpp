// The masks scene, as drawn: d2l's first masked-softmax demonstration
// (valid_lens [2, 3] on scores [2, 2, 4]). Every cell of the scores and of the
// weights has the colour of the library's numbers; masked cells are hatched.
#include <gtest/gtest.h>

#include "screen_check.h"

namespace ag::viewer_test {
namespace {

TEST(MasksScreen, DefaultIsD2lsFirstDemonstrationCellByCell) {
  SceneRun run = run_scene("masks");
  ASSERT_EQ(run.exit_code, 0);
  const Tensor& scores = run.inputs.at("scores");
  const Tensor& valid_lens = run.inputs.at("valid_lens");
  ASSERT_EQ(scores.shape(), Shape({2, 2, 4}));
  EXPECT_EQ(valid_lens.to_vector(), std::vector<double>({2, 3}));

  const Tensor weights = nn::masked_softmax(scores, valid_lens, run.inputs.at("mask_value").item());
  const Tensor keep = nn::lengths_to_keep(valid_lens, scores.shape());
  EXPECT_EQ(run.inputs.at("keep").to_vector(), keep.to_vector());
  for (int64_t b = 0; b < 2; ++b) {
    const std::string n = std::to_string(b);
    EXPECT_TRUE(cells_match(run, "masks/scores/" + n, slice_of(scores, b)));
    EXPECT_TRUE(cells_match(run, "masks/weights/" + n, slice_of(weights, b), slice_of(keep, b)));
  }
  // Weights share the fixed scale [0, 1], so a uniform 0.25 and a 1.0 read
  // the same in every mode.
  const LayoutEntry& map = find_map(run, "masks/weights/0");
  EXPECT_EQ(map.scale.lo, 0.0);
  EXPECT_EQ(map.scale.hi, 1.0);
  // Big enough to read the printed values.
  EXPECT_GE(map.cell, 40.0);
}

TEST(MasksScreen, SaneAt1280x800) {
  SceneRun run = run_scene("masks", 4, {"--size", "1280x800"});
  ASSERT_EQ(run.exit_code, 0);
  const Tensor& scores = run.inputs.at("scores");
  const Tensor weights = nn::masked_softmax(scores, run.inputs.at("valid_lens"));
  const Tensor keep = nn::lengths_to_keep(run.inputs.at("valid_lens"), scores.shape());
  EXPECT_TRUE(cells_match(run, "masks/weights/1", slice_of(weights, 1), slice_of(keep, 1)));
  const LayoutEntry& map = find_map(run, "masks/weights/1");
  EXPECT_LE(map.x + map.cell * 4, 1280);
  EXPECT_LE(map.y + map.cell * 2, 800);
}

// --set opens a mode directly (and, without --scene, its scene): the causal
// mask's weights, cell by cell, with the upper triangle hatched.
TEST(MasksScreen, SetOpensTheCausalModeDirectly) {
  SceneRun run = run_scene("", 2, {"--set", "masks.mode=causal"});
  ASSERT_EQ(run.exit_code, 0);
  const Tensor& scores = run.inputs.at("scores");
  ASSERT_EQ(scores.shape(), Shape({1, 6, 6}));
  const Tensor keep = broadcast_to(nn::causal_mask(6, 6), scores.shape());
  EXPECT_EQ(run.inputs.at("keep").to_vector(), keep.to_vector());
  const Tensor weights = nn::masked_softmax_keep(scores, keep, nn::MaskedRows::Uniform);
  EXPECT_TRUE(cells_match(run, "masks/weights/0", slice_of(weights, 0), slice_of(keep, 0)));
  EXPECT_TRUE(cells_match(run, "masks/scores/0", slice_of(scores, 0)));
}

// A setting the viewer does not know stops it before the first frame with
// exit code 2 and a message naming what it accepts (on the page: on screen).
TEST(MasksScreen, UnknownSetValueIsAClearError) {
  const SceneRun run = run_viewer("masks", 2, {"--set", "masks.mode=sideways"});
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find("--set masks.mode: takes batch-lengths | row-lengths | causal"),
            std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("got 'sideways'"), std::string::npos) << run.output;
  const SceneRun knob = run_viewer("masks", 2, {"--set", "masks.colour=red"});
  EXPECT_EQ(knob.exit_code, 2);
  EXPECT_NE(knob.output.find("scene masks has no knob 'colour'"), std::string::npos) << knob.output;
}

}  // namespace
}  // namespace ag::viewer_test
