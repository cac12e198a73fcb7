// Scene "playground": keys and queries are points of the plane (d = 2, as
// d2l's toy keys) that the learner drags with the mouse; every move reruns
// two scoring functions of nn's table (additive and dot by default; any two
// of the table's names) and redraws both weight maps. Each key carries one
// scalar value, so each query's output is one number: the weighted average
// of the values (for a function that does not project them).
//
// Shapes (batch of one): queries [1, Tq, 2], keys [1, Tk, 2], values
// [1, Tk, 1] -> weights [1, Tq, Tk], outputs [1, Tq, 1] (multihead: [1, Tq, h],
// its W_o's width).
#include <imgui.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "heatmap_widget.h"
#include "playground_canvas.h"
#include "scene.h"
#include "scoring_choice.h"

namespace ag::viewer {
namespace {

constexpr int64_t kDim = 2;  // queries and keys are points of the plane

// The starting configurations, each with what it shows: of any scoring
// function, then of dot product and of additive attention, each shown only
// beside its function ("": nothing to add).
struct Preset {
  const char* name;
  const char* note;
  const char* dot_note;
  const char* additive_note;
  std::vector<ImVec2> keys, queries;
  int valid_len;  // -1: all keys
};

std::vector<Preset> make_presets() {
  std::vector<Preset> presets;
  presets.push_back(
      {"scattered keys",
       "Keys point in different directions and have different lengths.",
       "The dot product ranks keys by q . k = |q| |k| cos(angle): long keys pointing the "
       "query's way win.",
       "Additive attention scores with a small random MLP: an opinion of its own, flatter than "
       "the dot product's.",
       {{2.0f, 0.5f}, {-1.5f, 1.8f}, {0.4f, -2.2f}, {-2.2f, -1.0f}, {1.0f, 2.2f}, {-0.3f, 0.6f}},
       {{1.6f, 1.2f}, {-1.2f, -0.6f}, {0.3f, -1.0f}},
       -1});
  presets.push_back(
      {"d2l: all-ones keys",
       "d2l's toy example: ten keys, all equal to (1, 1), and valid_len 2. Every key is the same "
       "point, so within a row every score is the same number, whatever the scoring function; "
       "the softmax of equal numbers is uniform, 1/2 on k0 and k1. Each output is the mean of v0 "
       "and v1 (in d2l, values arange(40) give [2, 3, 4, 5]). Drag the top key off the stack "
       "to break the tie.",
       "",
       "",
       std::vector<ImVec2>(10, ImVec2(1.0f, 1.0f)),
       {{0.8f, -1.3f}, {-1.5f, 0.7f}},
       2});
  std::vector<ImVec2> circle;
  for (int i = 0; i < 8; ++i) {
    const float angle = static_cast<float>(i) * 3.14159265f / 4.0f;
    circle.emplace_back(2.4f * std::cos(angle), 2.4f * std::sin(angle));
  }
  presets.push_back(
      {"keys on a circle",
       "Eight keys of the same length.",
       "The dot product now only sees the angle: the key closest in direction wins, and a "
       "longer query (q1) makes the same ranking sharper. Drag a query towards the centre: its "
       "dot-product row turns uniform, since q = 0 scores every key 0.",
       "",
       circle,
       {{1.0f, 0.4f}, {-0.6f, -2.6f}},
       -1});
  presets.push_back(
      {"one key far away",
       "q0 sits among four nearby keys; k4 is far away.",
       "Yet the dot product gives most of q0's weight to the far key k4: it points roughly the "
       "same way and is long. Dot-product attention is not a distance. q1, on the other side "
       "of the origin, gives k4 almost nothing.",
       "",
       {{1.1f, 0.5f}, {0.4f, 1.2f}, {1.3f, -0.1f}, {0.0f, 0.5f}, {2.6f, 2.4f}},
       {{0.75f, 0.8f}, {-1.0f, -0.8f}},
       -1});
  return presets;
}

// [1, n, 2] from points of the plane.
Tensor points_tensor(const std::vector<ImVec2>& points) {
  std::vector<double> values;
  for (const ImVec2& p : points) {
    values.push_back(p.x);
    values.push_back(p.y);
  }
  return tensor(values, {1, static_cast<int64_t>(points.size()), kDim});
}

class PlaygroundScene : public Scene {
 public:
  PlaygroundScene() : presets_(make_presets()) {
    apply_preset();
    rebuild();
  }
  const char* name() const override { return "playground"; }
  const char* label() const override { return "Playground"; }

  // What the library is fed (each function's parameters under its name,
  // "additive.W_k.weight", ...), then two entries for tests that are no
  // inputs: "canvas" says where the points are drawn (a point (x, y) lands at
  // ImGui pixel (c[0] x + c[1], c[2] y + c[3]), so a UI test can grab one) and
  // "shown.*" are the numbers the tables print, by function name: outputs
  // ("shown.dot_outputs", [Tq] or [Tq * h]), scores ("shown.dot_scores", [Tq, Tk]).
  std::map<std::string, Tensor> inputs() const override {
    std::map<std::string, Tensor> out{{"queries", queries_},
                                      {"keys", keys_},
                                      {"values", values_},
                                      {"valid_lens", valid_lens_},
                                      {"canvas", tensor({canvas_.scale(), canvas_.origin().x,
                                                         -canvas_.scale(), canvas_.origin().y},
                                                        {4}, kFloat64)}};
    for (size_t m = 0; m < 2; ++m) {
      if (!functions_[m]) continue;
      for (const auto& [name, p] : functions_[m]->state_dict()) out[pair_[m] + "." + name] = p;
    }
    if (error_.empty()) {
      for (size_t m = 0; m < 2; ++m) {
        out["shown." + pair_[m] + "_outputs"] = reshape(outputs_[m], {-1});
        out["shown." + pair_[m] + "_scores"] = scores_[m];
      }
    }
    return out;
  }

  std::vector<Knob> knobs() override {
    return {
        choice_knob("preset", "the starting points", {"scattered", "all-ones", "circle", "far-key"},
                    [this](int preset) {
                      preset_ = preset;
                      apply_preset();
                      forward();
                    }),
        scoring_pair_knob([this](const ScoringPair& pair) {
          pair_ = pair;
          rebuild();
        })};
  }

  void draw() override {
    ImGui::BeginChild("controls", ImVec2(310, 0), true);
    draw_controls();
    ImGui::EndChild();
    ImGui::SameLine();
    ImGui::BeginChild("canvas", ImVec2(canvas_side(), 0), false);
    draw_canvas();
    if (error_.empty()) draw_outputs();
    ImGui::EndChild();
    ImGui::SameLine();
    ImGui::BeginChild("maps", ImVec2(0, 0), false);
    if (!error_.empty()) {
      show_error(error_);
    } else {
      draw_maps();
    }
    ImGui::EndChild();
  }

 private:
  // ---- state: the points, their values, the knobs, the two functions ----------------
  std::vector<Preset> presets_;
  int preset_ = 0;
  PlaygroundPoints points_;
  int seed_ = 3, hiddens_ = 8;
  ScoringPair pair_ = kDefaultScoringPair;
  std::array<std::unique_ptr<nn::ScoringFunction>, 2> functions_;
  Tensor queries_, keys_, values_, valid_lens_;
  // Per function: weights and scores [Tq, Tk] (the scores before the mask
  // and the softmax), outputs [Tq, context width].
  std::array<Tensor, 2> weights_, scores_, outputs_;
  double additive_cap_ = 0;  // sum |w_v|: what an additive score never exceeds
  std::string error_;

  // Whether `name` is one of the two functions shown.
  bool shows(const char* name) const { return pair_[0] == name || pair_[1] == name; }

  // Puts the points of the chosen preset on the canvas; values are the key
  // indices (0, 1, 2, ...), as d2l's arange values, so an output reads as
  // "which key, on average".
  void apply_preset() {
    const Preset& preset = presets_[static_cast<size_t>(preset_)];
    points_.keys = preset.keys;
    points_.queries = preset.queries;
    points_.values.clear();
    for (size_t i = 0; i < points_.keys.size(); ++i)
      points_.values.push_back(static_cast<float>(i));
    points_.valid_len =
        preset.valid_len < 0 ? static_cast<int>(points_.keys.size()) : preset.valid_len;
    points_.selected_query = 0;
  }

  // Both functions from the table, each drawing its parameters from the same
  // seed (the same seed and h always give the same functions). One head: a
  // multihead's weights are then the softmax of the one score row the table
  // prints. A pair that cannot be built shows its error until the next one.
  void rebuild() {
    error_.clear();
    try {
      for (size_t m = 0; m < 2; ++m) {
        manual_seed(static_cast<uint64_t>(seed_));
        functions_[m] = nn::make_scoring_function(
            pair_[m],
            {.query_size = kDim, .key_size = kDim, .num_hiddens = hiddens_, .value_size = 1});
        functions_[m]->eval();
      }
    } catch (const Error& e) {
      error_ = e.what();
      functions_ = {};
    }
    forward();
  }

  // Both functions on the current points: runs after every change.
  void forward() {
    const int64_t num_keys = static_cast<int64_t>(points_.keys.size());
    queries_ = points_tensor(points_.queries);
    keys_ = points_tensor(points_.keys);
    values_ =
        tensor(std::vector<double>(points_.values.begin(), points_.values.end()), {1, num_keys, 1});
    valid_lens_ = tensor({static_cast<double>(points_.valid_len)}, {1}, kInt64);
    if (!functions_[0] || !functions_[1]) return;  // rebuild()'s error stays on screen
    error_.clear();
    try {
      NoGradGuard no_grad;
      for (size_t m = 0; m < 2; ++m) {
        nn::ScoringFunction& function = *functions_[m];
        const nn::AttentionMemory memory = function.remember(keys_, values_);
        // The batch has one item: drop it for the [Tq, Tk] maps and [Tq, 1] outputs.
        outputs_[m] = squeeze(function.attend(queries_, memory, valid_lens_), 0);
        weights_[m] = squeeze(function.attention_weights(), 0);
        scores_[m] = squeeze(function.scores(queries_, memory), 0);
        // Additive: w_v . tanh(W_q q + W_k k); |tanh| <= 1 caps it at sum |w_v|.
        if (pair_[m] == "additive") {
          additive_cap_ = sum(abs(function.state_dict().at("w_v.weight"))).item();
        }
      }
    } catch (const Error& e) {
      error_ = e.what();
    }
  }

  // ---- panel: the knobs --------------------------------------------------------------
  void draw_controls() {
    ImGui::TextUnformatted("Scoring functions (nn's table)");
    if (draw_scoring_pair_choice(pair_)) rebuild();
    ImGui::Separator();
    ImGui::TextUnformatted("Start from");
    if (ImGui::BeginCombo("preset", presets_[static_cast<size_t>(preset_)].name)) {
      for (int i = 0; i < static_cast<int>(presets_.size()); ++i) {
        if (ImGui::Selectable(presets_[static_cast<size_t>(i)].name, i == preset_)) {
          preset_ = i;
          apply_preset();
          forward();
        }
      }
      ImGui::EndCombo();
    }
    if (ImGui::Button("reset points")) {
      apply_preset();
      forward();
    }
    ImGui::Separator();

    ImGui::Text("Keys Tk = %zu, queries Tq = %zu", points_.keys.size(), points_.queries.size());
    ImGui::BeginDisabled(points_.keys.size() >= static_cast<size_t>(PlaygroundPoints::kMaxKeys));
    if (ImGui::Button("+ key")) {
      points_.add_key(ImVec2(0.0f, -0.5f));
      forward();
    }
    ImGui::EndDisabled();
    ImGui::SameLine();
    ImGui::BeginDisabled(points_.keys.size() <= 1);
    if (ImGui::Button("- key")) {
      points_.remove_key(points_.keys.size() - 1);
      forward();
    }
    ImGui::EndDisabled();
    ImGui::SameLine();
    ImGui::BeginDisabled(points_.queries.size() >=
                         static_cast<size_t>(PlaygroundPoints::kMaxQueries));
    if (ImGui::Button("+ query")) {
      points_.add_query(ImVec2(-0.5f, 0.5f));
      forward();
    }
    ImGui::EndDisabled();
    ImGui::SameLine();
    ImGui::BeginDisabled(points_.queries.size() <= 1);
    if (ImGui::Button("- query")) {
      points_.remove_query(points_.queries.size() - 1);
      forward();
    }
    ImGui::EndDisabled();
    if (ImGui::SliderInt("valid_len", &points_.valid_len, 0,
                         static_cast<int>(points_.keys.size()))) {
      forward();
    }
    ImGui::Separator();

    ImGui::TextUnformatted("Values (one number per key)");
    for (size_t i = 0; i < points_.values.size(); ++i) {
      char label[32];
      std::snprintf(label, sizeof label, "v%zu", i);
      if (ImGui::DragFloat(label, &points_.values[i], 0.05f, -10.0f, 10.0f, "%.2f")) forward();
    }
    ImGui::Separator();

    ImGui::TextUnformatted("Parameters (any function's that has them)");
    bool changed = ImGui::SliderInt("hiddens h", &hiddens_, 1, 32);
    changed |= ImGui::SliderInt("seed", &seed_, 0, 99);
    if (changed) rebuild();
    ImGui::Separator();
    const char* const line_sources[] = {pair_[0].c_str(), pair_[1].c_str()};
    ImGui::Combo("lines show", &line_source_, line_sources, IM_ARRAYSIZE(line_sources));
    ImGui::Checkbox("numbers in cells", &show_values_);
    ImGui::Separator();
    draw_notes();
  }

  // What the preset shows and what to try: what is said of dot product or
  // additive attention only beside that function.
  void draw_notes() const {
    const Preset& preset = presets_[static_cast<size_t>(preset_)];
    std::string note = preset.note;
    if (shows("dot") && *preset.dot_note) note += std::string(" ") + preset.dot_note;
    if (shows("additive") && *preset.additive_note) note += std::string(" ") + preset.additive_note;
    show_note(note.c_str());
    ImGui::Spacing();
    std::string try_this =
        "Try: drag a query along the direction of a key, away from the origin, and watch its "
        "rows.";
    if (shows("dot")) {
      try_this +=
          " The dot product grows with the query's length, so its row sharpens without limit.";
    }
    if (shows("additive")) {
      try_this +=
          " Additive attention passes W_q q + W_k k through tanh, which saturates, so its row "
          "stops changing.";
    }
    try_this +=
        "\nRight-click the canvas to add or remove points; valid_len 0 masks every key, and "
        "d2l's -1e6 then makes the row uniform.";
    show_note(try_this.c_str());
  }

  // ---- panel: the canvas where points are dragged ----------------------------------------
  PlaygroundCanvas canvas_;
  int line_source_ = 1;  // whose weights the lines show: the second's (dot's, by default)
  bool show_values_ = false;

  // A square as tall as the tab leaves for it under the outputs table
  // (up to kMaxQueries rows), and at least 45% of the width to the maps.
  float canvas_side() const {
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float table = (PlaygroundPoints::kMaxQueries + 4) * ImGui::GetFrameHeightWithSpacing();
    return std::floor(std::min(avail.x * 0.55f, avail.y - table));
  }

  void draw_canvas() {
    if (canvas_.interact(points_, ImGui::GetContentRegionAvail().x)) forward();
    canvas_.paint(points_, error_.empty() ? weights_[static_cast<size_t>(line_source_)] : Tensor());
    if (canvas_.menu(points_)) forward();
  }

  // ---- panel: each query's output ----------------------------------------------------------
  // A function's number in its colour; greyed (a masked key's) in the text's.
  static void colored_number(size_t m, double value, bool greyed) {
    if (greyed) {
      ImGui::Text("%.3f", value);
    } else {
      ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(kScoringColors[m]), "%.3f", value);
    }
  }

  void draw_outputs() {
    show_note(
        "Circles: keys, coloured by their value. Diamonds: queries; the filled one is selected "
        "and its lines show its weights (thicker = more).");
    ImGui::TextUnformatted("Outputs: sum_j weight_j v_j, one number per query");
    if (!ImGui::BeginTable("outputs", 4, ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg)) return;
    ImGui::TableSetupColumn("query");
    ImGui::TableSetupColumn("position");
    for (const std::string& name : pair_) ImGui::TableSetupColumn(name.c_str());
    ImGui::TableHeadersRow();
    // A function that projects the values (multihead) has a wider output:
    // its column says how wide instead.
    const std::array<std::vector<double>, 2> outputs = {outputs_[0].to_vector(),
                                                        outputs_[1].to_vector()};
    for (size_t i = 0; i < points_.queries.size(); ++i) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      char label[32];
      std::snprintf(label, sizeof label, "q%zu", i);
      if (ImGui::Selectable(label, static_cast<int>(i) == points_.selected_query,
                            ImGuiSelectableFlags_SpanAllColumns)) {
        points_.selected_query = static_cast<int>(i);
      }
      ImGui::TableNextColumn();
      ImGui::Text("(%.2f, %.2f)", points_.queries[i].x, points_.queries[i].y);
      for (size_t m = 0; m < 2; ++m) {
        ImGui::TableNextColumn();
        const int64_t width = outputs_[m].size(1);
        if (width == 1) {
          colored_number(m, outputs[m][i], false);
        } else {
          ImGui::TextDisabled("%lld numbers", static_cast<long long>(width));
        }
      }
    }
    ImGui::EndTable();
  }

  // ---- panel: the two weight maps ----------------------------------------------------------
  void draw_maps() {
    // One scale for both maps, 0 to the largest weight: equal colours mean equal weights.
    const double top = std::max(max(weights_[0]).item(), max(weights_[1]).item());
    const viz::ColorScale scale{viz::Colormap::Viridis, 0.0, top > 0 ? top : 1.0};
    const int64_t num_queries = static_cast<int64_t>(points_.queries.size());
    const int64_t num_keys = static_cast<int64_t>(points_.keys.size());
    const Tensor keep = expand(nn::sequence_mask(valid_lens_, num_keys), {num_queries, num_keys});
    // The two maps one above the other, sharing one colour bar on their right.
    const float bar_width = 70.0f;
    const ImVec2 map_size(ImGui::GetContentRegionAvail().x - bar_width,
                          std::floor(ImGui::GetContentRegionAvail().y * 0.3f));
    ImGui::TextWrapped("Attention weights (rows sum to 1; hatched: past valid_len)");
    ImGui::BeginGroup();
    for (size_t m = 0; m < 2; ++m) {
      draw_heatmap({"playground/" + pair_[m], pair_[m] + " " + describe(weights_[m]), weights_[m],
                    keep, scale, "Keys", "Queries", "query", "key", 64, show_values_},
                   map_size);
    }
    ImGui::EndGroup();
    ImGui::SameLine();
    draw_colorbar("weights bar", scale, 200);
    draw_scores();
    draw_functions();
  }

  // ---- panel: each function as the table builds it ------------------------------------------
  void draw_functions() const {
    ImGui::Separator();
    for (size_t m = 0; m < 2; ++m) draw_untrained_function(m, pair_[m], *functions_[m]);
    show_note(
        "Both as nn's table builds them for points of the plane (q and k: 2 numbers), with h "
        "hidden units where they have any, and one head. weights = masked_softmax(scores, "
        "valid_len); output = sum_j weight_j v_j (a function that projects the values, as "
        "multihead's W_v and W_o do, outputs the projection instead).");
  }

  // ---- panel: the selected query's scores, before and after the softmax -----------------
  void draw_scores() {
    const size_t q = static_cast<size_t>(points_.selected_query);
    ImGui::Separator();
    ImGui::TextWrapped("Query q%zu: each key's score before the softmax and weight after it", q);
    const size_t num_keys = points_.keys.size();
    if (!ImGui::BeginTable("scores", 5, ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg)) return;
    ImGui::TableSetupColumn("key");
    // Short headers: the panel is about 300 pixels wide in a 1024-pixel window.
    for (const std::string& name : pair_) {
      ImGui::TableSetupColumn(name.c_str());
      ImGui::TableSetupColumn("weight");
    }
    ImGui::TableHeadersRow();
    const std::array<std::vector<double>, 2> scores = {scores_[0].to_vector(),
                                                       scores_[1].to_vector()},
                                             weights = {weights_[0].to_vector(),
                                                        weights_[1].to_vector()};
    for (size_t j = 0; j < num_keys; ++j) {
      const size_t k = q * num_keys + j;
      ImGui::TableNextRow();
      // A masked key's row is greyed (its weights are 0).
      const bool masked = static_cast<int>(j) >= points_.valid_len;
      if (masked) ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetColorU32(ImGuiCol_TextDisabled));
      ImGui::TableNextColumn();
      ImGui::Text("k%zu", j);
      for (size_t m = 0; m < 2; ++m) {
        ImGui::TableNextColumn();
        colored_number(m, scores[m][k], masked);
        ImGui::TableNextColumn();
        colored_number(m, weights[m][k], masked);
      }
      if (masked) ImGui::PopStyleColor();
    }
    ImGui::EndTable();
    std::string note;
    if (shows("additive")) {
      char cap[160];
      std::snprintf(cap, sizeof cap,
                    "An additive score never leaves [-%.2f, %.2f] (sum |w_v|: tanh is at most "
                    "1). ",
                    additive_cap_, additive_cap_);
      note += cap;
    }
    if (shows("dot")) note += "A dot score has no bound. ";
    note += "Masked keys (grey rows) keep their score but get the book's -1e6 before the softmax.";
    show_note(note.c_str());
  }
};

}  // namespace

std::unique_ptr<Scene> make_playground_scene() {
  return std::make_unique<PlaygroundScene>();
}

}  // namespace ag::viewer
