// Scene "scaling": why dot-product attention divides by sqrt(d).
//
// The chapter's argument: when the d entries of q and k are independent with
// mean 0 and variance 1, q . k has mean 0 and variance d. Without the
// 1/sqrt(d) the scores spread out as d grows, the softmax of a row puts
// almost all its weight on one key, and its gradient vanishes. Here the
// learner sets d, turns the scaling on and off and sets a temperature tau,
// and sees the measured variance, the entropy of the rows and the gradient
// of a real backward pass (L = sum(weights * targets), random targets).
//
// Shapes: queries [1, Tq, d], keys [1, Tk, d] -> scores, weights [1, Tq, Tk];
// targets [1, Tq, Tk]. Tq = Tk = 64: large enough for a histogram, small
// enough to recompute 19 times (the knobs' case and the curves over d) in a
// few milliseconds. The random draw is made once per seed, at d = 512.
#include <imgui.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>

#include "heatmap_widget.h"
#include "plot.h"
#include "scene.h"

namespace ag::viewer {
namespace {

constexpr int64_t kQueries = 64, kKeys = 64;
constexpr int64_t kShownQueries = 8;  // rows of the weight map
constexpr int kMinDim = 2, kMaxDim = 512;
// The curves sample d = 2, 4, ..., 512.
constexpr int kCurvePoints = 9;
constexpr int kHistogramBins = 48;
// Scores within +-kSoftBand differ by at most e^(2 kSoftBand) in weight: the
// range where softmax still blends keys rather than picking one.
constexpr double kSoftBand = 2.0;
// A row is saturated when one key takes more than this of its weight.
constexpr double kSaturated = 0.99;

// Everything measured for one (d, scale factor).
struct Measurement {
  Tensor queries, keys;          // what the library is fed, [1, Tq, d] and [1, Tk, d]
  Tensor weights;                // [Tq, Tk]
  std::vector<double> scores;    // the Tq * Tk scores after the factor
  double variance = 0;           // measured variance of the scores
  double entropy = 0;            // mean over rows of -sum w log w, in nats
  double top_weight = 0;         // mean over rows of the largest weight
  int saturated_rows = 0;        // rows whose largest weight exceeds kSaturated
  double grad_scores_norm = 0;   // ||dL/dscores||, Frobenius
  double grad_row_median = 0;    // median over rows of ||dL/dscores_i||
  double grad_queries_norm = 0;  // ||dL/dqueries||, Frobenius (when asked for)
};

// The factor the scores are multiplied by: (1/sqrt(d) when scaled) / tau.
double score_factor(int64_t d, bool scaled, double tau) {
  return (scaled ? 1.0 / std::sqrt(static_cast<double>(d)) : 1.0) / tau;
}

// One forward and backward on the first d features of the drawn queries and
// keys (the entries are independent, so any d of them are a fair draw):
//   scores  = (Q K^T) * factor                  [1, Tq, Tk]
//   weights = softmax(scores, -1)
//   L       = sum(weights * targets)
// The scores are cut from the graph into their own leaf, so that one
// backward gives dL/dscores and a second, from the scores, dL/dQ.
Measurement measure(const Tensor& all_queries, const Tensor& all_keys, const Tensor& targets,
                    int64_t d, double factor, bool query_gradient) {
  Measurement m;
  m.queries = narrow(all_queries, 2, 0, d).contiguous();
  m.keys = narrow(all_keys, 2, 0, d).contiguous();
  Tensor queries = m.queries.detach().requires_grad_(query_gradient);
  Tensor scores = matmul(queries, transpose(m.keys, 1, 2)) * factor;
  Tensor scores_leaf = scores.detach().requires_grad_();
  Tensor weights = softmax(scores_leaf, -1);
  sum(weights * targets).backward();
  const Tensor grad_scores = squeeze(scores_leaf.grad(), 0);
  m.grad_scores_norm = sqrt(sum(grad_scores * grad_scores)).item();
  std::vector<double> row_norms = sqrt(sum(grad_scores * grad_scores, -1)).to_vector();
  std::nth_element(row_norms.begin(), row_norms.begin() + kQueries / 2, row_norms.end());
  m.grad_row_median = row_norms[kQueries / 2];
  if (query_gradient) {
    scores.backward(scores_leaf.grad());
    m.grad_queries_norm = sqrt(sum(queries.grad() * queries.grad())).item();
  }

  m.weights = squeeze(weights.detach(), 0);
  m.scores = scores.detach().to_vector();
  double mean = 0;
  for (double s : m.scores) mean += s;
  mean /= static_cast<double>(m.scores.size());
  for (double s : m.scores) m.variance += (s - mean) * (s - mean);
  m.variance /= static_cast<double>(m.scores.size() - 1);

  const std::vector<double> w = m.weights.to_vector();
  for (int64_t i = 0; i < kQueries; ++i) {
    double top = 0;
    for (int64_t j = 0; j < kKeys; ++j) {
      const double p = w[static_cast<size_t>(i * kKeys + j)];
      if (p > 0) m.entropy -= p * std::log(p);
      top = std::max(top, p);
    }
    m.top_weight += top;
    if (top > kSaturated) ++m.saturated_rows;
  }
  m.entropy /= kQueries;
  m.top_weight /= kQueries;
  return m;
}

class ScalingScene : public Scene {
 public:
  ScalingScene() {
    draw_inputs();
    recompute();
  }
  const char* name() const override { return "scaling"; }
  const char* label() const override { return "Scaling"; }

  // The library's inputs and the score factor, then (under "shown.") the
  // numbers the scene prints, so that tests can check them.
  std::map<std::string, Tensor> inputs() const override {
    return {{"queries", now_.queries},
            {"keys", now_.keys},
            {"targets", targets_},
            {"scale", scalar_tensor(factor_, kFloat64)},
            {"shown.variance", scalar_tensor(now_.variance, kFloat64)},
            {"shown.entropy", scalar_tensor(now_.entropy, kFloat64)},
            {"shown.grad_scores_norm", scalar_tensor(now_.grad_scores_norm, kFloat64)},
            {"shown.grad_row_median", scalar_tensor(now_.grad_row_median, kFloat64)},
            {"shown.grad_queries_norm", scalar_tensor(now_.grad_queries_norm, kFloat64)},
            {"shown.saturated_rows", scalar_tensor(now_.saturated_rows, kFloat64)}};
  }

  std::vector<Knob> knobs() override {
    return {number_knob("d", "the size of queries and keys", kMinDim, kMaxDim, true,
                        [this](double dim) {
                          dim_ = static_cast<int>(dim);
                          recompute();
                        }),
            choice_knob("scaled", "whether the scores are divided by sqrt(d)", {"no", "yes"},
                        [this](int scaled) {
                          scaled_ = scaled == 1;
                          recompute();
                        })};
  }

  void draw() override {
    ImGui::BeginChild("controls", ImVec2(310, 0), true);
    draw_controls();
    ImGui::EndChild();
    ImGui::SameLine();
    ImGui::BeginChild("results", ImVec2(0, 0), false);
    if (!error_.empty()) {
      show_error(error_);
    } else {
      // Short windows (under about 900 pixels): the histogram and the curves
      // give up height so that the weights map at the bottom keeps cells of
      // 8 pixels, and the statistics beside the histogram scroll in its height.
      const float height = ImGui::GetContentRegionAvail().y;
      const float line = ImGui::GetTextLineHeightWithSpacing();
      float histogram = height * 0.38f, curves = height * 0.34f;
      const float spare = height - histogram - curves - (kShownQueries * 8.0f + 8 * line);
      if (spare < 0) {
        histogram = std::floor(histogram + spare * 0.53f);
        curves = std::floor(curves + spare * 0.47f);
      }
      draw_histogram(ImVec2(ImGui::GetContentRegionAvail().x * 0.55f, histogram));
      ImGui::SameLine();
      if (spare < 0) ImGui::BeginChild("statistics", ImVec2(0, histogram));
      draw_statistics();
      if (spare < 0) ImGui::EndChild();
      draw_curves(curves);
      draw_weights();
    }
    ImGui::EndChild();
  }

 private:
  // ---- state: the knobs and what they measure ---------------------------------------
  int dim_ = 256;
  bool scaled_ = false;
  float tau_ = 1.0f;
  int seed_ = 0;
  bool fit_colors_ = false;
  double factor_ = 1.0;
  // Drawn once per seed at the largest d; each d uses its first d features.
  Tensor all_queries_, all_keys_, targets_;
  Measurement now_;
  // Curves over d = 2, 4, ..., 512 at the current tau and seed: [0] scaled, [1] not.
  struct Curve {
    std::array<double, kCurvePoints> variance{}, entropy{}, grad_row_median{};
  };
  std::array<Curve, 2> curves_;
  double recompute_ms_ = 0;
  std::string error_;

  void draw_inputs() {
    try {
      manual_seed(static_cast<uint64_t>(seed_));
      all_queries_ = randn({1, kQueries, kMaxDim});
      all_keys_ = randn({1, kKeys, kMaxDim});
      targets_ = randn({1, kQueries, kKeys});
    } catch (const Error& e) {
      error_ = e.what();
    }
  }

  void recompute() {
    error_.clear();
    const auto start = std::chrono::steady_clock::now();
    try {
      factor_ = score_factor(dim_, scaled_, tau_);
      now_ = measure(all_queries_, all_keys_, targets_, dim_, factor_, /*query_gradient=*/true);
      for (size_t c = 0; c < curves_.size(); ++c) {
        Curve& curve = curves_[c];
        for (int k = 0; k < kCurvePoints; ++k) {
          const int64_t d = int64_t{2} << k;
          const Measurement m = measure(all_queries_, all_keys_, targets_, d,
                                        score_factor(d, /*scaled=*/c == 0, tau_), false);
          curve.variance[static_cast<size_t>(k)] = m.variance;
          curve.entropy[static_cast<size_t>(k)] = m.entropy;
          curve.grad_row_median[static_cast<size_t>(k)] = m.grad_row_median;
        }
      }
    } catch (const Error& e) {
      error_ = e.what();
    }
    recompute_ms_ =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  }

  double predicted_variance() const { return static_cast<double>(dim_) * factor_ * factor_; }

  // ---- panel: the knobs and the argument ------------------------------------------------
  void draw_controls() {
    bool changed = false;
    ImGui::PushItemWidth(150);
    changed |=
        ImGui::SliderInt("size d", &dim_, kMinDim, kMaxDim, "%d", ImGuiSliderFlags_Logarithmic);
    changed |= ImGui::Checkbox("scale by 1/sqrt(d)", &scaled_);
    changed |= ImGui::SliderFloat("temperature tau", &tau_, 0.1f, 10.0f, "%.2f",
                                  ImGuiSliderFlags_Logarithmic);
    if (ImGui::SliderInt("seed", &seed_, 0, 99)) {
      draw_inputs();
      changed = true;
    }
    ImGui::PopItemWidth();
    if (changed) recompute();
    ImGui::Checkbox("fit map colours to the largest weight", &fit_colors_);
    ImGui::Separator();
    ImGui::Text("scores = Q K^T x %.4g", factor_);
    ImGui::Text("Q [%lld, %d], K [%lld, %d], entries ~ N(0, 1)", static_cast<long long>(kQueries),
                dim_, static_cast<long long>(kKeys), dim_);
    ImGui::Spacing();
    show_note(
        "Each entry of q and k has mean 0 and variance 1, so q . k, a sum of d such products, "
        "has variance d. Without scaling, the scores of a row spread over a range that grows "
        "like sqrt(d); the softmax then gives nearly all the weight to the largest score. "
        "Such a row barely changes when a score moves: the gradient through the softmax "
        "vanishes, and learning stalls.\n\n"
        "Dividing by sqrt(d) brings the variance back to 1 for every d. The temperature tau "
        "divides the scores once more: tau < 1 sharpens, tau > 1 flattens.");
    ImGui::Spacing();
    show_note(
        "Try: scaling off, slide d from 2 to 512 and watch the histogram widen, the entropy "
        "fall to 0 and the gradient collapse. Then tick the scaling.");
    ImGui::Spacing();
    ImGui::TextDisabled("recomputed in %.2f ms", recompute_ms_);
  }

  // ---- panel: the distribution of the scores -------------------------------------------------
  // Counts in kHistogramBins bins over [-range, range], the normal density
  // the argument predicts on top, and the band where softmax still blends.
  void draw_histogram(ImVec2 size) {
    const double predicted = predicted_variance();
    double range = kSoftBand * 1.5;
    for (double s : now_.scores) range = std::max(range, std::abs(s));
    const double bin_width = 2 * range / kHistogramBins;
    std::array<int, kHistogramBins> counts{};
    for (double s : now_.scores) {
      const int b = static_cast<int>((s + range) / bin_width);
      ++counts[static_cast<size_t>(std::clamp(b, 0, kHistogramBins - 1))];
    }
    const double total = static_cast<double>(now_.scores.size());
    auto density_count = [&](double x) {  // expected count in a bin around x
      return total * bin_width * std::exp(-x * x / (2 * predicted)) /
             std::sqrt(2 * 3.14159265358979 * predicted);
    };
    double top = 1;
    for (int c : counts) top = std::max(top, static_cast<double>(c));
    top = std::max(top, density_count(0.0)) * 1.1;

    // Through the plot piece: y counts, x scores; the legend is the x label.
    char title[96], legend[96];
    std::snprintf(title, sizeof title, "Scores q . k x %.3g: variance %.3g (predicted %.3g)",
                  factor_, now_.variance, predicted);
    std::snprintf(legend, sizeof legend,
                  "bars: the %lld scores   yellow: N(0, %.3g)   green: |score| < %.0f",
                  static_cast<long long>(total), predicted, kSoftBand);
    size.y += ImGui::GetTextLineHeight() + 6;  // the height the histogram had before the plot piece
    const PlotArea area = draw_axes(title, size, -range, range, 0, top, false, legend);
    ImDrawList* draw = ImGui::GetWindowDrawList();
    draw->AddRectFilled(ImVec2(area.at(-kSoftBand, 0).x, area.min.y),
                        ImVec2(area.at(kSoftBand, 0).x, area.max.y), IM_COL32(70, 110, 70, 90));
    for (int i = 0; i < kHistogramBins; ++i) {
      const double left = -range + bin_width * i;
      const ImVec2 bar_top = area.at(left, counts[static_cast<size_t>(i)]);
      draw->AddRectFilled(ImVec2(bar_top.x + 1, bar_top.y),
                          ImVec2(area.at(left + bin_width, 0).x, area.max.y),
                          IM_COL32(150, 150, 170, 255));
    }
    constexpr int kCurveSteps = 120;
    std::array<ImVec2, kCurveSteps + 1> curve;
    for (int i = 0; i <= kCurveSteps; ++i) {
      const double x = -range + 2 * range * i / kCurveSteps;
      curve[static_cast<size_t>(i)] = area.at(x, density_count(x));
    }
    draw->AddPolyline(curve.data(), kCurveSteps + 1, IM_COL32(255, 220, 90, 255), 0, 2.0f);
  }

  // ---- panel: entropy and gradients ------------------------------------------------------------
  void draw_statistics() {
    ImGui::BeginGroup();
    const double max_entropy = std::log(static_cast<double>(kKeys));
    ImGui::TextUnformatted("Softmax rows");
    // Wrapped: in a narrow window the column is narrower than these lines.
    ImGui::TextWrapped("mean entropy %.3f nats (a uniform row: log %lld = %.3f)", now_.entropy,
                       static_cast<long long>(kKeys), max_entropy);
    ImGui::ProgressBar(static_cast<float>(now_.entropy / max_entropy), ImVec2(-1, 0), "");
    ImGui::TextWrapped("mean largest weight in a row: %.3f (uniform: %.3f)", now_.top_weight,
                       1.0 / static_cast<double>(kKeys));
    ImGui::TextWrapped("saturated rows (one key > %.2f): %d of %lld", kSaturated,
                       now_.saturated_rows, static_cast<long long>(kQueries));
    show_note("Entropy log Tk: the row is uniform. Entropy 0: all the weight on one key.");
    ImGui::Spacing();
    ImGui::TextWrapped("Gradients of L = sum(weights * targets), targets ~ N(0, 1)");
    ImGui::TextWrapped("median row ||dL/dscores_i|| = %.3g", now_.grad_row_median);
    ImGui::TextWrapped("||dL/dscores|| = %.4g   ||dL/dqueries|| = %.4g", now_.grad_scores_norm,
                       now_.grad_queries_norm);
    show_note(
        "dL/ds_ij = w_ij (t_ij - sum_k w_ik t_ik): zero when a row is one-hot, whatever the "
        "targets, so a saturated row passes almost no gradient back to its query. The median "
        "row shows it; the total is carried by the few rows that are not yet saturated. Both "
        "come from a real backward pass through softmax and the matmul.");
    ImGui::EndGroup();
  }

  // ---- panel: the three statistics as d grows, scaled and not
  // --------------------------------------
  void draw_curves(float height) {
    ImGui::Separator();
    ImGui::TextUnformatted("As d grows (same seed and tau):");
    ImGui::SameLine();
    ImGui::TextColored(ImColor(kScaledColor), "scaled by 1/sqrt(d)");
    ImGui::SameLine();
    ImGui::TextColored(ImColor(kUnscaledColor), "not scaled");
    ImGui::SameLine();
    ImGui::TextDisabled("(white line: the current d)");
    const float width = std::floor((ImGui::GetContentRegionAvail().x - 2 * 24.0f) / 3);
    const ImVec2 size(width, height - ImGui::GetTextLineHeightWithSpacing());
    draw_curve("variance of the scores", &Curve::variance, true, 0, 0, size);
    ImGui::SameLine(0, 24.0f);
    draw_curve("mean row entropy (nats)", &Curve::entropy, false, 0,
               std::log(static_cast<double>(kKeys)), size);
    ImGui::SameLine(0, 24.0f);
    draw_curve("median row ||dL/dscores_i||", &Curve::grad_row_median, true, 0, 0, size);
  }

  // One small plot through the plot piece: x = d on a log2 axis, both
  // curves of `field`; y from lo to hi, or fitted to the data when lo == hi;
  // log y when `log_y`.
  void draw_curve(const char* title, std::array<double, kCurvePoints> Curve::*field, bool log_y,
                  double lo, double hi, ImVec2 size) const {
    if (lo == hi) {
      lo = 1e300;
      hi = -1e300;
      for (const Curve& curve : curves_) {
        for (double v : curve.*field) {
          lo = std::min(lo, log_y ? std::max(v, 1e-30) : v);
          hi = std::max(hi, v);
        }
      }
      if (!(hi > lo)) hi = log_y ? lo * 10 : lo + 1;
    }
    const PlotArea area =
        draw_axes(title, size, kMinDim, kMaxDim, lo, hi, log_y, "d (log scale)", /*log2_x=*/true);
    ImDrawList* draw = ImGui::GetWindowDrawList();
    const float now_x = area.at(dim_, lo).x;
    draw->AddLine(ImVec2(now_x, area.min.y), ImVec2(now_x, area.max.y),
                  IM_COL32(230, 230, 230, 200), 1.5f);
    for (size_t c = 0; c < curves_.size(); ++c) {
      const ImU32 color = c == 0 ? kScaledColor : kUnscaledColor;
      const auto& values = curves_[c].*field;
      std::array<ImVec2, kCurvePoints> points;
      for (int k = 0; k < kCurvePoints; ++k) {
        points[static_cast<size_t>(k)] =
            area.at(static_cast<double>(int64_t{2} << k), values[static_cast<size_t>(k)]);
        draw->AddCircleFilled(points[static_cast<size_t>(k)], 3.0f, color);
      }
      draw->AddPolyline(points.data(), kCurvePoints, color, 0, 2.0f);
    }
  }

  // ---- panel: the weights of the first queries
  // --------------------------------------------------------
  void draw_weights() {
    ImGui::Separator();
    const Tensor shown = narrow(now_.weights, 0, 0, kShownQueries);
    const viz::ColorScale scale{viz::Colormap::Viridis, 0.0,
                                fit_colors_ ? std::max(max(shown).item(), 1e-12) : 1.0};
    ImGui::Text("Attention weights of the first %lld queries over the %lld keys",
                static_cast<long long>(kShownQueries), static_cast<long long>(kKeys));
    // The note on the same line where it fits, else wrapped below.
    const char* note = fit_colors_ ? "(colours: 0 to the largest weight)"
                                   : "(colours: 0 to 1, so a saturated row shows one bright cell)";
    ImGui::SameLine();
    if (ImGui::CalcTextSize(note).x > ImGui::GetContentRegionAvail().x) ImGui::NewLine();
    show_note(note);
    const float bar_width = 70.0f;
    draw_heatmap({"scaling/weights", "weights " + describe(shown), shown, Tensor(), scale, "Keys",
                  "Queries", "query", "key", 24, false},
                 ImVec2(ImGui::GetContentRegionAvail().x - bar_width, 0));
    ImGui::SameLine();
    draw_colorbar("weights bar", scale, 120);
  }
};

}  // namespace

std::unique_ptr<Scene> make_scaling_scene() {
  return std::make_unique<ScalingScene>();
}

}  // namespace ag::viewer
