// The file scene, as drawn: files written here with save_npy/save_npz are
// opened with --open, and every cell shown is checked against the file's
// numbers (weights) or against the library run on the dumped inputs (state
// dicts). Bad files must leave the viewer running (exit 0) with the example
// still drawn; test_file_scene_ui checks the messages.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "file_fixtures.h"
#include "screen_check.h"

namespace ag::viewer_test {
namespace {

namespace fx = file_fixtures;

TEST(FileScreen, NpyWeightsEveryMapCellByCell) {
  const std::string path = fx::directory("screen-file") + "/weights.npy";
  const Tensor weights = fx::example_weights();  // [2, 3, 4, 5]: six maps
  save_npy(path, weights);
  SceneRun run = run_scene("file", 4, {"--open", path});
  ASSERT_EQ(run.exit_code, 0);
  const Tensor maps = reshape(weights, {6, 4, 5});
  for (int64_t m = 0; m < 6; ++m) {
    EXPECT_TRUE(cells_match(run, "file/map" + std::to_string(m), slice_of(maps, m)));
  }
  EXPECT_THROW(find_map(run, "file/map6"), Error);
  const LayoutEntry& map = find_map(run, "file/map0");
  EXPECT_EQ(map.scale.lo, 0.0);
  EXPECT_NEAR(map.scale.hi, max(weights).item(), 1e-6);
  EXPECT_TRUE(run.inputs.at("weights").shape() == weights.shape());
}

TEST(FileScreen, ManyMapsShowSixteenAndBigMapsTheirCorner) {
  const std::string dir = fx::directory("screen-file");
  manual_seed(5);
  save_npy(dir + "/many.npy", rand({20, 3, 4}));
  SceneRun many = run_scene("file", 4, {"--open", dir + "/many.npy"});
  ASSERT_EQ(many.exit_code, 0);
  EXPECT_NO_THROW(find_map(many, "file/map15"));
  EXPECT_THROW(find_map(many, "file/map16"), Error);

  // Tall and wide files, each cut to its first 256 queries or keys. (Each
  // stays clear of the screen's centre, where Xvfb's pointer rests: the
  // widget would outline the cell under it and draw a tooltip.)
  for (const Shape& shape : {Shape{300, 20}, Shape{20, 300}}) {
    const Tensor big = rand(shape, kFloat64);
    save_npy(dir + "/big.npy", big);
    SceneRun run = run_scene("file", 4, {"--open", dir + "/big.npy"});
    ASSERT_EQ(run.exit_code, 0);
    EXPECT_TRUE(cells_match(run, "file/map0",
                            narrow(narrow(big, 0, 0, std::min<int64_t>(shape[0], 256)), 1, 0,
                                   std::min<int64_t>(shape[1], 256))));
  }
}

TEST(FileScreen, NonFiniteValuesAreHatched) {
  const std::string path = fx::directory("screen-file") + "/nan.npy";
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // PyTorch's weights for a fully masked row 1 are NaN.
  const Tensor weights = tensor({0.5, 0.5, 0, nan, nan, nan, 0.2, 0.3, 0.5}, {3, 3});
  save_npy(path, weights);
  SceneRun run = run_scene("file", 4, {"--open", path});
  ASSERT_EQ(run.exit_code, 0);
  const Tensor finite = eq(weights, weights);
  EXPECT_TRUE(cells_match(run, "file/map0", where(finite, weights, 0.0), finite));
}

TEST(FileScreen, AdditiveStateDictParametersAndWeights) {
  const std::string path = fx::directory("screen-file") + "/additive.npz";
  manual_seed(2);
  nn::AdditiveAttention saved(3, 5, 7);
  save_npz(path, saved.state_dict());
  SceneRun run = run_scene("file", 4, {"--open", path});
  ASSERT_EQ(run.exit_code, 0);
  for (const auto& [name, p] : saved.state_dict()) {
    EXPECT_TRUE(cells_match(run, "file/param/" + name, p)) << name;
  }
  const auto parameters = with_prefix(run.inputs, "additive.");
  nn::AdditiveAttention additive(3, 5, 7);
  additive.load_state_dict(parameters);
  additive.eval();
  additive(run.inputs.at("queries"), run.inputs.at("keys"), run.inputs.at("values"));
  EXPECT_TRUE(cells_match(run, "file/attention", slice_of(additive.attention_weights(), 0)));
}

TEST(FileScreen, MultiHeadStateDictWithBiasesHeadByHead) {
  const std::string path = fx::directory("screen-file") + "/mha.npz";
  manual_seed(4);
  nn::MultiHeadAttention saved(6, 5, 4, 12, 3, 0.0, true);
  save_npz(path, saved.state_dict());
  SceneRun run = run_scene("file", 4, {"--open", path});
  ASSERT_EQ(run.exit_code, 0);
  EXPECT_TRUE(cells_match(run, "file/param/W_o.weight", saved.W_o.weight));
  EXPECT_TRUE(cells_match(run, "file/param/W_q.bias", unsqueeze(saved.W_q.bias, 0)));
  const int64_t heads = static_cast<int64_t>(run.inputs.at("num_heads").item());
  nn::MultiHeadAttention mha(6, 5, 4, 12, heads, 0.0, true);
  mha.load_state_dict(with_prefix(run.inputs, "mha."));
  mha.eval();
  mha(run.inputs.at("queries"), run.inputs.at("keys"), run.inputs.at("values"));
  const Tensor weights = slice_of(mha.attention_weights(), 0);  // [heads, Tq, Tk]
  for (int64_t h = 0; h < heads; ++h) {
    EXPECT_TRUE(cells_match(run, "file/head" + std::to_string(h), slice_of(weights, h)));
  }
}

// Every bad file: the viewer runs on and still shows the example it started with.
TEST(FileScreen, BadFilesLeaveTheViewerRunning) {
  const std::string dir = fx::directory("screen-file");
  for (const std::string& path :
       {fx::text_file(dir), fx::truncated_npy(dir), fx::huge_header_npy(dir), fx::one_dim_npy(dir),
        fx::linear_state_dict(dir), fx::mixed_npz(dir), dir + "/missing.npy"}) {
    SceneRun run = run_scene("file", 3, {"--open", path});
    EXPECT_EQ(run.exit_code, 0) << path;
    if (run.exit_code == 0) {
      EXPECT_NO_THROW(find_map(run, "file/head0")) << path;
    }
  }
}

}  // namespace
}  // namespace ag::viewer_test
