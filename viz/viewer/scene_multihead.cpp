// Scene "multihead": d2l's MultiHeadAttention, one weight map per head.
//
// Shapes: queries [B, Tq, d], keys = values [B, Tk, d] (d2l's mha(X, Y, Y)),
// valid_lens [B] -> attention_weights() [B, heads, Tq, Tk], output [B, Tq, h]
// with h = num_hiddens; each head works on h / heads of the features.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "heatmap_widget.h"
#include "scene.h"

namespace ag::viewer {
namespace {

constexpr int64_t kBatch = 2;  // d2l's example: a batch of two

class MultiHeadScene : public Scene {
 public:
  MultiHeadScene() { rebuild(); }
  const char* name() const override { return "multihead"; }
  const char* label() const override { return "Multi-head"; }

  std::map<std::string, Tensor> inputs() const override {
    if (!mha_) return {};  // no valid module yet: nothing was fed
    std::map<std::string, Tensor> out{
        {"queries", queries_},
        {"keys", keys_},
        {"values", keys_},
        {"valid_lens", valid_lens_},
        {"num_heads", full({}, static_cast<double>(mha_->num_heads), kInt64)}};
    for (const auto& [name, p] : mha_->state_dict()) out["mha." + name] = p;
    return out;
  }

  std::vector<Knob> knobs() override {
    return {choice_knob("item", "the batch item whose maps are drawn", {"0", "1"},
                        [this](int item) { item_ = item; })};
  }

  void draw() override {
    draw_panes(
        340, [&] { draw_controls(); }, error_, [&] { draw_maps(); });
  }

 private:
  // ---- state: the knobs (d2l's example sizes), the inputs, the module ---------
  int num_hiddens_ = 100, num_heads_ = 5;  // d2l: num_hiddens, num_heads = 100, 5
  int input_size_ = 8;
  int num_queries_ = 4, num_keys_ = 6;    // d2l: num_queries, num_kvpairs = 4, 6
  int valid_lens_knob_[kBatch] = {3, 2};  // d2l: valid_lens = [3, 2]
  int item_ = 0;                          // the batch item whose maps are drawn
  int seed_ = 0;
  bool bias_ = false, show_values_ = false;
  Tensor queries_, keys_, valid_lens_;
  std::unique_ptr<nn::MultiHeadAttention> mha_;
  Tensor weights_, output_;  // [B, heads, Tq, Tk], [B, Tq, h]
  Tensor split_queries_;     // transpose_qkv(W_q(queries)): [B * heads, Tq, h / heads]
  std::string error_;

  // New inputs and parameters from the knobs (seeded), then one forward. A
  // head count that does not divide num_hiddens is the learner's to fix: say
  // so, keep the last valid module for inputs().
  void rebuild() {
    error_.clear();
    if (num_hiddens_ % num_heads_ != 0) {
      std::string divisors;
      for (int k = 1; k <= num_hiddens_; ++k) {
        if (num_hiddens_ % k == 0) divisors += (divisors.empty() ? "" : ", ") + std::to_string(k);
      }
      error_ = "num_hiddens = " + std::to_string(num_hiddens_) +
               " is not divisible by num_heads = " + std::to_string(num_heads_) +
               ": transpose_qkv gives every head the same number of features, and " +
               std::to_string(num_hiddens_) + " / " + std::to_string(num_heads_) +
               " is not whole. Head counts that divide " + std::to_string(num_hiddens_) + ": " +
               divisors + ".";
      return;
    }
    try {
      NoGradGuard no_grad;
      manual_seed(static_cast<uint64_t>(seed_));
      queries_ = randn({kBatch, num_queries_, input_size_});
      keys_ = randn({kBatch, num_keys_, input_size_});
      valid_lens_ = tensor({static_cast<double>(std::min(valid_lens_knob_[0], num_keys_)),
                            static_cast<double>(std::min(valid_lens_knob_[1], num_keys_))},
                           {kBatch}, kInt64);
      mha_ = std::make_unique<nn::MultiHeadAttention>(input_size_, input_size_, input_size_,
                                                      num_hiddens_, num_heads_, 0.0, bias_);
      mha_->eval();
      output_ = (*mha_)(queries_, keys_, keys_, valid_lens_);
      weights_ = mha_->attention_weights();
      split_queries_ = nn::transpose_qkv(mha_->W_q(queries_), num_heads_);
    } catch (const Error& e) {
      error_ = e.what();
    }
  }

  // ---- panel: the knobs and the shapes of the split ------------------------------
  void draw_controls() {
    bool changed = false;
    ImGui::PushItemWidth(150);
    ImGui::TextUnformatted("Module");
    changed |= ImGui::SliderInt("num_hiddens h", &num_hiddens_, 1, 128);
    changed |= ImGui::SliderInt("num_heads", &num_heads_, 1, 16);
    changed |= ImGui::Checkbox("bias (W_q, W_k, W_v, W_o)", &bias_);
    ImGui::Separator();
    ImGui::TextUnformatted("Inputs");
    changed |= ImGui::SliderInt("size d", &input_size_, 1, 32);
    changed |= ImGui::SliderInt("queries Tq", &num_queries_, 1, 10);
    changed |= ImGui::SliderInt("keys Tk", &num_keys_, 1, 10);
    for (int b = 0; b < kBatch; ++b) {
      const std::string label = "valid_len of item " + std::to_string(b);
      changed |= ImGui::SliderInt(label.c_str(), &valid_lens_knob_[b], 1, num_keys_);
    }
    changed |= ImGui::SliderInt("seed", &seed_, 0, 99);
    ImGui::Separator();
    ImGui::TextUnformatted("Show batch item");
    for (int b = 0; b < kBatch; ++b) {
      ImGui::SameLine();
      ImGui::RadioButton(std::to_string(b).c_str(), &item_, b);
    }
    ImGui::Checkbox("print values", &show_values_);
    ImGui::PopItemWidth();
    if (changed) rebuild();
    ImGui::Separator();
    if (error_.empty()) draw_split_note();
  }

  // transpose_qkv in numbers: the shapes this module's forward goes through.
  void draw_split_note() {
    const int64_t heads = mha_->num_heads, h = num_hiddens_, dh = h / heads;
    const std::string text =
        "W_q(queries) is [" + std::to_string(kBatch) + ", " + std::to_string(num_queries_) + ", " +
        std::to_string(h) + "]. transpose_qkv cuts its " + std::to_string(h) + " features into " +
        std::to_string(heads) + " heads of " + std::to_string(dh) +
        ": reshape to [B, Tq, heads, h/heads], permute to [B, heads, Tq, h/heads], reshape to " +
        describe(split_queries_) +
        ". The heads are now batch items of one scaled dot product, so head i only sees "
        "features i*" +
        std::to_string(dh) + " to (i+1)*" + std::to_string(dh) +
        "-1 of the projections and scores the keys in its own way (scaled by 1/sqrt(" +
        std::to_string(dh) +
        ")). valid_lens are repeated for every head (repeat_interleave). "
        "transpose_output undoes the split, [B * heads, Tq, h/heads] -> [B, Tq, h], and W_o "
        "mixes what the heads found into the output.";
    show_note(text.c_str());
  }

  // ---- panel: one map per head, then the output ----------------------------------------
  void draw_maps() {
    const int64_t heads = weights_.size(1);
    const Tensor item_weights = squeeze(narrow(weights_, 0, item_, 1), 0);  // [heads, Tq, Tk]
    const Tensor item_output = squeeze(narrow(output_, 0, item_, 1), 0);    // [Tq, h]
    const Tensor keep = squeeze(
        narrow(nn::lengths_to_keep(valid_lens_, {kBatch, num_queries_, num_keys_}), 0, item_, 1),
        0);
    const double top = max(item_weights).item();
    const viz::ColorScale weight_scale{viz::Colormap::Viridis, 0.0, top > 0 ? top : 1.0};

    // Up to 6 heads side by side, more in rows of 4; the output keeps ~1/4.
    const int64_t columns = heads <= 6 ? heads : 4;
    const int64_t rows = (heads + columns - 1) / columns;
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float map_width = std::floor((avail.x - 110) / static_cast<float>(columns));
    const float map_height =
        std::min(360.0f, std::floor((avail.y * 0.72f - 30) / static_cast<float>(rows)));

    ImGui::Text("attention_weights() of item %d: one map per head (hatched: past valid_len %lld)",
                item_, static_cast<long long>(valid_lens_.to_vector()[item_]));
    for (int64_t i = 0; i < heads; ++i) {
      if (i % columns != 0) ImGui::SameLine();
      const Tensor map = squeeze(narrow(item_weights, 0, i, 1), 0);
      draw_heatmap({"multihead/head" + std::to_string(i), "head " + std::to_string(i), map, keep,
                    weight_scale, "Keys", "Queries", "query", "key", 48, show_values_,
                    /*fit_axis_label=*/true},
                   ImVec2(map_width, map_height));
      if (i + 1 == columns) {
        ImGui::SameLine();
        draw_colorbar("weights bar", weight_scale,
                      drawn_heatmaps().back().cell * static_cast<float>(num_queries_));
      }
    }
    ImGui::Spacing();
    ImGui::Text("Output of item %d %s: transpose_output joins the heads, W_o mixes them", item_,
                describe(item_output).c_str());
    const viz::ColorScale output_scale =
        viz::fit_scale(item_output.to_vector(), viz::Colormap::Diverging);
    draw_heatmap({"multihead/output", "", item_output, Tensor(), output_scale, "Features",
                  "Queries", "query", "feature", 48, show_values_},
                 ImVec2(ImGui::GetContentRegionAvail().x - 90, 0));
    ImGui::SameLine();
    draw_colorbar("output bar", output_scale, 120);
  }
};

}  // namespace

std::unique_ptr<Scene> make_multihead_scene() {
  return std::make_unique<MultiHeadScene>();
}

}  // namespace ag::viewer
