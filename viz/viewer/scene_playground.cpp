// Scene "playground": keys and queries are points of the plane (d = 2, as
// d2l's toy keys) that the learner drags with the mouse; every move reruns
// AdditiveAttention and DotProductAttention and redraws both weight maps.
// Each key carries one scalar value, so each query's output is one number:
// the weighted average of the values.
//
// Shapes (batch of one): queries [1, Tq, 2], keys [1, Tk, 2], values
// [1, Tk, 1] -> weights [1, Tq, Tk], outputs [1, Tq, 1].
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <vector>

#include "heatmap_widget.h"
#include "playground_canvas.h"
#include "scene.h"

namespace ag::viewer {
namespace {

constexpr int64_t kDim = 2;  // queries and keys are points of the plane

// The starting configurations, each with what it shows.
struct Preset {
  const char* name;
  const char* note;
  std::vector<ImVec2> keys, queries;
  int valid_len;  // -1: all keys
};

std::vector<Preset> make_presets() {
  std::vector<Preset> presets;
  presets.push_back(
      {"scattered keys",
       "Keys point in different directions and have different lengths. The dot product ranks "
       "keys by q . k = |q| |k| cos(angle): long keys pointing the query's way win. Additive "
       "attention scores with a small random MLP, so it has its own, flatter opinion.",
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
       "Eight keys of the same length. The dot product now only sees the angle: the key closest "
       "in direction wins, and a longer query (q1) makes the same ranking sharper. Drag a query "
       "towards the centre: its row turns uniform, since q = 0 scores every key 0.",
       circle,
       {{1.0f, 0.4f}, {-0.6f, -2.6f}},
       -1});
  presets.push_back(
      {"one key far away",
       "q0 sits among four nearby keys, yet the dot product gives most of its weight to the far "
       "key k4: it points roughly the same way and is long. Dot-product attention is not a "
       "distance. q1, on the other side of the origin, gives k4 almost nothing.",
       {{1.1f, 0.5f}, {0.4f, 1.2f}, {1.3f, -0.1f}, {0.0f, 0.5f}, {2.6f, 2.4f}},
       {{0.75f, 0.8f}, {-1.0f, -0.8f}},
       -1});
  return presets;
}

// Which module's weights the lines from the selected query show.
const char* const kLineSources[] = {"dot product", "additive"};

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
    rebuild_additive();
  }
  const char* name() const override { return "playground"; }
  const char* label() const override { return "Playground"; }

  // What the library is fed, then two entries for tests that are no inputs:
  // "canvas" says where the points are drawn (a point (x, y) lands at ImGui
  // pixel (c[0] x + c[1], c[2] y + c[3]), so a UI test can grab one) and
  // "shown.*" are the numbers the tables print: outputs [Tq], scores [Tq, Tk].
  std::map<std::string, Tensor> inputs() const override {
    std::map<std::string, Tensor> out{{"queries", queries_},
                                      {"keys", keys_},
                                      {"values", values_},
                                      {"valid_lens", valid_lens_},
                                      {"canvas", tensor({canvas_.scale(), canvas_.origin().x,
                                                         -canvas_.scale(), canvas_.origin().y},
                                                        {4}, kFloat64)}};
    for (const auto& [name, p] : additive_->state_dict()) out["additive." + name] = p;
    if (error_.empty()) {
      out["shown.additive_outputs"] = reshape(additive_out_, {-1});
      out["shown.dot_outputs"] = reshape(dot_out_, {-1});
      out["shown.additive_scores"] = additive_scores_;
      out["shown.dot_scores"] = dot_scores_;
    }
    return out;
  }

  std::vector<Knob> knobs() override {
    return {choice_knob("preset", "the starting points",
                        {"scattered", "all-ones", "circle", "far-key"}, [this](int preset) {
                          preset_ = preset;
                          apply_preset();
                          forward();
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
  // ---- state: the points, their values, the knobs, the modules ---------------------
  std::vector<Preset> presets_;
  int preset_ = 0;
  PlaygroundPoints points_;
  int seed_ = 3, hiddens_ = 8;
  std::unique_ptr<nn::AdditiveAttention> additive_;
  nn::DotProductAttention dot_;
  Tensor queries_, keys_, values_, valid_lens_;
  Tensor additive_weights_, dot_weights_, additive_out_, dot_out_;
  // The scores before the softmax, [Tq, Tk], recomputed from the modules'
  // formulas for the scores table, and the cap on additive scores.
  Tensor additive_scores_, dot_scores_;
  double additive_cap_ = 0;
  std::string error_;

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

  // Fresh additive parameters: the same seed and h always give the same module.
  // (A module that cannot be built keeps the old one, so inputs() stays valid.)
  void rebuild_additive() {
    try {
      manual_seed(static_cast<uint64_t>(seed_));
      additive_ = std::make_unique<nn::AdditiveAttention>(kDim, kDim, hiddens_);
    } catch (const Error& e) {
      error_ = e.what();
      return;
    }
    additive_->eval();
    dot_.eval();
    forward();
  }

  // Both modules on the current points: runs after every change.
  void forward() {
    error_.clear();
    try {
      NoGradGuard no_grad;
      const int64_t num_keys = static_cast<int64_t>(points_.keys.size());
      queries_ = points_tensor(points_.queries);
      keys_ = points_tensor(points_.keys);
      values_ = tensor(std::vector<double>(points_.values.begin(), points_.values.end()),
                       {1, num_keys, 1});
      valid_lens_ = tensor({static_cast<double>(points_.valid_len)}, {1}, kInt64);
      // The batch has one item: drop it for the [Tq, Tk] maps and [Tq, 1] outputs.
      additive_out_ = squeeze((*additive_)(queries_, keys_, values_, valid_lens_), 0);
      dot_out_ = squeeze(dot_(queries_, keys_, values_, valid_lens_), 0);
      additive_weights_ = squeeze(additive_->attention_weights(), 0);
      dot_weights_ = squeeze(dot_.attention_weights(), 0);
      // Additive: w_v . tanh(W_q q + W_k k); |tanh| <= 1 caps it at sum |w_v|.
      const Tensor w_v = reshape(additive_->w_v.weight, {-1});
      additive_scores_ = squeeze(additive_scores(linear(queries_, additive_->W_q.weight),
                                                 linear(keys_, additive_->W_k.weight), w_v),
                                 0);
      additive_cap_ = sum(abs(w_v)).item();
      dot_scores_ = squeeze(matmul(queries_, transpose(keys_, 1, 2)), 0) / std::sqrt(double{kDim});
    } catch (const Error& e) {
      error_ = e.what();
    }
  }

  // ---- panel: the knobs --------------------------------------------------------------
  void draw_controls() {
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

    ImGui::TextUnformatted("Additive attention's MLP");
    bool rebuild = ImGui::SliderInt("hiddens h", &hiddens_, 1, 32);
    rebuild |= ImGui::SliderInt("seed", &seed_, 0, 99);
    if (rebuild) rebuild_additive();
    ImGui::Separator();
    ImGui::Combo("lines show", &line_source_, kLineSources, IM_ARRAYSIZE(kLineSources));
    ImGui::Checkbox("numbers in cells", &show_values_);
    ImGui::Separator();
    show_note(presets_[static_cast<size_t>(preset_)].note);
    ImGui::Spacing();
    show_note(
        "Try: drag a query along the direction of a key, away from the origin. The dot "
        "product grows with the query's length, so its row sharpens without limit; additive "
        "attention passes W_q q + W_k k through tanh, which saturates, so its row stops "
        "changing.\n"
        "Right-click the canvas to add or remove points; valid_len 0 masks every key, and d2l's "
        "-1e6 then makes the row uniform.");
    ImGui::Spacing();
    show_note(
        "Additive: w_v . tanh(W_q q + W_k k), h hidden units, random (untrained) parameters.\n"
        "Dot product: q . k / sqrt(2).\n"
        "weights = masked_softmax(scores, valid_len); output = sum_j weight_j v_j.");
  }

  // ---- panel: the canvas where points are dragged ----------------------------------------
  PlaygroundCanvas canvas_;
  int line_source_ = 0;
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
    const Tensor& weights = line_source_ == 0 ? dot_weights_ : additive_weights_;
    canvas_.paint(points_, error_.empty() ? weights : Tensor());
    if (canvas_.menu(points_)) forward();
  }

  // ---- panel: each query's output ----------------------------------------------------------
  void draw_outputs() {
    show_note(
        "Circles: keys, coloured by their value. Diamonds: queries; the filled one is selected "
        "and its lines show its weights (thicker = more).");
    ImGui::TextUnformatted("Outputs: sum_j weight_j v_j, one number per query");
    if (!ImGui::BeginTable("outputs", 4, ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg)) return;
    ImGui::TableSetupColumn("query");
    ImGui::TableSetupColumn("position");
    ImGui::TableSetupColumn("additive");
    ImGui::TableSetupColumn("dot product");
    ImGui::TableHeadersRow();
    const std::vector<double> additive = additive_out_.to_vector(), dot = dot_out_.to_vector();
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
      ImGui::TableNextColumn();
      ImGui::Text("%.3f", additive[i]);
      ImGui::TableNextColumn();
      ImGui::Text("%.3f", dot[i]);
    }
    ImGui::EndTable();
  }

  // ---- panel: the two weight maps ----------------------------------------------------------
  void draw_maps() {
    // One scale for both maps, 0 to the largest weight: equal colours mean equal weights.
    const double top = std::max(max(additive_weights_).item(), max(dot_weights_).item());
    const viz::ColorScale scale{viz::Colormap::Viridis, 0.0, top > 0 ? top : 1.0};
    const int64_t num_queries = static_cast<int64_t>(points_.queries.size());
    const int64_t num_keys = static_cast<int64_t>(points_.keys.size());
    const Tensor keep = expand(sequence_mask(valid_lens_, num_keys), {num_queries, num_keys});
    // The two maps one above the other, sharing one colour bar on their right.
    const float bar_width = 70.0f;
    const ImVec2 map_size(ImGui::GetContentRegionAvail().x - bar_width,
                          std::floor(ImGui::GetContentRegionAvail().y * 0.3f));
    ImGui::TextWrapped("Attention weights (rows sum to 1; hatched: past valid_len)");
    ImGui::BeginGroup();
    draw_heatmap(
        {"playground/additive", "additive " + describe(additive_weights_), additive_weights_, keep,
         scale, "Keys", "Queries", "query", "key", 64, show_values_},
        map_size);
    draw_heatmap({"playground/dot", "dot product " + describe(dot_weights_), dot_weights_, keep,
                  scale, "Keys", "Queries", "query", "key", 64, show_values_},
                 map_size);
    ImGui::EndGroup();
    ImGui::SameLine();
    draw_colorbar("weights bar", scale, 200);
    draw_scores();
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
    ImGui::TableSetupColumn("dot");
    ImGui::TableSetupColumn("weight");
    ImGui::TableSetupColumn("additive");
    ImGui::TableSetupColumn("weight");
    ImGui::TableHeadersRow();
    const std::vector<double> dot_scores = dot_scores_.to_vector(),
                              additive_scores = additive_scores_.to_vector(),
                              dot_weights = dot_weights_.to_vector(),
                              additive_weights = additive_weights_.to_vector();
    for (size_t j = 0; j < num_keys; ++j) {
      const size_t k = q * num_keys + j;
      ImGui::TableNextRow();
      // A masked key's row is greyed (its weights are 0).
      const bool masked = static_cast<int>(j) >= points_.valid_len;
      if (masked) ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetColorU32(ImGuiCol_TextDisabled));
      ImGui::TableNextColumn();
      ImGui::Text("k%zu", j);
      ImGui::TableNextColumn();
      ImGui::Text("%.3f", dot_scores[k]);
      ImGui::TableNextColumn();
      ImGui::Text("%.3f", dot_weights[k]);
      ImGui::TableNextColumn();
      ImGui::Text("%.3f", additive_scores[k]);
      ImGui::TableNextColumn();
      ImGui::Text("%.3f", additive_weights[k]);
      if (masked) ImGui::PopStyleColor();
    }
    ImGui::EndTable();
    char note[256];
    std::snprintf(note, sizeof note,
                  "An additive score never leaves [-%.2f, %.2f] (sum |w_v|: tanh is at most 1); "
                  "a dot score has no bound. Masked keys (grey rows) keep their score but get "
                  "the book's -1e6 before the softmax.",
                  additive_cap_, additive_cap_);
    show_note(note);
  }
};

}  // namespace

std::unique_ptr<Scene> make_playground_scene() {
  return std::make_unique<PlaygroundScene>();
}

}  // namespace ag::viewer
