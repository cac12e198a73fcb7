// The training scene's Nadaraya-Watson task (see training_tasks.h).
//
// Legend: n training points (= test points).
#include <imgui.h>

#include <cmath>
#include <cstdio>

#include "heatmap_widget.h"
#include "plot.h"
#include "scene.h"
#include "training_tasks.h"

namespace ag::viewer {
namespace {

// ---- Nadaraya-Watson kernel regression with a learned width ------------------
// d2l's "Attention Pooling: Nadaraya-Watson Kernel Regression", parametric:
//   score(q, k) = -((q - k) w)^2 / 2,   f(q) = sum_i softmax_i(score(q, x_i)) y_i
// Keys x_i and values y_i are the n training points. Training queries are the
// training inputs themselves, each with its own key masked (leave one out, as
// d2l removes it from the keys): otherwise the best w would be infinite, each
// point copying its own noisy y. The test queries, n points evenly spaced
// over [0, 5), draw the fitted curve. Loss: mean squared error against the training targets.
constexpr int64_t kPoints = 40;

// f(x) = 2 sin(x) + x^0.8, elementwise (attograd has no sin; the data needs
// no gradient).
Tensor nw_truth(const Tensor& x) {
  std::vector<double> y = x.to_vector();
  for (double& v : y) v = 2 * std::sin(v) + std::pow(v, 0.8);
  return tensor(y, x.shape());
}

// Scores [n, m] of queries [n] against keys [m] for width w [1].
Tensor nw_scores(const Tensor& queries, const Tensor& keys, const Tensor& w) {
  const Tensor distance = (unsqueeze(queries, 1) - unsqueeze(keys, 0)) * w;
  return -0.5 * distance * distance;
}

class NadarayaWatsonTask : public AdamTask {
 public:
  const char* title() const override { return "Nadaraya-Watson regression"; }
  std::vector<RecordField> fields() const override {
    return {{"w", {1}},
            {"shown.loss", {1}},
            {"shown.grad.w", {1}},
            {"shown.weights", {kPoints, kPoints}},
            {"shown.grad_weights", {kPoints, kPoints}},
            {"shown.grad_scores", {kPoints, kPoints}},
            {"shown.test_weights", {kPoints, kPoints}},
            {"shown.fit", {kPoints}}};
  }
  std::vector<Series> series() const override {
    return {{"shown.loss", "training loss (leave one out)", kFitColor}};
  }
  double default_learning_rate() const override { return 0.05; }
  const char* note() const override {
    return "d2l's kernel regression: predict y at x by averaging the training targets y_i, "
           "weighted by softmax_i(-((x - x_i) w)^2 / 2). The width w is the one parameter "
           "learned. A small w weights every point alike (a flat curve); as w grows, each "
           "test input attends to the training inputs near it and the weight map's band "
           "narrows. Too large a w would copy the noise: the leave-one-out loss stops w "
           "before that.";
  }
  std::map<std::string, Tensor> data() const override {
    return {
        {"x_train", x_train_}, {"y_train", y_train_}, {"x_test", x_test_}, {"y_truth", y_truth_}};
  }

  void draw(const TrainingSession& session, const std::map<std::string, Tensor>& record) override {
    const int64_t step = session.shown_step();
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float spacing = ImGui::GetStyle().ItemSpacing.x;
    const float row_height = std::floor((avail.y - 3 * ImGui::GetTextLineHeightWithSpacing()) / 2);
    const float bar = 70.0f;
    char text[160];
    std::snprintf(text, sizeof text,
                  "1. The model at step %lld: w = %.3f. Test inputs query the training inputs.",
                  static_cast<long long>(step), record.at("w").item());
    ImGui::TextUnformatted(text);
    const ImVec2 third(std::floor((avail.x - 3 * bar - 6 * spacing) / 3), row_height);
    // Narrow windows: the long axis labels would run into the next map, so
    // the maps say "keys" and "queries" (the lines above them say which
    // inputs those are), and the first row gives its map a larger share.
    const bool narrow =
        ImGui::CalcTextSize("training inputs (keys) \xe2\x86\x92   (training inputs \xe2\x86\x93)")
            .x > third.x + bar;
    const char* const keys = narrow ? "keys" : "training inputs (keys)";
    const char* const queries = narrow ? "queries" : "training inputs";
    const float plot_width = std::floor((avail.x - bar - 3 * spacing) * (narrow ? 0.33f : 0.36f));
    draw_fit(record, narrow ? "Fit f(x), truth" : "Fitted curve f(x) and the truth",
             ImVec2(plot_width, row_height), narrow);
    ImGui::SameLine();
    const float map_width = std::floor(avail.x - 2 * plot_width - bar - 3 * spacing);
    const viz::ColorScale weight_scale{viz::Colormap::Viridis, 0.0, kWeightTop};
    draw_heatmap({"training/nw_test_weights",
                  narrow ? "weights (up to 0.2)" : "weights (colours stop at 0.2)",
                  record.at("shown.test_weights"), Tensor(), weight_scale, keys, "test inputs",
                  "test input", "training input", 40},
                 ImVec2(map_width, row_height));
    colorbar_beside_last_map("test weights bar", weight_scale);
    ImGui::SameLine();
    session.draw_curves(ImVec2(plot_width, row_height));

    std::snprintf(text, sizeof text,
                  "2. The training step: each training input queries the others (its own key "
                  "masked), loss %.4f",
                  record.at("shown.loss").item());
    ImGui::TextUnformatted(text);
    const Tensor& grad_weights = record.at("shown.grad_weights");
    const Tensor& grad_scores = record.at("shown.grad_scores");
    draw_heatmap({"training/nw_weights", "weights", record.at("shown.weights"), keep_, weight_scale,
                  keys, queries, "query", "key", 40},
                 third);
    colorbar_beside_last_map("weights bar", weight_scale);
    ImGui::SameLine();
    const viz::ColorScale grad_weights_scale = gradient_scale({grad_weights});
    draw_heatmap({"training/nw_grad_weights", "dL/dweights", grad_weights, Tensor(),
                  grad_weights_scale, keys, queries, "query", "key", 40},
                 third);
    colorbar_beside_last_map("dL/dweights bar", grad_weights_scale);
    ImGui::SameLine();
    const viz::ColorScale grad_scores_scale = gradient_scale({grad_scores});
    draw_heatmap({"training/nw_grad_scores", "dL/dscores", grad_scores, Tensor(), grad_scores_scale,
                  keys, queries, "query", "key", 40},
                 third);
    colorbar_beside_last_map("dL/dscores bar", grad_scores_scale);
  }

 protected:
  void init() override {
    // As tutorial 8: one training input in each of n equal slots of [0, 5),
    // so they come sorted; targets with noise of standard deviation 0.5.
    x_train_ = (arange(kPoints) + rand({kPoints})) * (5.0 / kPoints);
    y_train_ = nw_truth(x_train_) + 0.5 * randn({kPoints});
    x_test_ = arange(kPoints) * (5.0 / kPoints);
    y_truth_ = nw_truth(x_test_);
    keep_ = logical_not(eq(unsqueeze(arange(kPoints), 1), unsqueeze(arange(kPoints), 0)));
    // A wide kernel to start from (d2l draws w from [0, 1)): the curve starts
    // flat, and the learner watches it bend.
    w_ = (0.1 + 0.2 * rand({1})).requires_grad_();
  }
  std::vector<std::vector<Tensor>> parameter_groups() const override { return {{w_}}; }

  std::map<std::string, Tensor> evaluate() override {
    const Staged staged = staged_backward(
        nw_scores(x_train_, x_train_, w_),
        [&](const Tensor& scores) {
          return nn::masked_softmax_keep(scores, keep_, nn::MaskedRows::Zero);
        },
        [&](const Tensor& weights) { return mse_loss(matmul(weights, y_train_), y_train_); });
    NoGradGuard no_grad;
    const Tensor test_weights = softmax(nw_scores(x_test_, x_train_, w_), -1);
    return {{"w", w_.detach().clone()},
            {"shown.loss", reshape(staged.loss, {1})},
            {"shown.grad.w", w_.grad().clone()},
            {"shown.weights", staged.weights},
            {"shown.grad_weights", staged.grad_weights},
            {"shown.grad_scores", staged.grad_scores},
            {"shown.test_weights", test_weights},
            {"shown.fit", matmul(test_weights, y_train_)}};
  }

 private:
  static constexpr double kWeightTop = 0.2;

  // The truth, the training points and the fitted curve of the step shown;
  // a narrow plot's legend says only "truth", "data" and "fit" (the long
  // names made it wider than the plot, over the y labels, at 1024x700).
  void draw_fit(const std::map<std::string, Tensor>& record, const char* title, ImVec2 size,
                bool narrow) const {
    const std::vector<double> x = x_train_.to_vector(), y = y_train_.to_vector(),
                              x_test = x_test_.to_vector(), truth = y_truth_.to_vector(),
                              fit = record.at("shown.fit").to_vector();
    const PlotArea area = draw_axes(title, size, 0, 5, -2, 5, false, "x");
    ImDrawList* draw = ImGui::GetWindowDrawList();
    std::vector<ImVec2> truth_line, fit_line;
    for (size_t i = 0; i < x_test.size(); ++i) {
      truth_line.push_back(area.at(x_test[i], truth[i]));
      fit_line.push_back(area.at(x_test[i], fit[i]));
    }
    draw->AddPolyline(truth_line.data(), static_cast<int>(truth_line.size()), kTruthColor, 0, 1.5f);
    for (size_t i = 0; i < x.size(); ++i)
      draw->AddCircleFilled(area.at(x[i], y[i]), 2.5f, kPointColor);
    draw->AddPolyline(fit_line.data(), static_cast<int>(fit_line.size()), kFitColor, 0, 2.5f);
    draw_legend(area,
                {{narrow ? "truth" : "truth 2 sin x + x^0.8", kTruthColor},
                 {narrow ? "data" : "training points (noisy)", kPointColor},
                 {narrow ? "fit" : "fit: attention pooling", kFitColor}},
                /*bottom=*/true);
  }

  Tensor x_train_, y_train_, x_test_, y_truth_;  // [n] each
  Tensor keep_;                                  // bool [n, n]: false on the diagonal
  Tensor w_;                                     // [1], the kernel's width
};

}  // namespace

std::unique_ptr<TrainingTask> make_nadaraya_watson_task() {
  return std::make_unique<NadarayaWatsonTask>();
}

}  // namespace ag::viewer
