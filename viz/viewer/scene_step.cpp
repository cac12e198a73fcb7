// Scene "step": one scaled dot-product attention call taken apart
// (attention_call.h). The forward, one card per stage: its map, shape and
// the line that computes it. Then the backward in reverse, one card per
// gradient: the map of what the engine's real backward produced (seen
// through ag::backward's observer), the formula of the backward lambda that
// produced it, and its check against central finite differences.
//
// Shapes (batch of one): Q [1, 3, 4], K [1, 5, 4], V [1, 5, 3], G [1, 3, 3];
// every [1, r, c] tensor is drawn as its [r, c] matrix.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iterator>
#include <limits>
#include <memory>
#include <sstream>

#include "attention_call.h"
#include "heatmap_widget.h"
#include "scene.h"

namespace ag::viewer {
namespace {

// Finite differences as ag::gradcheck takes them, in float64:
// dL/dx[i] ~ (L(x + eps e_i) - L(x - eps e_i)) / 2 eps.
constexpr double kEps = 1e-6;
// What "agrees" means on the cards: float64 central differences of these
// small, smooth functions land within ~1e-9 of the exact gradient.
constexpr double kAgree = 1e-6;

// max_i |analytic[i] - (loss(x + eps e_i) - loss(x - eps e_i)) / 2 eps|
double max_fd_error(const Tensor& x, const Tensor& analytic,
                    const std::function<double(const Tensor&)>& loss) {
  const std::vector<double> exact = analytic.to_vector();
  double worst = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    Tensor plus = x.detach().clone(), minus = x.detach().clone();
    plus.data_ptr<double>()[i] += kEps;
    minus.data_ptr<double>()[i] -= kEps;
    const double numeric = (loss(plus) - loss(minus)) / (2 * kEps);
    worst = std::max(worst, std::abs(exact[static_cast<size_t>(i)] - numeric));
  }
  return worst;
}

// Its parts printed one after the other (ostringstream: GCC 12's -O3
// -Wrestrict misfires on "literal" + std::string chains).
template <typename... Parts>
std::string cat_str(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

// The leaves' cards, after the stages' (Q, K, V in that order).
enum Leaf { kQ, kK, kV, kNumLeaves };
const char* const kLeafNames[] = {"Q", "K", "V"};
const char* const kLeafFormulas[] = {
    "forward: scores = bmm(Q, K^T)\nBmmBackward: dQ = bmm(dscores, K)",
    ("forward: scores = bmm(Q, K^T), K^T = transpose(K)\n"
     "BmmBackward: d(K^T) = bmm(Q^T, dscores)\nTransposeBackward: dK = d(K^T)^T"),
    "forward: output = bmm(dropped, V)\nBmmBackward: dV = bmm(dropped^T, doutput)"};

class StepScene : public Scene {
 public:
  StepScene() { rebuild(); }
  const char* name() const override { return "step"; }
  const char* label() const override { return "Step"; }

  std::map<std::string, Tensor> inputs() const override {
    return call_ ? call_->inputs() : std::map<std::string, Tensor>{};
  }

  std::vector<Knob> knobs() override {
    return {number_knob("step", "the card framed in orange (Prev / Next)", 1, kSteps, true,
                        [this](double step) { focus_ = static_cast<int>(step) - 1; })};
  }

  void draw() override {
    draw_panes(
        300, [&] { draw_controls(); }, error_, [&] { draw_stages(); });
  }

 private:
  // ---- state: the knobs, the call, the finite-difference checks ---------------
  CallKnobs knobs_;
  std::unique_ptr<AttentionCall> call_;
  std::array<double, kNumStages> stage_errors_{};
  std::array<double, kNumLeaves> leaf_errors_{};
  std::string error_;
  // The stepper: which card the learner is looking at, in the order the
  // computation makes them (forward left to right, then the sweep's way back).
  int focus_ = 0;

  void rebuild() {
    error_.clear();
    try {
      call_ = std::make_unique<AttentionCall>(knobs_);
      check_gradients();
    } catch (const Error& e) {
      call_.reset();
      error_ = e.what();
    }
  }

  // Every gradient the engine produced against finite differences of L:
  // a stage is perturbed in place (the stages after it recomputed), a leaf
  // through the whole forward.
  void check_gradients() {
    const AttentionCall& c = *call_;
    for (int s = 0; s < kNumStages; ++s) {
      stage_errors_[s] = max_fd_error(c.stages[s], c.stage_grads[s], [&](const Tensor& x) {
        return c.loss_of(c.queries, c.keys, c.values, s, x);
      });
    }
    leaf_errors_[kQ] = max_fd_error(c.queries, c.queries.grad(), [&](const Tensor& q) {
      return c.loss_of(q, c.keys, c.values);
    });
    leaf_errors_[kK] = max_fd_error(
        c.keys, c.keys.grad(), [&](const Tensor& k) { return c.loss_of(c.queries, k, c.values); });
    leaf_errors_[kV] = max_fd_error(c.values, c.values.grad(), [&](const Tensor& v) {
      return c.loss_of(c.queries, c.keys, v);
    });
  }

  // ---- panel: the knobs and how to read the cards ---------------------------------
  void draw_controls() {
    ImGui::TextUnformatted("One attention call");
    show_note("Q [1, 3, 4], K [1, 5, 4], V [1, 5, 3], float64, random from the seed.");
    if (draw_call_knobs(knobs_)) rebuild();
    draw_stepper();
    ImGui::Separator();
    show_note(
        "Forward: each card is one library op; its map is the tensor it returns "
        "(the batch dim of 1 dropped), hatched cells are keys at or past valid_len.");
    ImGui::Spacing();
    show_note(
        "Backward of L = sum(output * G), G a fixed random dL/doutput (what the rest of a model "
        "would send back). The engine sweeps the graph in reverse; ag::backward's observer "
        "hands the viewer each op's incoming gradient, so every map below is the real "
        "backward's number, not a re-derivation.");
    ImGui::Spacing();
    show_note(
        "Each gradient card quotes the forward line it undoes and the formula of that op's "
        "backward lambda. 'numeric' perturbs each element by 1e-6 both ways and re-runs the "
        "forward: (L(x+e) - L(x-e)) / 2e, as ag::gradcheck does.");
    if (knobs_.valid_len < AttentionCall::kKeys) {
      ImGui::Spacing();
      show_note(
          "Look for: the hatched keys get weight 0, so their columns of dmasked, dscaled and "
          "dscores are 0, and so are their rows of dK and dV: a masked key learns nothing "
          "from this call.");
    }
    if (knobs_.training && knobs_.dropout > 0) {
      ImGui::Spacing();
      show_note(
          "Dropout zeroes some weights and scales the rest by 1/(1-p); the same mask zeroes "
          "their gradients on the way back. No gradient reaches a masked key either: "
          "where() sends it nowhere.");
    }
  }

  // ---- panel: the stepper -----------------------------------------------------------
  static constexpr const char* kOrder[] = {
      "step/scores",  "step/scaled",  "step/masked",   "step/weights",  "step/dropped",
      "step/output",  "step/doutput", "step/ddropped", "step/dweights", "step/dmasked",
      "step/dscaled", "step/dscores", "step/dQ",       "step/dK",       "step/dV"};
  static constexpr int kSteps = static_cast<int>(std::size(kOrder));

  void draw_stepper() {
    ImGui::Separator();
    ImGui::Text("Step %d of %d (framed in orange)", focus_ + 1, kSteps);
    draw_prev_next(focus_, kSteps);
    show_note(focus_ < kNumStages
                  ? "Forward: read the card's line of code, then its map."
                  : "Backward: read the forward line the gradient undoes, then the formula; "
                    "the map has the shape of the tensor it belongs to.");
  }

  // ---- panel: the cards ----------------------------------------------------------
  // One card: a bordered child with a title, the map, and text below it:
  // the code line (forward) or the backward formula and its check.
  struct Card {
    std::string id, title;
    Tensor t, keep;
    viz::ColorScale scale;
    const char* xlabel;
    const char* ylabel;
    std::string text;
    double check = -1;  // max |autograd - numeric|; < 0: no check line

    std::string check_line() const {
      if (check < 0) return "";
      char line[96];
      std::snprintf(line, sizeof line, "finite differences:\nmax |diff| %.1e %s", check,
                    check < kAgree ? "ok" : "NOT OK");
      return line;
    }
  };

  // A row of cards `width` wide, as tall as the tallest needs: the map's
  // rows at 30 px plus its wrapped text.
  void draw_card_row(const std::vector<Card>& cards, float width) const {
    const ImGuiStyle& style = ImGui::GetStyle();
    const float line = ImGui::GetTextLineHeightWithSpacing();
    const float wrap = width - 2 * style.WindowPadding.x;
    auto text_height = [&](const Card& c) {
      float h = ImGui::CalcTextSize(c.text.c_str(), nullptr, false, wrap).y + style.ItemSpacing.y;
      if (c.check >= 0)
        h += ImGui::CalcTextSize(c.check_line().c_str(), nullptr, false, wrap).y +
             style.ItemSpacing.y;
      return h;
    };
    // Titles wrap in narrow windows (at 1024 px a card is ~110 px wide).
    auto title_height = [&](const Card& c) {
      return ImGui::CalcTextSize(c.title.c_str(), nullptr, false, wrap).y + style.ItemSpacing.y;
    };
    float height = 0;
    for (const Card& c : cards) {
      const float map = static_cast<float>(as_matrix(c.t).size(0)) * 30 + 2 * line + 6;
      height = std::max(height, title_height(c) + map + text_height(c) + 2 * style.WindowPadding.y);
    }
    for (size_t k = 0; k < cards.size(); ++k) {
      const Card& c = cards[k];
      if (k > 0) ImGui::SameLine();
      const bool focused = c.id == kOrder[focus_];
      if (focused) {
        ImGui::PushStyleColor(ImGuiCol_Border, IM_COL32(235, 150, 40, 255));
        ImGui::PushStyleVar(ImGuiStyleVar_ChildBorderSize, 3.0f);
      }
      ImGui::BeginChild(c.id.c_str(), ImVec2(width, height), true, ImGuiWindowFlags_NoScrollbar);
      ImGui::TextWrapped("%s", c.title.c_str());
      // A card narrower than the map's axis label shows "Keys ->" without
      // "(Queries ...)", which its edge would cut (at 1024x700: "Keys -> (Qu").
      const std::string axes =
          std::string(c.xlabel) + " \xe2\x86\x92   (" + c.ylabel + " \xe2\x86\x93)";
      const bool narrow = ImGui::CalcTextSize(axes.c_str()).x + ImGui::CalcTextSize("00").x >
                          ImGui::GetContentRegionAvail().x;
      draw_heatmap({c.id, "", as_matrix(c.t), c.keep.defined() ? as_matrix(c.keep) : Tensor(),
                    c.scale, c.xlabel, c.ylabel, c.ylabel, c.xlabel, 30, false, narrow},
                   ImVec2(0, ImGui::GetContentRegionAvail().y - text_height(c)));
      ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(200, 200, 120, 255));
      ImGui::TextWrapped("%s", c.text.c_str());
      ImGui::PopStyleColor();
      if (c.check >= 0) {
        ImGui::PushStyleColor(ImGuiCol_Text, c.check < kAgree ? IM_COL32(110, 220, 110, 255)
                                                              : IM_COL32(255, 110, 110, 255));
        ImGui::TextWrapped("%s", c.check_line().c_str());
        ImGui::PopStyleColor();
      }
      ImGui::EndChild();
      if (focused) {
        ImGui::PopStyleVar();
        ImGui::PopStyleColor();
      }
    }
  }

  // Signed tensors (scores, outputs, gradients): diverging around 0; only the
  // kept cells (when keep is given) set the range.
  static viz::ColorScale signed_scale(const Tensor& t, const Tensor& keep = Tensor()) {
    const Tensor shown =
        keep.defined() ? where(keep, t, std::numeric_limits<double>::quiet_NaN()) : t;
    return viz::fit_scale(shown.to_vector(), viz::Colormap::Diverging);
  }
  // Weights: viridis from 0 to the largest.
  static viz::ColorScale weight_scale(const Tensor& t) {
    const double top = max(t).item();
    return {viz::Colormap::Viridis, 0.0, top > 0 ? top : 1.0};
  }

  void draw_stages() {
    if (!call_) return;
    const AttentionCall& c = *call_;
    const float gap = ImGui::GetStyle().ItemSpacing.x;
    ImGui::BeginChild("stages", ImVec2(0, 0), false);
    // Measured inside the child: when the cards are taller than the window
    // (short windows), its scrollbar takes its width from the six cards.
    const float width = std::floor((ImGui::GetContentRegionAvail().x - 5 * gap) / 6);

    // Forward: left to right, as the code runs.
    ImGui::TextUnformatted("Forward: one library op per stage, left to right");
    std::vector<Card> forward;
    for (int s = 0; s < kNumStages; ++s) {
      const Tensor& t = c.stages[s];
      const bool masked_stage = s == kMasked || s == kWeights || s == kDropped;
      const Tensor keep = masked_stage ? c.keep : Tensor();
      const bool weights = s == kWeights || s == kDropped;
      forward.push_back(
          {cat_str("step/", kStageText[s].name),
           cat_str(s + 1, ". ", kStageText[s].name, " ", shape_str(t.shape())), t, keep,
           weights ? weight_scale(t) : signed_scale(t, keep), s == kOutput ? "Features" : "Keys",
           "Queries",
           s == kDropped && !(c.training && c.dropout_p > 0)
               ? cat_str(kStageText[s].code, "\n(returns weights as is: p = 0 or eval mode)")
               : std::string(kStageText[s].code)});
    }
    draw_card_row(forward, width);

    // Backward: each stage's gradient under it (the sweep makes them right
    // to left), then the leaves'.
    ImGui::Spacing();
    ImGui::TextWrapped(
        "Backward of L = sum(output * G), right to left: under each stage, the gradient the "
        "engine's sweep sent into it (seen by its observer)");
    std::vector<Card> backward;
    for (int s = 0; s < kNumStages; ++s) {
      const Tensor& g = c.stage_grads[s];
      backward.push_back({cat_str("step/d", kStageText[s].name),
                          cat_str("dL/d", kStageText[s].name, " ", shape_str(g.shape())), g,
                          Tensor(), signed_scale(g), s == kOutput ? "Features" : "Keys", "Queries",
                          kStageText[s].backward, stage_errors_[s]});
    }
    draw_card_row(backward, width);
    const std::array<const Tensor*, kNumLeaves> leaves{&c.queries, &c.keys, &c.values};
    const char* const xlabels[] = {"Features", "Features", "Value features"};
    const char* const ylabels[] = {"Queries", "Keys", "Keys"};
    std::vector<Card> leaf_cards;
    for (int l = 0; l < kNumLeaves; ++l) {
      const Tensor g = leaves[l]->grad();
      leaf_cards.push_back({cat_str("step/d", kLeafNames[l]),
                            cat_str("dL/d", kLeafNames[l], " ", shape_str(g.shape()), " = ",
                                    kLeafNames[l], ".grad()"),
                            g, Tensor(), signed_scale(g), xlabels[l], ylabels[l], kLeafFormulas[l],
                            leaf_errors_[l]});
    }
    draw_card_row(leaf_cards, 2 * width + gap);
    ImGui::EndChild();
  }
};

}  // namespace

std::unique_ptr<Scene> make_step_scene() {
  return std::make_unique<StepScene>();
}

}  // namespace ag::viewer
