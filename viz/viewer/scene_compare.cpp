// Scene "compare": the same queries, keys and values through d2l's
// AdditiveAttention and DotProductAttention, both weight maps, their
// difference and both outputs side by side.
//
// Shapes (batch of one): queries [1, Tq, d], keys [1, Tk, d],
// values [1, Tk, v] -> weights [1, Tq, Tk], outputs [1, Tq, v].
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <memory>

#include "heatmap_widget.h"
#include "scene.h"

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
    "scores highest on the key that points the same way. Additive attention learns its own "
    "notion of match through W_q, W_k and w_v; with random parameters it need not prefer "
    "the copy."};

class CompareScene : public Scene {
 public:
  CompareScene() { rebuild(); }
  const char* name() const override { return "compare"; }
  const char* label() const override { return "Compare"; }

  std::map<std::string, Tensor> inputs() const override {
    std::map<std::string, Tensor> out{
        {"queries", queries_}, {"keys", keys_}, {"values", values_}, {"valid_lens", valid_lens_}};
    for (const auto& [name, p] : additive_->state_dict()) out["additive." + name] = p;
    return out;
  }

  std::vector<Knob> knobs() override {
    return {
        choice_knob("preset", "where the inputs come from", {"distinct", "all-ones", "aligned"},
                    [this](int preset) {
                      preset_ = preset;
                      rebuild();
                    }),
        number_knob("seed", "the random inputs and parameters", 0, 99, true, [this](double seed) {
          seed_ = static_cast<int>(seed);
          rebuild();
        })};
  }

  void draw() override {
    draw_panes(
        320, [&] { draw_controls(); }, error_, [&] { draw_maps(); });
  }

 private:
  // ---- state: the knobs, the inputs they make, the two modules -----------------
  int preset_ = static_cast<int>(Preset::DistinctKeys);
  int num_queries_ = 4, num_keys_ = 8, dim_ = 2, hiddens_ = 8, valid_len_ = 8;
  int seed_ = 7;
  float dropout_ = 0.0f;
  bool training_ = false, show_values_ = true;
  Tensor queries_, keys_, values_, valid_lens_;
  std::unique_ptr<nn::AdditiveAttention> additive_;
  std::unique_ptr<nn::DotProductAttention> dot_;
  Tensor additive_scores_, dot_scores_, additive_weights_, dot_weights_, additive_out_, dot_out_;
  std::string error_;
  std::string exported_;  // what the export button last wrote

  // New inputs and parameters from the knobs (seeded: the same knobs give
  // the same numbers), then a forward of both modules.
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
      additive_ = std::make_unique<nn::AdditiveAttention>(dim_, dim_, hiddens_, dropout_);
      dot_ = std::make_unique<nn::DotProductAttention>(dropout_);
      forward();
    } catch (const Error& e) {
      error_ = e.what();
    }
  }

  void forward() {
    NoGradGuard no_grad;
    additive_->train(training_);
    dot_->train(training_);
    // The batch has one item: drop its dim for the [Tq, Tk] and [Tq, v] maps.
    additive_out_ = squeeze((*additive_)(queries_, keys_, values_, valid_lens_), 0);
    dot_out_ = squeeze((*dot_)(queries_, keys_, values_, valid_lens_), 0);
    additive_weights_ = squeeze(additive_->attention_weights(), 0);
    dot_weights_ = squeeze(dot_->attention_weights(), 0);
    // The scores the modules computed inside, recomputed from their
    // parameters to be shown before the mask and the softmax.
    additive_scores_ = squeeze(additive_scores(additive_->W_q(queries_), additive_->W_k(keys_),
                                               reshape(additive_->w_v.weight, {hiddens_})),
                               0);
    dot_scores_ = squeeze(bmm(queries_, transpose(keys_, 1, 2)), 0) / std::sqrt(double(dim_));
  }

  // ---- panel: the knobs -------------------------------------------------------
  void draw_controls() {
    bool changed = false;
    ImGui::TextUnformatted("Inputs");
    changed |= ImGui::Combo("preset", &preset_, kPresetNames, IM_ARRAYSIZE(kPresetNames));
    changed |= ImGui::SliderInt("queries Tq", &num_queries_, 1, 8);
    changed |= ImGui::SliderInt("keys Tk", &num_keys_, 1, 12);
    changed |= ImGui::SliderInt("size d", &dim_, 1, 16);
    changed |= ImGui::SliderInt("valid_len", &valid_len_, 0, num_keys_);
    changed |= ImGui::SliderInt("seed", &seed_, 0, 99);
    ImGui::Separator();
    ImGui::TextUnformatted("Additive attention");
    changed |= ImGui::SliderInt("hiddens h", &hiddens_, 1, 32);
    ImGui::Separator();
    ImGui::TextUnformatted("Dropout (both)");
    changed |= ImGui::SliderFloat("p", &dropout_, 0.0f, 0.9f, "%.2f");
    changed |= ImGui::Checkbox("training mode", &training_);
    if (training_ && dropout_ > 0 && ImGui::Button("new dropout draw")) changed = true;
    ImGui::Checkbox("print values", &show_values_);
    if (changed) rebuild();
    if (error_.empty() && ImGui::Button("export weights as PNG + SVG")) export_weights();
    if (!exported_.empty()) show_note(exported_.c_str());
    ImGui::Separator();
    show_note(kPresetNotes[preset_]);
    ImGui::Spacing();
    show_note(
        "Additive: score(q, k) = w_v . tanh(W_q q + W_k k), a one-hidden-layer MLP (h units).\n"
        "Dot product: score(q, k) = q . k / sqrt(d), no parameters.\n"
        "Both: weights = masked_softmax(scores, valid_len); output = weights @ values.");
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
    options.titles = {"additive", "dot product"};
    options.keep_mask = sequence_mask(valid_lens_, num_keys_);
    const Tensor both =
        reshape(stack({additive_weights_, dot_weights_}), {1, 2, num_queries_, num_keys_});
    try {
      for (const char* path : {"attograd-compare.png", "attograd-compare.svg"}) {
        viz::show_heatmaps(both, path, options);
      }
      exported_ = "wrote attograd-compare.png and attograd-compare.svg";
    } catch (const Error& e) {
      exported_ = e.what();
    }
  }

  // Whether "dot product [4, 8] float32", the longest weights title, fits
  // over a map `width` wide. A wider title widens the map's place on the
  // row and pushes the colour bars out of the window: both weights titles
  // then leave the dtype out.
  bool dtype_fits_in_titles(float width) const {
    const std::string title = "dot product " + describe(dot_weights_);
    const float row_ticks = ImGui::CalcTextSize("0").x + 6.0f;
    return row_ticks + ImGui::CalcTextSize(title.c_str()).x + 8.0f <= width;
  }

  // ---- panel: the maps, in the order attention computes them -------------------
  // scores [Tq, Tk] -> masked softmax -> weights [Tq, Tk] -> weights @ values [Tq, v]
  // Each colour bar sits beside the map it belongs to, level with its cells;
  // the maps of a row share what the bars' labels leave of the width.
  void draw_maps() {
    const Tensor keep = expand(sequence_mask(valid_lens_, num_keys_), {num_queries_, num_keys_});
    const float row_height = std::floor((ImGui::GetContentRegionAvail().y - 30) / 3);
    const float width = ImGui::GetContentRegionAvail().x;
    const float spacing = ImGui::GetStyle().ItemSpacing.x;
    // The width of each of `maps` maps on a row that also holds these bars.
    auto map_size = [&](int maps, std::initializer_list<float> bars) {
      float free = width - spacing * static_cast<float>(maps - 1);
      for (float bar : bars) free -= bar + spacing;
      return ImVec2(std::floor(free / static_cast<float>(maps)), row_height);
    };

    // Row 1: the raw scores, signed, so a diverging map centred on 0.
    ImGui::TextUnformatted("1. Scores: how well each query matches each key (before the mask)");
    const viz::ColorScale additive_scale =
        viz::fit_scale(additive_scores_.to_vector(), viz::Colormap::Diverging);
    const viz::ColorScale dot_scale =
        viz::fit_scale(dot_scores_.to_vector(), viz::Colormap::Diverging);
    const ImVec2 scores_size =
        map_size(2, {colorbar_width(additive_scale), colorbar_width(dot_scale)});
    draw_heatmap(
        {"compare/additive_scores", "additive: w_v . tanh(W_q q + W_k k)", additive_scores_, keep,
         additive_scale, "Keys", "Queries", "query", "key", 48, show_values_},
        scores_size);
    colorbar_beside_last_map("additive scores bar", additive_scale);
    ImGui::SameLine();
    draw_heatmap({"compare/dot_scores", "dot product: q . k / sqrt(d)", dot_scores_, keep,
                  dot_scale, "Keys", "Queries", "query", "key", 48, show_values_},
                 scores_size);
    colorbar_beside_last_map("dot scores bar", dot_scale);

    // Row 2: the weights. One scale for both, from 0 to the largest weight
    // of the two, so that equal colours mean equal weights across them.
    ImGui::TextUnformatted(
        "2. Weights = masked_softmax(scores): each row sums to 1; hatched keys are past valid_len");
    const double top = std::max(max(additive_weights_).item(), max(dot_weights_).item());
    const viz::ColorScale weight_scale{viz::Colormap::Viridis, 0.0, top > 0 ? top : 1.0};
    const Tensor difference = additive_weights_ - dot_weights_;
    const viz::ColorScale difference_scale =
        viz::fit_scale(difference.to_vector(), viz::Colormap::Diverging);
    const ImVec2 weights_size =
        map_size(3, {colorbar_width(weight_scale), colorbar_width(difference_scale)});
    const std::string shape = dtype_fits_in_titles(weights_size.x)
                                  ? describe(dot_weights_)
                                  : shape_str(dot_weights_.shape());
    draw_heatmap({"compare/additive", "additive " + shape, additive_weights_, keep, weight_scale,
                  "Keys", "Queries", "query", "key", 48, show_values_},
                 weights_size);
    ImGui::SameLine();
    draw_heatmap({"compare/dot", "dot product " + shape, dot_weights_, keep, weight_scale, "Keys",
                  "Queries", "query", "key", 48, show_values_},
                 weights_size);
    colorbar_beside_last_map("weights bar", weight_scale);
    ImGui::SameLine();
    draw_heatmap({"compare/difference", "additive - dot product", difference, keep,
                  difference_scale, "Keys", "Queries", "query", "key", 48, show_values_},
                 weights_size);
    colorbar_beside_last_map("difference bar", difference_scale);

    // Row 3: the outputs, one scale for both.
    ImGui::TextUnformatted(
        "3. Outputs = weights @ values: each row a weighted average of value rows");
    std::vector<double> both = additive_out_.to_vector();
    const std::vector<double> dot_values = dot_out_.to_vector();
    both.insert(both.end(), dot_values.begin(), dot_values.end());
    const viz::ColorScale output_scale = viz::fit_scale(both, viz::Colormap::Magma);
    const ImVec2 half(std::floor((width - 160) / 2), row_height);
    draw_heatmap(
        {"compare/additive_output", "additive output " + describe(additive_out_), additive_out_,
         Tensor(), output_scale, "Value features", "Queries", "query", "feature", 48, show_values_},
        half);
    ImGui::SameLine();
    draw_heatmap(
        {"compare/dot_output", "dot-product output " + describe(dot_out_), dot_out_, Tensor(),
         output_scale, "Value features", "Queries", "query", "feature", 48, show_values_},
        half);
    colorbar_beside_last_map("output bar", output_scale);
    ImGui::SameLine();
    ImGui::BeginGroup();
    ImGui::TextUnformatted("Try this");
    show_note(
        "- Hover a cell for its exact value.\n"
        "- Preset 'd2l: all-ones keys': both rows go flat. Why?\n"
        "- Lower valid_len: the hatched keys get exactly 0 weight, and the rest share 1.\n"
        "- Raise size d: dot-product scores grow like sqrt(d) before scaling; the Scaling "
        "tab shows why 1/sqrt(d) is there.\n"
        "- Change the seed: additive's random W_q, W_k, w_v decide what it prefers; dot "
        "product has no parameters to change.");
    ImGui::EndGroup();
  }
};

}  // namespace

std::unique_ptr<Scene> make_compare_scene() {
  return std::make_unique<CompareScene>();
}

}  // namespace ag::viewer
