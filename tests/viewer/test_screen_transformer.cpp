// The transformer scene on screen: after some frames of training on dates,
// the scene saves its model (transformer.save_prefix) before the last
// frame, and every cell of every map (2 blocks x 4 heads of the encoder's
// self-attention, the decoder's self-attention with the look-ahead mask's
// cells hatched, and the cross-attention) has the colour of the weight
//   attograd-translate --load SAVED.npz --predict TEXT --json
// prints for the shown held-out input (±2 per channel). The first run's
// --stats shows the loss falling (in the browser too: web_screen_transformer).
#include <gtest/gtest.h>

#include "dumped_source.h"
#include "screen_check.h"
#include "test_util.h"

namespace ag::viewer_test {
namespace {

// Reads the JSON value at json[i] (an array or a number), moving i past
// it: numbers go to `values`, each nesting level's length to shape[depth]
// (the same at every position of a level, or an ag::Error).
void parse_value(const std::string& json, size_t& i, size_t depth, std::vector<int64_t>& shape,
                 std::vector<double>& values) {
  AG_CHECK(i < json.size(), "parse_value", "the JSON ends early");
  if (json[i] != '[') {
    size_t used = 0;
    values.push_back(std::stod(json.substr(i, 32), &used));
    i += used;
    return;
  }
  ++i;
  int64_t n = 0;
  while (i < json.size() && json[i] != ']') {
    parse_value(json, i, depth + 1, shape, values);
    ++n;
    if (i < json.size() && json[i] == ',') ++i;
  }
  AG_CHECK(i < json.size(), "parse_value", "an array is not closed");
  ++i;
  if (shape.size() <= depth) shape.resize(depth + 1, -1);
  AG_CHECK(shape[depth] < 0 || shape[depth] == n, "parse_value", "a ragged array");
  shape[depth] = n;
}

// The array `key` of a one-line JSON object, as a float64 tensor of its shape.
Tensor parse_array(const std::string& json, const std::string& key) {
  const size_t at = json.find("\"" + key + "\":[");
  AG_CHECK(at != std::string::npos, "parse_array", "no " + key + " in: " + json.substr(0, 200));
  size_t i = at + key.size() + 3;
  std::vector<int64_t> shape;
  std::vector<double> values;
  parse_value(json, i, 0, shape, values);
  return tensor(values, Shape(shape.begin(), shape.end()), kFloat64);
}

Tensor look_ahead_keep(int64_t n) {
  std::vector<double> keep(static_cast<size_t>(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j <= i; ++j) keep[static_cast<size_t>(i * n + j)] = 1.0;
  }
  return tensor(std::move(keep), {n, n}, kBool);
}

TEST(ScreenTransformer, MapsPerBlockAndHeadAreTheProgramsForTheSavedModel) {
  const char* const kinds[3] = {"encoder", "decoder", "cross"};
  const char* const ids[3] = {"enc_self", "dec_self", "cross"};
  const char* const keys[3] = {"encoder_self_attention", "decoder_self_attention",
                               "cross_attention"};
  for (int kind = 0; kind < 3; ++kind) {
    SCOPED_TRACE(kinds[kind]);
    std::vector<std::string> options = {"--set", "transformer.example=2",
                                        "--set", std::string("transformer.maps=") + kinds[kind],
                                        "--set", "transformer.save_prefix={out}/saved"};
    // The first run also trains by the frames (worker=no, as the page always
    // does), so that its step count is the frames': --stats shows the loss
    // falling.
    if (kind == 0) {
      for (const char* option :
           {"--set", "transformer.worker=no", "--set", "transformer.steps_per_frame=2", "--stats"})
        options.push_back(option);
    }
    const SceneRun run = run_scene_writing("transformer", 12, options, {"saved-masked.npz"});
    ASSERT_EQ(run.exit_code, 0);
    if (kind == 0) {
      const std::map<std::string, double> stats = read_stats(run.output);
      ASSERT_EQ(stats.count("loss_first"), 1u) << run.output;
      ASSERT_EQ(stats.count("loss_last"), 1u) << run.output;
      EXPECT_EQ(stats.at("steps"), 22);  // 2 a frame; the last frame waits (before_last_frame)
      EXPECT_LT(stats.at("loss_last"), 0.9 * stats.at("loss_first")) << run.output;
    }
    ASSERT_EQ(run.inputs.count("shown.example"), 1u)
        << "the viewer did not draw the transformer scene";
    ASSERT_EQ(run.inputs.at("shown.example").item(), 2);

    // The shown input: held-out example 2 of the scene's data.
    const std::string model = run.dir + "/saved-masked.npz";
    const std::string json = program_json(model, dumped_source(run, model, 2));
    const Tensor maps = parse_array(json, keys[kind]);  // [L, H, Tq, Tk]
    ASSERT_EQ(maps.dim(), 4) << json.substr(0, 300);
    const Tensor keep = kind == 1 ? look_ahead_keep(maps.size(2)) : Tensor();
    for (int64_t l = 0; l < maps.size(0); ++l) {
      for (int64_t h = 0; h < maps.size(1); ++h) {
        const std::string id = std::string("transformer/") + ids[kind] + "/b" + std::to_string(l) +
                               "h" + std::to_string(h);
        SCOPED_TRACE(id);
        const Tensor map =
            maps.narrow(0, l, 1).narrow(1, h, 1).reshape({maps.size(2), maps.size(3)});
        EXPECT_TRUE(cells_match(run, id, map, keep));
      }
    }
  }
}

}  // namespace
}  // namespace ag::viewer_test
