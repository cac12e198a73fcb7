// The compare scene, as drawn: every cell of both weight maps, their
// difference and both outputs has the colour of the value the library
// computes from the same inputs.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <map>
#include <sstream>

#include "screen_check.h"

namespace ag::viewer_test {
namespace {

// The scene's inputs as --dump-inputs saved them, and the keep mask of its maps.
struct CompareInputs {
  Tensor queries, keys, values, valid_lens, keep;
  int64_t d = 0;
};

CompareInputs inputs_of(const SceneRun& run) {
  const auto& in = run.inputs;
  CompareInputs out{in.at("queries"), in.at("keys"), in.at("values"), in.at("valid_lens"), {}};
  out.d = out.queries.size(2);
  const int64_t num_queries = out.queries.size(1), num_keys = out.keys.size(1);
  out.keep = expand(nn::sequence_mask(out.valid_lens, num_keys), {num_queries, num_keys});
  return out;
}

TEST(CompareScreen, EveryCellHasTheColourOfTheLibrarysNumbers) {
  SceneRun run = run_scene("compare");
  ASSERT_EQ(run.exit_code, 0);
  const auto& in = run.inputs;
  const auto [queries, keys, values, valid_lens, keep, d] = inputs_of(run);
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
  // q, k and v themselves, beside the scores.
  EXPECT_TRUE(cells_match(run, "compare/queries", squeeze(queries, 0)));
  EXPECT_TRUE(cells_match(run, "compare/keys", squeeze(keys, 0)));
  EXPECT_TRUE(cells_match(run, "compare/values", squeeze(values, 0)));

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

// Another pair of the table's functions (--set compare.scoring=additive,general):
// every map is that pair's, each function the table's class with the
// parameters the scene drew, and the score maps share one colour scale.
TEST(CompareScreen, AnyPairOfTheTablesFunctions) {
  const std::array<std::string, 2> pair = {"additive", "general"};
  SceneRun run = run_scene("compare", 4, {"--set", "compare.scoring=additive,general"});
  ASSERT_EQ(run.exit_code, 0);
  const auto& in = run.inputs;
  const auto [queries, keys, values, valid_lens, keep, d] = inputs_of(run);
  EXPECT_EQ(in.count("general.W_a.weight"), 1u) << "general's parameters are dumped under its name";
  std::array<Tensor, 2> weights;
  for (size_t m = 0; m < 2; ++m) {
    const auto parameters = with_prefix(in, pair[m] + ".");
    auto function = nn::make_scoring_function(
        pair[m], {.query_size = d, .key_size = d, .num_hiddens = 8, .value_size = values.size(2)});
    function->load_state_dict(parameters);
    function->eval();
    const nn::AttentionMemory memory = function->remember(keys, values);
    const Tensor output = squeeze(function->attend(queries, memory, valid_lens), 0);
    weights[m] = squeeze(function->attention_weights(), 0);
    const Tensor scores = squeeze(function->scores(queries, memory), 0);
    EXPECT_TRUE(cells_match(run, "compare/" + pair[m] + "_scores", scores, keep)) << pair[m];
    EXPECT_TRUE(cells_match(run, "compare/" + pair[m], weights[m], keep)) << pair[m];
    EXPECT_TRUE(cells_match(run, "compare/" + pair[m] + "_output", output)) << pair[m];
  }
  EXPECT_TRUE(cells_match(run, "compare/difference", weights[0] - weights[1], keep));
  EXPECT_EQ(find_map(run, "compare/additive_scores").scale.hi,
            find_map(run, "compare/general_scores").scale.hi);
  // A pair must show the learner a difference.
  EXPECT_GT(max(abs(weights[0] - weights[1])).item(), 0.05);
}

// The arithmetic panel works out the selected cell's score for each function
// of a pair with that function's parameters: its result (--stats) is the
// library's score, for every function of the table.
TEST(CompareScreen, TheArithmeticPanelGivesTheLibrarysScore) {
  for (const std::array<std::string, 2>& pair : {std::array<std::string, 2>{"additive", "general"},
                                                 {"dot", "multihead"},
                                                 {"general_scaled", "additive"},
                                                 {"keras_dot", "keras_concat"},
                                                 {"keras_additive", "dot"}}) {
    SCOPED_TRACE(pair[0] + "," + pair[1]);
    SceneRun run = run_scene("compare", 4,
                             {"--stats", "--set", "compare.scoring=" + pair[0] + "," + pair[1],
                              "--set", "compare.cell=2,1"});
    ASSERT_EQ(run.exit_code, 0);
    const auto [queries, keys, values, valid_lens, keep, d] = inputs_of(run);
    const std::map<std::string, double> stats = read_stats(run.output);
    for (const std::string& name : pair) {
      auto function = nn::make_scoring_function(name, {.query_size = d,
                                                       .key_size = d,
                                                       .num_hiddens = 8,
                                                       .num_heads = 2,
                                                       .value_size = values.size(2)});
      function->load_state_dict(with_prefix(run.inputs, name + "."));
      const Tensor scores = squeeze(function->scores(queries, function->remember(keys, values)), 0);
      const double expected = narrow(narrow(scores, 0, 2, 1), 1, 1, 1).item();
      ASSERT_EQ(stats.count("compare_cell_score_" + name), 1u) << run.output;
      EXPECT_NEAR(stats.at("compare_cell_score_" + name), expected, 1e-5) << name;
    }
  }
}

// An unknown name is an error that lists the table, before any frame.
TEST(CompareScreen, AnUnknownScoringFunctionIsRefusedWithTheTable) {
  const SceneRun run = run_viewer("compare", 2, {"--set", "compare.scoring=additive,cosine"});
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.output.find("no scoring function 'cosine'"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("general_scaled"), std::string::npos) << run.output;
}

// The "Try this" notes, each performed through the knobs, and what each says
// happens checked on the maps.
TEST(CompareScreen, EveryTryThisNoteIsTrue) {
  // "Preset 'd2l: all-ones keys': both weight maps go flat": 1/8 in every
  // cell of both, and a zero difference.
  {
    SceneRun run = run_scene("compare", 4, {"--set", "compare.preset=all-ones"});
    ASSERT_EQ(run.exit_code, 0);
    const Tensor flat = full({4, 8}, 1.0 / 8);
    EXPECT_TRUE(cells_match(run, "compare/additive", flat));
    EXPECT_TRUE(cells_match(run, "compare/dot", flat));
    EXPECT_TRUE(cells_match(run, "compare/difference", zeros({4, 8})));
  }
  // "Lower valid_len: the hatched keys get exactly 0 weight, and the rest
  // share 1": keys 3..7 hatched in both maps, every row's weights sum to 1.
  {
    SceneRun run = run_scene("compare", 4, {"--set", "compare.valid_len=3"});
    ASSERT_EQ(run.exit_code, 0);
    const auto [queries, keys, values, valid_lens, keep, d] = inputs_of(run);
    EXPECT_EQ(valid_lens.item(), 3.0);
    nn::DotProductAttention dot;
    dot(queries, keys, values, valid_lens);
    const Tensor weights = squeeze(dot.attention_weights(), 0);
    EXPECT_TRUE(cells_match(run, "compare/dot", weights, keep));
    EXPECT_LT(max(abs(sum(narrow(weights, 1, 0, 3), {1}) - 1.0)).item(), 1e-6);
    EXPECT_EQ(max(abs(narrow(weights, 1, 3, 5))).item(), 0.0);
  }
  // "Raise size d: q . k grows like sqrt(d)": the unscaled products' spread
  // at d = 16 is over twice that at d = 2, while dot's scores keep theirs.
  {
    const auto spread = [](const SceneRun& run) {
      const auto [queries, keys, values, valid_lens, keep, d] = inputs_of(run);
      const Tensor products = bmm(queries, transpose(keys, 1, 2));
      return std::sqrt(mean(products * products).item());
    };
    const SceneRun small = run_scene("compare", 4, {"--set", "compare.size=2"});
    const SceneRun large = run_scene("compare", 4, {"--set", "compare.size=16"});
    ASSERT_EQ(small.exit_code + large.exit_code, 0);
    EXPECT_GT(spread(large), 2 * spread(small));
    EXPECT_LT(spread(large) / std::sqrt(16.0), 2 * spread(small) / std::sqrt(2.0));
  }
  // "Change the seed: it redraws the queries, the keys and every random
  // parameter; dot has none".
  {
    const SceneRun seven = run_scene("compare", 4, {"--set", "compare.seed=7"});
    const SceneRun eight = run_scene("compare", 4, {"--set", "compare.seed=8"});
    ASSERT_EQ(seven.exit_code + eight.exit_code, 0);
    for (const char* name :
         {"queries", "keys", "additive.W_q.weight", "additive.W_k.weight", "additive.w_v.weight"}) {
      EXPECT_GT(max(abs(seven.inputs.at(name) - eight.inputs.at(name))).item(), 0.0) << name;
    }
    for (const auto& [name, tensor] : seven.inputs) EXPECT_NE(name.rfind("dot.", 0), 0u) << name;
  }
}

// A cell that is not two whole numbers inside the maps is refused before any
// frame, naming the knob and what it was given.
TEST(CompareScreen, ABadCellIsRefused) {
  for (const std::string cell : {"a,1", "1", "0,12"}) {
    const SceneRun run = run_viewer("compare", 2, {"--set", "compare.cell=" + cell});
    EXPECT_NE(run.exit_code, 0) << cell;
    EXPECT_NE(run.output.find("compare.cell"), std::string::npos) << run.output;
    EXPECT_NE(run.output.find("got '"), std::string::npos) << run.output;
  }
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
