// Scene "masks": every way attograd lets you say "query i may not look at
// key j" (nn/masks.h), on the small examples the texts use, with the scores
// before masking above the weights after it.
//
// Shapes: scores and weights [B, Tq, Tk], one column of maps per batch item;
// valid_lens [B] or [B, Tq]; padding M [B, Tk]; Keras masks [B, Tq], [B, Tk].
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "heatmap_widget.h"
#include "scene.h"

namespace ag::viewer {
namespace {

enum class Mode { BatchLengths, RowLengths, Causal, Padding, Keras, MaskValue, FullyMasked };
const char* const kModeNames[] = {
    "d2l valid_lens, one per batch item", "d2l valid_lens, one per row",
    "causal (look-ahead) mask",           "padding mask: scores += -1e9 * M",
    "Keras query_mask and value_mask",    "mask value: -1e6, -1e9 or -inf",
    "fully masked rows: Uniform or Zero"};
const char* const kModeNotes[] = {
    "d2l's first demonstration: masked_softmax(X, valid_lens=[2, 3]) with X of shape [2, 2, 4]. "
    "One length per batch item, shared by all of its rows: item 0 keeps keys 0-1, item 1 keeps "
    "keys 0-2. Scores at or past the length are replaced by -1e6 before the softmax, so their "
    "weight is exactly 0 (hatched) and the kept weights of every row still sum to 1.",
    "d2l's second demonstration: valid_lens=[[1, 3], [2, 4]] gives every query row its own "
    "length. A row of length 1 puts all its weight on key 0, whatever its scores; a row of "
    "length Tk = 4 is a plain softmax.",
    "A decoder must not look ahead: query i attends to keys 0..i only (causal_mask(Tq, Tk), "
    "PyTorch's is_causal). What is kept is the lower triangle; row 0 sees only key 0 and gives "
    "it weight 1. With Tk > Tq the keys on the right are never seen; with Tq > Tk the last rows "
    "see every key.",
    "The padding mask of the Keras/TensorFlow Transformer tutorial: sentences are padded to "
    "one length and M is 1 at the padding keys. The mask is added, scores + -1e9 * M, not written "
    "over the scores: "
    "exp(-1e9) is 0 next to any real score, so padding gets no weight. A sentence of length 0 "
    "shifts every score of its rows by the same -1e9; in float32 they all round to -1e9 and the "
    "softmax of equal numbers is uniform. Cells of such fully masked rows are drawn in colour, "
    "not hatched, because they do get weight.",
    "keras.layers.Attention, dot scores query . key. value_mask (false = padding key) adds -1e9 "
    "to those keys' scores, so they get no weight. query_mask does not touch the weights: it "
    "sets the OUTPUT rows of masked queries to 0 (compare the weights and the output). "
    "use_causal_mask adds the look-ahead mask. A query whose keys are all masked gets uniform "
    "weights, as in Keras.",
    "d2l writes -1e6 over masked scores. That is enough for scores near 0, but not for scores "
    "far below -1e6: shift the scores by -1e7 and with -1e6 the masked keys win (their -1e6 is "
    "now the largest score of the row). -1e9 holds out longer; -inf always holds. And a row "
    "with no key left (item 0, row 0)? In plain PyTorch, filling it with -inf makes softmax "
    "compute exp(-inf - (-inf)) = NaN for the whole row, and NaN spreads to the output and "
    "every gradient. attograd's masked softmax never returns NaN: such a row comes out uniform "
    "(MaskedRows::Uniform) whatever the mask value, as d2l's -1e6 makes it. (Shifted by -1e7, "
    "the kept weights also change a little: near 1e7 float32 numbers are 1 apart.)",
    "A row whose keys are all masked (valid length 0) has no right answer; masks.h lets you "
    "choose. MaskedRows::Uniform (d2l's modules, what -1e6 gives by itself): every score "
    "becomes the same mask value, the weights are 1/Tk each and the output row is the mean of "
    "all values, padding included. MaskedRows::Zero (scaled_dot_product_attention): weights 0, "
    "output row 0, and no gradient flows through it. Neither is NaN. The cells of such rows "
    "are drawn in colour so that you see what they get."};

const char* const kMaskValueNames[] = {"-1e6 (d2l)", "-1e9 (Keras)", "-inf"};
const double kMaskValues[] = {nn::kD2lMaskValue, nn::kAdditiveMaskValue,
                              -std::numeric_limits<double>::infinity()};

constexpr int64_t kBatch = 2;  // the d2l demonstrations' batch of two
constexpr int64_t kValueSize = 2;

// Knob values -> an int64 tensor of lengths.
Tensor lengths(const std::vector<int>& lens, const Shape& shape) {
  return tensor(std::vector<double>(lens.begin(), lens.end()), shape, kInt64);
}

// The hatching of a weights map: the mask's keep cells, plus every cell of
// the rows where all keys are masked. Those rows are where the policies
// differ (uniform or zero), so they are drawn in colour.
Tensor drawn_keep(const Tensor& keep) {
  return logical_or(keep, eq(sum(keep.to(kInt64), -1, true), zeros({1}, kInt64)));
}

class MasksScene : public Scene {
 public:
  MasksScene() { rebuild(); }
  const char* name() const override { return "masks"; }
  const char* label() const override { return "Masks"; }

  std::map<std::string, Tensor> inputs() const override {
    std::map<std::string, Tensor> out{{"scores", scores_}, {"keep", keep_}};
    const std::pair<const char*, const Tensor*> optional[] = {
        {"valid_lens", &valid_lens_}, {"padding", &padding_},       {"query", &query_},
        {"value", &value_},           {"query_mask", &query_mask_}, {"value_mask", &value_mask_},
        {"values", &values_}};
    for (const auto& [name, t] : optional) {
      if (t->defined()) out[name] = *t;
    }
    out["mask_value"] = full({}, mask_value(), kFloat64);
    return out;
  }

  std::vector<Knob> knobs() override {
    return {choice_knob("mode", "the kind of mask shown (the radio buttons, in order)",
                        {"batch-lengths", "row-lengths", "causal", "padding", "keras", "mask-value",
                         "fully-masked"},
                        [this](int mode) {
                          mode_ = mode;
                          rebuild();
                        }),
            choice_knob("mask_value", "the fill value of mode mask-value", {"-1e6", "-1e9", "-inf"},
                        [this](int value) {
                          mask_value_ = value;
                          rebuild();
                        }),
            number_knob("seed", "the random scores", 0, 99, true, [this](double seed) {
              seed_ = static_cast<int>(seed);
              rebuild();
            })};
  }

  void draw() override {
    draw_panes(
        340, [&] { draw_controls(); }, error_, [&] { draw_maps(); });
  }

 private:
  // ---- state: the mode, its knobs, what they feed the library, what it gives --
  int mode_ = static_cast<int>(Mode::BatchLengths);
  int seed_ = 0;
  int batch_lens_[kBatch] = {2, 3};                    // d2l: valid_lens = [2, 3]
  int row_lens_[kBatch][2] = {{1, 3}, {2, 4}};         // d2l: [[1, 3], [2, 4]]
  int masked_row_lens_[kBatch][2] = {{0, 3}, {2, 4}};  // a row of length 0
  int causal_queries_ = 6, causal_keys_ = 6;
  int padding_lens_[kBatch] = {2, 4};
  int keras_query_lens_[kBatch] = {2, 3}, keras_value_lens_[kBatch] = {3, 4};
  bool keras_causal_ = false;
  int mask_value_ = 0;
  bool shift_scores_ = false;
  bool show_values_ =
      false;  // off by default: the values cover the cells' centre pixels, which tests read

  Tensor scores_;  // [B, Tq, Tk] before masking, as fed to the library
  Tensor keep_;    // bool [B, Tq, Tk]: the mask in keep form (true = may attend)
  Tensor valid_lens_, padding_, query_, value_, query_mask_, value_mask_, values_;
  Tensor weights_, zero_weights_, output_, zero_output_;
  std::string error_;

  Mode mode() const { return static_cast<Mode>(mode_); }
  double mask_value() const {
    return mode() == Mode::MaskValue ? kMaskValues[mask_value_] : nn::kD2lMaskValue;
  }

  // Inputs from the knobs (seeded), then the library's masking of them.
  void rebuild() {
    error_.clear();
    scores_ = keep_ = valid_lens_ = padding_ = query_ = value_ = query_mask_ = value_mask_ =
        values_ = weights_ = zero_weights_ = output_ = zero_output_ = Tensor();
    try {
      NoGradGuard no_grad;
      manual_seed(static_cast<uint64_t>(seed_));
      switch (mode()) {
        case Mode::BatchLengths:
          scores_ = rand({kBatch, 2, 4});
          valid_lens_ = lengths({batch_lens_[0], batch_lens_[1]}, {kBatch});
          weights_ = nn::masked_softmax(scores_, valid_lens_);
          keep_ = nn::lengths_to_keep(valid_lens_, scores_.shape());
          break;
        case Mode::RowLengths:
        case Mode::MaskValue:
        case Mode::FullyMasked: {
          const auto& lens = mode() == Mode::RowLengths ? row_lens_ : masked_row_lens_;
          scores_ = rand({kBatch, 2, 4});
          if (mode() == Mode::MaskValue && shift_scores_) scores_ = scores_ - 1e7;
          valid_lens_ = lengths({lens[0][0], lens[0][1], lens[1][0], lens[1][1]}, {kBatch, 2});
          keep_ = nn::lengths_to_keep(valid_lens_, scores_.shape());
          if (mode() != Mode::FullyMasked) {
            weights_ = nn::masked_softmax(scores_, valid_lens_, mask_value());
            break;
          }
          // Both policies on the same keep mask, and what they pool.
          weights_ = nn::masked_softmax_keep(scores_, keep_, nn::MaskedRows::Uniform);
          zero_weights_ = nn::masked_softmax_keep(scores_, keep_, nn::MaskedRows::Zero);
          values_ = reshape(arange(kBatch * 4 * kValueSize), {kBatch, 4, kValueSize});
          output_ = bmm(weights_, values_);
          zero_output_ = bmm(zero_weights_, values_);
          break;
        }
        case Mode::Causal:
          scores_ = rand({1, causal_queries_, causal_keys_});
          keep_ = broadcast_to(nn::causal_mask(causal_queries_, causal_keys_), scores_.shape());
          weights_ = nn::masked_softmax_keep(scores_, keep_, nn::MaskedRows::Uniform);
          break;
        case Mode::Padding: {
          scores_ = rand({kBatch, 3, 5});
          const Tensor lens = lengths({padding_lens_[0], padding_lens_[1]}, {kBatch});
          padding_ = nn::keep_to_padding(nn::sequence_mask(lens, 5));  // M: 1 at padding keys
          const Tensor additive = nn::padding_to_additive(unsqueeze(padding_, 1));  // [B, 1, Tk]
          weights_ = softmax(scores_ + additive, -1);
          keep_ = broadcast_to(nn::additive_to_keep(additive), scores_.shape());
          break;
        }
        case Mode::Keras: {
          query_ = randn({kBatch, 3, 2});
          value_ = randn({kBatch, 4, 2});
          query_mask_ =
              nn::sequence_mask(lengths({keras_query_lens_[0], keras_query_lens_[1]}, {kBatch}), 3);
          value_mask_ =
              nn::sequence_mask(lengths({keras_value_lens_[0], keras_value_lens_[1]}, {kBatch}), 4);
          nn::keras::Attention layer;  // score_mode "dot", no scale: scores = query key^T
          output_ = layer(query_, value_, Tensor(), query_mask_, value_mask_, keras_causal_);
          weights_ = layer.attention_weights();
          scores_ = matmul(query_, transpose(value_, 1, 2));
          keep_ = broadcast_to(nn::merge_keep(nn::key_keep_to_keep(value_mask_, scores_.shape()),
                                              keras_causal_ ? nn::causal_mask(3, 4) : Tensor()),
                               scores_.shape());
          break;
        }
      }
    } catch (const Error& e) {
      error_ = e.what();
    }
  }

  // ---- panel: the mode and its knobs --------------------------------------------
  void draw_controls() {
    bool changed = false;
    ImGui::TextUnformatted("Mask");
    for (int m = 0; m < IM_ARRAYSIZE(kModeNames); ++m) {
      changed |= ImGui::RadioButton(kModeNames[m], &mode_, m);
    }
    ImGui::Separator();
    ImGui::PushItemWidth(150);
    switch (mode()) {
      case Mode::BatchLengths:
        changed |= length_sliders("valid_lens, one per batch item", batch_lens_, 4);
        break;
      case Mode::RowLengths:
        changed |= row_length_sliders(row_lens_);
        break;
      case Mode::Causal:
        changed |= ImGui::SliderInt("queries Tq", &causal_queries_, 1, 10);
        changed |= ImGui::SliderInt("keys Tk", &causal_keys_, 1, 10);
        break;
      case Mode::Padding:
        changed |= length_sliders("tokens in the sentence (the rest is padding)", padding_lens_, 5);
        break;
      case Mode::Keras:
        changed |= length_sliders("value_mask: keys kept", keras_value_lens_, 4);
        changed |= length_sliders("query_mask: queries kept", keras_query_lens_, 3);
        changed |= ImGui::Checkbox("use_causal_mask", &keras_causal_);
        break;
      case Mode::MaskValue:
        changed |= ImGui::Combo("mask value", &mask_value_, kMaskValueNames,
                                IM_ARRAYSIZE(kMaskValueNames));
        changed |= ImGui::Checkbox("shift the scores by -1e7", &shift_scores_);
        changed |= row_length_sliders(masked_row_lens_);
        break;
      case Mode::FullyMasked:
        changed |= row_length_sliders(masked_row_lens_);
        break;
    }
    changed |= ImGui::SliderInt("seed", &seed_, 0, 99);
    ImGui::PopItemWidth();
    ImGui::Checkbox("print values", &show_values_);
    if (changed) rebuild();
    ImGui::Separator();
    show_note(kModeNotes[mode_]);
  }

  // A heading, then one slider per batch item ("item 0", "item 1"; the
  // heading after ## keeps their ids apart).
  static bool length_sliders(const char* what, int (&lens)[kBatch], int max_len) {
    bool changed = false;
    ImGui::TextUnformatted(what);
    for (int b = 0; b < kBatch; ++b) {
      const std::string label = "item " + std::to_string(b) + "##" + what;
      changed |= ImGui::SliderInt(label.c_str(), &lens[b], 0, max_len);
    }
    return changed;
  }
  static bool row_length_sliders(int (&lens)[kBatch][2]) {
    bool changed = false;
    ImGui::TextUnformatted("valid_lens, one per row");
    for (int b = 0; b < kBatch; ++b) {
      for (int i = 0; i < 2; ++i) {
        const std::string label = "item " + std::to_string(b) + ", row " + std::to_string(i);
        changed |= ImGui::SliderInt(label.c_str(), &lens[b][i], 0, 4);
      }
    }
    return changed;
  }

  // ---- panel: the maps, one column per batch item ----------------------------------
  void draw_maps() {
    const int64_t batch = scores_.size(0);
    const bool two_policies = zero_weights_.defined();
    const int sections = 2 + (output_.defined() ? 1 : 0) + (two_policies ? 2 : 0);
    const float colorbar_width = 90;
    const float map_width =
        std::floor((ImGui::GetContentRegionAvail().x - colorbar_width) / static_cast<float>(batch));
    const float map_height = std::clamp(
        (ImGui::GetContentRegionAvail().y - (padding_.defined() ? 150.0f : 0.0f)) / sections - 30,
        90.0f, 360.0f);
    const viz::ColorScale weight_scale{viz::Colormap::Viridis, 0.0, 1.0};

    if (padding_.defined()) {
      ImGui::TextUnformatted("Padding indicator M (1 = padding key), one row per sentence");
      draw_heatmap({"masks/padding", "M " + describe(padding_), padding_, Tensor(),
                    viz::ColorScale{viz::Colormap::Magma, 0.0, 1.0}, "Keys", "Sentences",
                    "sentence", "key", 48, show_values_},
                   ImVec2(map_width, 120));
    }
    ImGui::TextUnformatted("Scores before masking");
    section("masks/scores", "scores", scores_, Tensor(),
            viz::fit_scale(scores_.to_vector(), viz::Colormap::Magma), map_width, map_height);
    ImGui::TextUnformatted(two_policies
                               ? "Weights, MaskedRows::Uniform (hatched: masked, weight 0)"
                               : "Weights after masking and softmax (hatched: masked, weight 0)");
    section("masks/weights", "weights", weights_, drawn_keep(keep_), weight_scale, map_width,
            map_height);
    if (two_policies) {
      ImGui::TextUnformatted("Weights, MaskedRows::Zero");
      section("masks/zero_weights", "weights", zero_weights_, drawn_keep(keep_), weight_scale,
              map_width, map_height);
    }
    if (output_.defined()) {
      const viz::ColorScale output_scale =
          two_policies ? fit_scale_over({output_, zero_output_}, viz::Colormap::Magma)
                       : fit_scale_over({output_}, viz::Colormap::Magma);
      ImGui::TextUnformatted(two_policies ? "Output = weights @ values, Uniform"
                                          : "Output (rows of masked queries are 0)");
      section("masks/output", "output", output_, Tensor(), output_scale, map_width, map_height,
              "Value features");
      if (two_policies) {
        ImGui::TextUnformatted("Output = weights @ values, Zero");
        section("masks/zero_output", "output", zero_output_, Tensor(), output_scale, map_width,
                map_height, "Value features");
      }
    }
  }

  // One map per batch item of `t` [B, rows, cols], then the colour bar.
  void section(const std::string& id, const std::string& title, const Tensor& t, const Tensor& keep,
               const viz::ColorScale& scale, float width, float height,
               const char* xlabel = "Keys") {
    // Columns at fixed offsets, so that narrow maps keep room for their titles,
    // but no wider than the largest cells need.
    width = std::min(width, 80.0f * static_cast<float>(t.size(2)) + 70.0f);
    const float left = ImGui::GetCursorPosX();
    float title_end = left;
    for (int64_t b = 0; b < t.size(0); ++b) {
      const Tensor matrix = squeeze(narrow(t, 0, b, 1), 0);
      const Tensor item_keep = keep.defined() ? squeeze(narrow(keep, 0, b, 1), 0) : Tensor();
      const std::string map_title =
          title + " of item " + std::to_string(b) + " " + describe(matrix);
      const float column = left + width * static_cast<float>(b);
      if (b > 0) ImGui::SameLine(column);
      title_end = column + ImGui::CalcTextSize(map_title.c_str()).x;
      draw_heatmap({id + "/" + std::to_string(b), map_title, matrix, item_keep, scale, xlabel,
                    "Queries", "query", xlabel[0] == 'K' ? "key" : "feature", 80, show_values_},
                   ImVec2(width, height));
    }
    // The bar right of the last map and its title (+ 30: the row ticks),
    // level with its cells.
    colorbar_beside_last_map((id + " bar").c_str(), scale, title_end + 30);
  }
};

}  // namespace

std::unique_ptr<Scene> make_masks_scene() {
  return std::make_unique<MasksScene>();
}

}  // namespace ag::viewer
