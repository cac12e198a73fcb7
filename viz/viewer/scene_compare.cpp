// Scene "compare": the same queries, keys and values through two scoring
// functions of nn's table (additive and dot by default; any two of the
// table's names, a program's own included), their scores, both weight maps,
// their difference and both outputs side by side. Each function is the
// table's class itself (nn::make_scoring_function): what it draws is what
// the seq2seq, the d2l modules and attograd-translate compute.
//
// Shapes (batch of one): queries [1, Tq, d], keys [1, Tk, d],
// values [1, Tk, v] -> scores and weights [1, Tq, Tk], outputs [1, Tq, v']
// (v' = v, or h for multihead, whose W_o projects the heads).
#include <imgui.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <initializer_list>
#include <memory>
#include <optional>
#include <ostream>

#include "attograd/nn/scoring.h"
#include "compare_arithmetic.h"
#include "heatmap_widget.h"
#include "scene.h"
#include "scoring_choice.h"

namespace ag::viewer {
namespace {

constexpr int64_t kValueSize = 4;  // v: each value row is 4 numbers, as in d2l's toy example

// Where the inputs come from: the presets a learner starts from.
enum class Preset { DistinctKeys, AllOnesKeys, AlignedKeys };
const char* const kPresetNames[] = {"distinct random keys", "d2l: all-ones keys",
                                    "keys = queries (and more)"};
const char* const kPresetNotes[] = {
    "Queries and keys are independent random vectors, so every query scores the keys "
    "differently, and the two scoring functions disagree on how much.",
    "d2l's toy example uses keys that are all ones. Every key is the same vector, so every "
    "score in a row is the same number, whatever the scoring function; softmax of equal "
    "numbers is uniform: each valid key gets 1 / valid_len. Both maps are flat, and the "
    "difference is zero.",
    "The first keys copy the queries. Dot product rewards alignment and length: a query "
    "scores highest on the key that points the same way. A function with parameters (W_q, "
    "W_k, W_a, ...) has its own notion of match; with random parameters it need not prefer "
    "the copy."};

class CompareScene : public Scene {
 public:
  CompareScene() { rebuild(); }
  const char* name() const override { return "compare"; }
  const char* label() const override { return "Compare"; }

  // The inputs, and each function's parameters under its name
  // ("additive.W_k.weight", ...).
  std::map<std::string, Tensor> inputs() const override {
    std::map<std::string, Tensor> out{
        {"queries", queries_}, {"keys", keys_}, {"values", values_}, {"valid_lens", valid_lens_}};
    for (size_t m = 0; m < 2; ++m) {
      if (!functions_[m]) continue;
      for (const auto& [name, p] : functions_[m]->state_dict()) out[pair_[m] + "." + name] = p;
    }
    return out;
  }

  std::vector<Knob> knobs() override {
    return {choice_knob("preset", "where the inputs come from", {"distinct", "all-ones", "aligned"},
                        [this](int preset) {
                          preset_ = preset;
                          rebuild();
                        }),
            number_knob("seed", "the random inputs and parameters", 0, 99, true,
                        [this](double seed) {
                          seed_ = static_cast<int>(seed);
                          rebuild();
                        }),
            number_knob("valid_len", "keys each query may see (d2l's valid_lens)", 0, 12, true,
                        [this](double length) {
                          valid_len_ = static_cast<int>(length);
                          rebuild();
                        }),
            number_knob("size", "size d of the queries and keys", 1, 16, true,
                        [this](double size) {
                          dim_ = static_cast<int>(size);
                          rebuild();
                        }),
            scoring_pair_knob([this](const ScoringPair& pair) {
              pair_ = pair;
              rebuild();
            }),
            number_knob("heads", "multihead's heads (they divide hiddens h)", 1, 8, true,
                        [this](double heads) {
                          heads_ = static_cast<int>(heads);
                          rebuild();
                        }),
            Knob{"cell", "the (query, key) cell whose scores the panel works out",
                 "two whole numbers i,j from 0 to 11 (default 0,0)",
                 [this](const std::string& value) {
                   const std::vector<std::string> parts = split_list(value);
                   AG_CHECK(parts.size() == 2, "attograd-viewer",
                            "takes i,j, e.g. 1,3; got '" + value + "'");
                   cell_ = {static_cast<int>(knob_number(parts[0], 0, 11, true)),
                            static_cast<int>(knob_number(parts[1], 0, 11, true))};
                 }},
            choice_knob("scores_scale", "the two score maps' colour scales", {"shared", "each"},
                        [this](int each) { shared_score_scale_ = each == 0; })};
  }

  // The panel's score of its cell for each function ("compare_cell_score_additive
  // 0.0123"), and the library's, so that tests hold one to the other; and how
  // many parameter numbers its line counts ("compare_parameters_general 4").
  void print_stats(std::ostream& out) const override {
    const std::array<int, 2> cell = clamped_cell();
    for (size_t m = 0; m < 2 && functions_[m]; ++m) {
      const ScoreArithmetic worked = arithmetic(m, cell);
      if (worked.worked) out << "compare_cell_score_" << pair_[m] << " " << worked.score << "\n";
      out << "compare_parameters_" << pair_[m] << " " << parameter_numbers(*functions_[m]) << "\n";
    }
  }

  void draw() override {
    draw_panes(
        320, [&] { draw_controls(); }, error_, [&] { draw_maps(); });
  }

 private:
  // ---- state: the knobs, the inputs they make, the two functions --------------
  int preset_ = static_cast<int>(Preset::DistinctKeys);
  int num_queries_ = 4, num_keys_ = 8, dim_ = 2, hiddens_ = 8, heads_ = 2, valid_len_ = 8;
  int seed_ = 7;
  static constexpr uint64_t kParameterSeed = 1000;  // the parameters' draws, apart from the inputs'
  float dropout_ = 0.0f;
  bool training_ = false, show_values_ = true, shared_score_scale_ = true;
  ScoringPair pair_ = kDefaultScoringPair;
  Tensor queries_, keys_, values_, valid_lens_;
  std::array<std::unique_ptr<nn::ScoringFunction>, 2> functions_;
  std::array<Tensor, 2> scores_, weights_, outputs_;
  std::string error_;
  std::string exported_;  // what the export button last wrote
  // The cell (query i, key j) the arithmetic panel works out and every map
  // outlines: the one clicked last (or set by the knob), the hovered one
  // while the mouse is over a map.
  std::array<int, 2> cell_ = {0, 0};

  // New inputs and parameters from the knobs (seeded: the same knobs give
  // the same numbers), then a forward of both functions.
  void rebuild() {
    error_.clear();
    try {
      manual_seed(static_cast<uint64_t>(seed_));
      queries_ = randn({1, num_queries_, dim_});
      switch (static_cast<Preset>(preset_)) {
        case Preset::DistinctKeys:
          keys_ = randn({1, num_keys_, dim_});
          break;
        case Preset::AllOnesKeys:
          keys_ = ones({1, num_keys_, dim_});
          break;
        case Preset::AlignedKeys: {
          // Keys 0..Tq-1 are the queries themselves, the rest random.
          const int64_t copies = std::min(num_queries_, num_keys_);
          Tensor rest = randn({1, num_keys_ - copies, dim_});
          keys_ = cat({narrow(queries_, 1, 0, copies), rest}, 1);
          break;
        }
      }
      values_ = reshape(arange(num_keys_ * kValueSize), {1, num_keys_, kValueSize});
      valid_lens_ = tensor({static_cast<double>(std::min(valid_len_, num_keys_))}, {1}, kInt64);
      // The table's classes, each drawing its parameters from the same
      // seed: two functions whose parameters have the same shapes (the
      // library's general and a learner's, scripts/exercise.sh 11 --viewer)
      // get the same numbers, so where their pictures differ, their code does.
      for (size_t m = 0; m < 2; ++m) {
        manual_seed(static_cast<uint64_t>(seed_) + kParameterSeed);
        functions_[m] = nn::make_scoring_function(pair_[m], {.query_size = dim_,
                                                             .key_size = dim_,
                                                             .num_hiddens = hiddens_,
                                                             .num_heads = heads_,
                                                             .dropout = dropout_,
                                                             .value_size = kValueSize});
      }
      forward();
    } catch (const Error& e) {
      error_ = e.what();
    }
  }

  void forward() {
    NoGradGuard no_grad;
    for (size_t m = 0; m < 2; ++m) {
      nn::ScoringFunction& function = *functions_[m];
      function.train(training_);
      const nn::AttentionMemory memory = function.remember(keys_, values_);
      // The batch has one item: drop its dim for the [Tq, Tk] and [Tq, v'] maps.
      outputs_[m] = squeeze(function.attend(queries_, memory, valid_lens_), 0);
      weights_[m] = squeeze(function.attention_weights(), 0);
      // The scores before the mask and the softmax.
      scores_[m] = squeeze(function.scores(queries_, memory), 0);
    }
  }

  // ---- panel: the knobs -------------------------------------------------------
  void draw_controls() {
    bool changed = false;
    ImGui::TextUnformatted("Scoring functions (nn's table)");
    changed |= draw_scoring_pair_choice(pair_);
    ImGui::TextUnformatted("Inputs");
    changed |= ImGui::Combo("preset", &preset_, kPresetNames, IM_ARRAYSIZE(kPresetNames));
    changed |= ImGui::SliderInt("queries Tq", &num_queries_, 1, 8);
    changed |= ImGui::SliderInt("keys Tk", &num_keys_, 1, 12);
    changed |= ImGui::SliderInt("size d", &dim_, 1, 16);
    changed |= ImGui::SliderInt("valid_len", &valid_len_, 0, num_keys_);
    changed |= ImGui::SliderInt("seed", &seed_, 0, 99);
    ImGui::Separator();
    ImGui::TextUnformatted("Parameter sizes");
    changed |= ImGui::SliderInt("hiddens h", &hiddens_, 1, 32);
    changed |= ImGui::SliderInt("heads", &heads_, 1, 8);
    ImGui::Separator();
    ImGui::TextUnformatted("Dropout (both)");
    changed |= ImGui::SliderFloat("p", &dropout_, 0.0f, 0.9f, "%.2f");
    changed |= ImGui::Checkbox("training mode", &training_);
    if (training_ && dropout_ > 0 && ImGui::Button("new dropout draw")) changed = true;
    ImGui::Checkbox("print values", &show_values_);
    ImGui::Checkbox("one colour scale for both score maps", &shared_score_scale_);
    if (changed) rebuild();
    if (error_.empty() && ImGui::Button("export weights as PNG + SVG")) export_weights();
    if (!exported_.empty()) show_note(exported_.c_str());
    ImGui::Separator();
    show_note(kPresetNotes[preset_]);
    ImGui::Spacing();
    // Each function as the table describes it, and what it has learned.
    for (size_t m = 0; m < 2; ++m) {
      if (functions_[m]) draw_untrained_function(m, pair_[m], *functions_[m]);
    }
    show_note(
        "Both: weights = masked_softmax(scores, valid_len); output = weights @ values. "
        "Only the score differs.");
    if (training_ && dropout_ > 0) {
      ImGui::Spacing();
      show_note(
          "Training mode: dropout zeroes weights at random and scales the rest by 1/(1-p) "
          "before they pool the values, so the outputs change with each draw. The maps show "
          "the weights before dropout, as attention_weights() returns them.");
    }
  }

  // Both weight maps as one d2l-style figure, through the same colour maps.
  void export_weights() {
    viz::HeatmapOptions options;
    options.titles = {pair_[0], pair_[1]};
    options.keep_mask = nn::sequence_mask(valid_lens_, num_keys_);
    const Tensor both = reshape(stack({weights_[0], weights_[1]}), {1, 2, num_queries_, num_keys_});
    try {
      for (const char* path : {"attograd-compare.png", "attograd-compare.svg"}) {
        viz::show_heatmaps(both, path, options);
      }
      exported_ = "wrote attograd-compare.png and attograd-compare.svg";
    } catch (const Error& e) {
      exported_ = e.what();
    }
  }

  // Whether "NAME [4, 8] float32", the longest weights title, fits over a
  // map `width` wide. A wider title widens the map's place on the row and
  // pushes the colour bars out of the window: both weights titles then
  // leave the dtype out.
  bool dtype_fits_in_titles(float width) const {
    const std::string& longer = pair_[0].size() > pair_[1].size() ? pair_[0] : pair_[1];
    const std::string title = longer + " " + describe(weights_[0]);
    const float row_ticks = ImGui::CalcTextSize("0").x + 6.0f;
    return row_ticks + ImGui::CalcTextSize(title.c_str()).x + 8.0f <= width;
  }

  // The selected cell, inside the maps (the knobs may have shrunk them).
  std::array<int, 2> clamped_cell() const {
    return {std::clamp(cell_[0], 0, num_queries_ - 1), std::clamp(cell_[1], 0, num_keys_ - 1)};
  }

  ScoreArithmetic arithmetic(size_t m, const std::array<int, 2>& cell) const {
    // [1, T, d] -> row i, [d]
    const auto row = [](const Tensor& x, int i) {
      return reshape(narrow(x, 1, i, 1), {x.size(2)});
    };
    const Tensor query = row(queries_, cell[0]), key = row(keys_, cell[1]);
    return score_arithmetic(pair_[m], *functions_[m], query, key);
  }

  // A white frame around `cell` on every [Tq, Tk] map of this frame, so the
  // same (i, j) can be followed from the scores to the weights.
  void outline_cell(const std::array<int, 2>& cell) const {
    ImDrawList* draw = ImGui::GetWindowDrawList();
    for (const DrawnHeatmap& map : drawn_heatmaps()) {
      if (map.id.rfind("compare/", 0) != 0 || map.rows != num_queries_ || map.cols != num_keys_)
        continue;
      const ImVec2 corner(map.x + map.cell * static_cast<float>(cell[1]),
                          map.y + map.cell * static_cast<float>(cell[0]));
      // black, then white inside it: seen on pale cells and dark ones
      const ImVec2 far(corner.x + map.cell, corner.y + map.cell);
      draw->AddRect(corner, far, IM_COL32(0, 0, 0, 255), 0.0f, 0, 3.0f);
      draw->AddRect(ImVec2(corner.x + 2, corner.y + 2), ImVec2(far.x - 2, far.y - 2),
                    IM_COL32(255, 255, 255, 255), 0.0f, 0, 1.5f);
    }
  }

  // ---- panel: q, k and v themselves -------------------------------------------
  // The three inputs as small maps on the scores' row, right of their bar,
  // one diverging scale for q and k and one for v; left out when the row
  // has no room for them (a small window).
  void draw_inputs(float row_height) {
    ImGui::SameLine();
    const float free = ImGui::GetContentRegionAvail().x;
    const float cell = std::min(24.0f, (row_height - 40) / static_cast<float>(num_keys_));
    const float needed = cell * static_cast<float>(2 * dim_ + kValueSize) + 160;
    if (cell < 8 || free < needed) {
      ImGui::NewLine();
      return;
    }
    const viz::ColorScale qk_scale = fit_scale_over({queries_, keys_}, viz::Colormap::Diverging);
    const viz::ColorScale v_scale = viz::fit_scale(values_.to_vector(), viz::Colormap::Magma);
    const struct {
      const char* id;
      const char* title;
      Tensor matrix;
      const viz::ColorScale& scale;
      const char* rows;
      const char* row_axis;
    } inputs[] = {{"compare/queries", "q", squeeze(queries_, 0), qk_scale, "query", "Tq"},
                  {"compare/keys", "k", squeeze(keys_, 0), qk_scale, "key", "Tk"},
                  {"compare/values", "v", squeeze(values_, 0), v_scale, "key", "Tk"}};
    for (size_t i = 0; i < 3; ++i) {
      if (i > 0) ImGui::SameLine();
      const ImVec2 size(cell * static_cast<float>(inputs[i].matrix.size(1)) + 30, row_height);
      draw_heatmap({inputs[i].id, inputs[i].title, inputs[i].matrix, Tensor(), inputs[i].scale,
                    i < 2 ? "d" : "v", inputs[i].row_axis, inputs[i].rows, "feature", cell, false,
                    /*fit_axis_label=*/true},
                   size);
    }
  }

  // ---- panel: one cell's scores, worked out -------------------------------------
  void draw_arithmetic(const std::array<int, 2>& cell) const {
    ImGui::Text("4. Cell (query %d, key %d), worked out", cell[0], cell[1]);
    for (size_t m = 0; m < 2; ++m) {
      ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(kScoringColors[m]), "%s", pair_[m].c_str());
      const ScoreArithmetic worked = arithmetic(m, cell);
      for (const std::string& line : worked.lines) ImGui::Text("  %s", line.c_str());
      const auto at = [&](const Tensor& map) {
        return narrow(narrow(map, 0, cell[0], 1), 1, cell[1], 1).item();
      };
      const double mapped = at(scores_[m]), weight = at(weights_[m]);
      ImGui::Text("  the map's score %.4f, weight %.4f%s", mapped, weight,
                  worked.worked ? "" : " (no steps known for this function)");
    }
  }

  // ---- panel: the maps, in the order attention computes them -------------------
  // scores [Tq, Tk] -> masked softmax -> weights [Tq, Tk] -> weights @ values [Tq, v']
  // Each colour bar sits beside the map it belongs to, level with its cells;
  // the maps of a row share what the bars' labels leave of the width.
  void draw_maps() {
    const Tensor keep =
        expand(nn::sequence_mask(valid_lens_, num_keys_), {num_queries_, num_keys_});
    const float row_height = std::floor((ImGui::GetContentRegionAvail().y - 30) / 3);
    const float width = ImGui::GetContentRegionAvail().x;
    const float spacing = ImGui::GetStyle().ItemSpacing.x;
    // The cell under the mouse on any [Tq, Tk] map; a click selects it.
    std::optional<std::array<int, 2>> hovered;
    const auto track = [&](const HeatmapHover& hover) {
      if (!hover.active) return;
      hovered = std::array<int, 2>{static_cast<int>(hover.row), static_cast<int>(hover.col)};
      if (ImGui::IsMouseClicked(ImGuiMouseButton_Left)) cell_ = *hovered;
    };
    // The width of each of `maps` maps on a row that also holds these bars.
    auto map_size = [&](int maps, std::initializer_list<float> bars) {
      float free = width - spacing * static_cast<float>(maps - 1);
      for (float bar : bars) free -= bar + spacing;
      return ImVec2(std::floor(free / static_cast<float>(maps)), row_height);
    };

    // Row 1: the raw scores, signed, so a diverging map centred on 0; one
    // scale for both unless asked otherwise, so that a function whose scores
    // are small looks pale beside one whose scores are large.
    ImGui::TextUnformatted("1. Scores: how well each query matches each key (before the mask)");
    std::array<viz::ColorScale, 2> score_scales;
    if (shared_score_scale_) {
      score_scales.fill(fit_scale_over({scores_[0], scores_[1]}, viz::Colormap::Diverging));
    } else {
      for (size_t m = 0; m < 2; ++m)
        score_scales[m] = viz::fit_scale(scores_[m].to_vector(), viz::Colormap::Diverging);
    }
    const ImVec2 scores_size =
        shared_score_scale_
            ? map_size(2, {colorbar_width(score_scales[0])})
            : map_size(2, {colorbar_width(score_scales[0]), colorbar_width(score_scales[1])});
    for (size_t m = 0; m < 2; ++m) {
      if (m > 0) ImGui::SameLine();
      track(draw_heatmap({"compare/" + pair_[m] + "_scores", pair_[m] + " scores", scores_[m], keep,
                          score_scales[m], "Keys", "Queries", "query", "key", 48, show_values_},
                         scores_size));
      if (!shared_score_scale_ || m == 1)
        colorbar_beside_last_map((pair_[m] + " scores bar").c_str(), score_scales[m]);
    }
    draw_inputs(row_height);

    // Row 2: the weights. One scale for both, from 0 to the largest weight
    // of the two, so that equal colours mean equal weights across them.
    ImGui::TextUnformatted(
        "2. Weights = masked_softmax(scores): each row sums to 1; hatched keys are past valid_len");
    const double top = std::max(max(weights_[0]).item(), max(weights_[1]).item());
    const viz::ColorScale weight_scale{viz::Colormap::Viridis, 0.0, top > 0 ? top : 1.0};
    const Tensor difference = weights_[0] - weights_[1];
    const viz::ColorScale difference_scale =
        viz::fit_scale(difference.to_vector(), viz::Colormap::Diverging);
    const ImVec2 weights_size =
        map_size(3, {colorbar_width(weight_scale), colorbar_width(difference_scale)});
    const std::string shape = dtype_fits_in_titles(weights_size.x) ? describe(weights_[0])
                                                                   : shape_str(weights_[0].shape());
    for (size_t m = 0; m < 2; ++m) {
      if (m > 0) ImGui::SameLine();
      track(draw_heatmap({"compare/" + pair_[m], pair_[m] + " " + shape, weights_[m], keep,
                          weight_scale, "Keys", "Queries", "query", "key", 48, show_values_},
                         weights_size));
    }
    colorbar_beside_last_map("weights bar", weight_scale);
    ImGui::SameLine();
    track(draw_heatmap({"compare/difference", pair_[0] + " - " + pair_[1], difference, keep,
                        difference_scale, "Keys", "Queries", "query", "key", 48, show_values_},
                       weights_size));
    colorbar_beside_last_map("difference bar", difference_scale);
    const std::array<int, 2> cell = hovered ? *hovered : clamped_cell();
    outline_cell(cell);

    // Row 3: the outputs, one scale for both.
    ImGui::TextUnformatted(
        "3. Outputs = weights @ values: each row a weighted average of value rows");
    const viz::ColorScale output_scale =
        fit_scale_over({outputs_[0], outputs_[1]}, viz::Colormap::Magma);
    const ImVec2 half(std::floor((width - 160) / 2), row_height);
    for (size_t m = 0; m < 2; ++m) {
      if (m > 0) ImGui::SameLine();
      draw_heatmap(
          {"compare/" + pair_[m] + "_output", pair_[m] + " output " + describe(outputs_[m]),
           outputs_[m], Tensor(), output_scale, "Value features", "Queries", "query", "feature", 48,
           show_values_},
          half);
    }
    colorbar_beside_last_map("output bar", output_scale);
    ImGui::SameLine();
    ImGui::BeginGroup();
    draw_arithmetic(cell);
    ImGui::Spacing();
    ImGui::TextUnformatted("Try this");
    show_note(
        "- Hover a cell for its exact value; click one to keep its arithmetic.\n"
        "- Preset 'd2l: all-ones keys': both weight maps go flat. Why?\n"
        "- Lower valid_len: the hatched keys get exactly 0 weight, and the rest share 1.\n"
        "- Raise size d: q . k grows like sqrt(d) before dot's 1/sqrt(d); the Scaling tab "
        "shows what that would do to the softmax.\n"
        "- Change the seed: it redraws the queries, the keys and every random parameter; a "
        "function without parameters (dot) changes only because its inputs did.\n"
        "- Choose another pair above: any two of the table's functions.");
    ImGui::EndGroup();
  }
};

}  // namespace

std::unique_ptr<Scene> make_compare_scene() {
  return std::make_unique<CompareScene>();
}

}  // namespace ag::viewer
