// Scene "training" (see scene_training.h): two small tasks that train live.
//
// Each frame: Adam steps on the gradients of the last evaluation, then a new
// evaluation (forward and a staged backward, so that dL/dweights and
// dL/dscores can be shown), whose maps go into the history; the maps on
// screen are always read from the history, live or scrubbed back.
//
// Legend: n training points (= test points) of Nadaraya-Watson; B examples,
// T keys per example, d key and query size, v value size, h additive
// attention's hidden units.
#include "scene_training.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <utility>

#include "heatmap_widget.h"

namespace ag::viewer {
namespace {

// ---- the history: the last kHistory steps, in memory allocated once ---------------
// Each record is the same list of named tensors of fixed shapes (the maps, the
// losses, the parameters of one step), stored as float32 in one block: step s
// lives in slot s % capacity, so the newest overwrites the oldest.
class History {
 public:
  struct Field {
    std::string name;
    Shape shape;
  };
  History(std::vector<Field> fields, int64_t capacity) : fields_(std::move(fields)) {
    for (const Field& field : fields_) {
      offsets_.push_back(record_size_);
      record_size_ += numel_of(field.shape);
    }
    capacity_ = capacity;
    // Filled, not just reserved: the pages are touched now, so the resident
    // set does not creep up while the history fills.
    data_.assign(static_cast<size_t>(capacity_ * record_size_), 0.0f);
  }
  void clear() { size_ = 0; }
  // The record of step newest() + 1 (or of step 0 after clear()).
  void push(const std::map<std::string, Tensor>& record) {
    newest_ = size_ == 0 ? 0 : newest_ + 1;
    size_ = std::min(size_ + 1, capacity_);
    float* slot = data_.data() + (newest_ % capacity_) * record_size_;
    for (size_t f = 0; f < fields_.size(); ++f) {
      const Tensor& t = record.at(fields_[f].name);
      AG_CHECK(t.shape() == fields_[f].shape, "History::push",
               fields_[f].name + " is " + shape_str(t.shape()) + ", the history holds " +
                   shape_str(fields_[f].shape));
      const std::vector<double> values = t.to_vector();
      std::copy(values.begin(), values.end(), slot + offsets_[f]);
    }
  }
  // The record of a step the history holds, as float32 tensors.
  std::map<std::string, Tensor> at(int64_t step) const {
    AG_CHECK(size_ > 0 && step >= oldest() && step <= newest_, "History::at",
             "step " + std::to_string(step) + " is not held");
    const float* slot = data_.data() + (step % capacity_) * record_size_;
    std::map<std::string, Tensor> record;
    for (size_t f = 0; f < fields_.size(); ++f) {
      const float* first = slot + offsets_[f];
      record[fields_[f].name] =
          tensor(std::vector<double>(first, first + numel_of(fields_[f].shape)), fields_[f].shape);
    }
    return record;
  }
  int64_t newest() const { return newest_; }
  int64_t oldest() const { return newest_ - size_ + 1; }

 private:
  static int64_t numel_of(const Shape& shape) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    return n;
  }
  std::vector<Field> fields_;
  std::vector<int64_t> offsets_;
  int64_t record_size_ = 0, capacity_ = 0;
  std::vector<float> data_;
  int64_t newest_ = -1, size_ = 0;
};

// ---- the loss since step 0, in bounded memory ----------------------------------------
// At most kMaxPoints points; when full, neighbours merge (their mean) and each
// point stands for twice as many steps, so a long run still fits.
class LossCurve {
 public:
  static constexpr size_t kMaxPoints = 256;
  LossCurve() { points_.reserve(kMaxPoints); }
  void clear() {
    points_.clear();
    stride_ = 1;
    pending_sum_ = 0;
    pending_ = 0;
  }
  void add(double loss) {
    pending_sum_ += loss;
    if (++pending_ < stride_) return;
    points_.push_back(static_cast<float>(pending_sum_ / static_cast<double>(stride_)));
    pending_sum_ = 0;
    pending_ = 0;
    if (points_.size() < kMaxPoints) return;
    for (size_t i = 0; i < kMaxPoints / 2; ++i) {
      points_[i] = (points_[2 * i] + points_[2 * i + 1]) / 2;
    }
    points_.resize(kMaxPoints / 2);
    stride_ *= 2;
  }
  const std::vector<float>& points() const { return points_; }
  int64_t steps_per_point() const { return stride_; }

 private:
  std::vector<float> points_;
  int64_t stride_ = 1;
  double pending_sum_ = 0;
  int64_t pending_ = 0;
};

// ---- the chain rule one link at a time ------------------------------------------------
// attograd keeps gradients for leaves only (it has no retain_grad), so to see
// dL/dweights and dL/dscores the graph is cut where we want to look. Each cut
// end becomes a leaf copy (detach, then requires_grad_), and three backward
// calls carry the gradient across the cuts:
//   scores  = f(parameters)           (built by the caller; its graph is kept)
//   weights = weights_of(scores')     scores' = scores.detach().requires_grad_()
//   loss    = loss_of(weights')       weights' = weights.detach().requires_grad_()
//   1. loss.backward()                fills weights'.grad() = dL/dweights
//   2. weights.backward(dL/dweights)  fills scores'.grad()  = dL/dscores
//   3. scores.backward(dL/dscores)    fills the parameters' grad(), as one
//                                     loss.backward() of the uncut graph would
struct Staged {
  Tensor weights, loss, grad_weights, grad_scores;
};
Staged staged_backward(const Tensor& scores, const std::function<Tensor(const Tensor&)>& weights_of,
                       const std::function<Tensor(const Tensor&)>& loss_of) {
  Tensor scores_leaf = scores.detach().requires_grad_();
  const Tensor weights = weights_of(scores_leaf);
  Tensor weights_leaf = weights.detach().requires_grad_();
  Staged out;
  out.loss = loss_of(weights_leaf);
  out.loss.backward();
  out.grad_weights = weights_leaf.grad();
  weights.backward(out.grad_weights);
  out.grad_scores = scores_leaf.grad();
  scores.backward(out.grad_scores);
  out.weights = weights_leaf.detach();
  out.loss = out.loss.detach();
  return out;
}

// ---- plots: axes, ticks and lines with ImDrawList ------------------------------------
const ImU32 kTruthColor = IM_COL32(200, 200, 200, 255);
const ImU32 kPointColor = IM_COL32(255, 170, 60, 255);
const ImU32 kFitColor = IM_COL32(90, 170, 255, 255);
const ImU32 kAdditiveColor = IM_COL32(255, 150, 50, 255);
const ImU32 kDotColor = IM_COL32(90, 170, 255, 255);
const ImU32 kAxisColor = IM_COL32(140, 140, 150, 255);

// Data (x, y) to screen pixels inside a plot's box; y is log10 when log_y.
struct PlotArea {
  ImVec2 min, max;
  double x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  bool log_y = false;
  ImVec2 at(double x, double y) const {
    const double v = log_y ? std::log10(std::max(y, 1e-30)) : y;
    const double tx = (x - x0) / (x1 - x0), ty = (v - y0) / (y1 - y0);
    return ImVec2(min.x + static_cast<float>(std::clamp(tx, 0.0, 1.0)) * (max.x - min.x),
                  max.y - static_cast<float>(std::clamp(ty, 0.0, 1.0)) * (max.y - min.y));
  }
};

// Tick positions for [lo, hi]: multiples of 1, 2 or 5 times a power of ten,
// at most about six of them.
std::vector<double> linear_ticks(double lo, double hi) {
  const double raw = (hi - lo) / 5;
  const double decade = std::pow(10.0, std::floor(std::log10(raw)));
  double step = decade;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * decade;
    if (step >= raw) break;
  }
  std::vector<double> ticks;
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-6; t += step) {
    ticks.push_back(std::abs(t) < step * 1e-6 ? 0.0 : t);
  }
  return ticks;
}

// Log-axis ticks for [10^lo, 10^hi]: 1, 2 and 5 times each power of ten, or
// only the powers when that would be too many.
std::vector<double> log_ticks(double lo, double hi) {
  std::vector<double> ticks;
  for (const bool powers_only : {false, true}) {
    ticks.clear();
    for (double k = std::floor(lo); k <= std::ceil(hi); ++k) {
      for (double m : {1.0, 2.0, 5.0}) {
        if (powers_only && m != 1.0) continue;
        const double v = std::log10(m) + k;
        if (v >= lo - 1e-9 && v <= hi + 1e-9) ticks.push_back(std::pow(10.0, v));
      }
    }
    if (ticks.size() <= 7) break;
  }
  return ticks;
}

// Draws a plot's title, box, ticks and x label at the cursor, `size` big,
// reserves the space and returns where data goes.
PlotArea draw_axes(const char* title, ImVec2 size, double x0, double x1, double y0, double y1,
                   bool log_y, const char* xlabel) {
  const float line = ImGui::GetTextLineHeight();
  const ImVec2 cursor = ImGui::GetCursorScreenPos();
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
  const ImU32 dim = ImGui::GetColorU32(ImGuiCol_TextDisabled);
  PlotArea area;
  area.log_y = log_y;
  area.x0 = x0;
  area.x1 = x1 > x0 ? x1 : x0 + 1;
  area.y0 = log_y ? std::log10(y0) : y0;
  area.y1 = log_y ? std::log10(y1) : y1;
  if (area.y1 <= area.y0) area.y1 = area.y0 + 1;
  area.min = ImVec2(std::floor(cursor.x + 52), std::floor(cursor.y + line + 6));
  area.max =
      ImVec2(std::floor(cursor.x + size.x - 8), std::floor(cursor.y + size.y - 2 * line - 8));
  draw->AddText(ImVec2(area.min.x, cursor.y), text, title);
  draw->AddRectFilled(area.min, area.max, IM_COL32(20, 22, 28, 255));
  draw->AddRect(area.min, area.max, kAxisColor);
  char label[32];
  const std::vector<double> y_ticks =
      log_y ? log_ticks(area.y0, area.y1) : linear_ticks(area.y0, area.y1);
  for (double t : y_ticks) {
    const float y = area.at(x0, t).y;
    draw->AddLine(ImVec2(area.min.x - 4, y), ImVec2(area.min.x, y), kAxisColor);
    draw->AddLine(ImVec2(area.min.x, y), ImVec2(area.max.x, y), IM_COL32(50, 52, 60, 255));
    std::snprintf(label, sizeof label, "%g", t);
    const float w = ImGui::CalcTextSize(label).x;
    draw->AddText(ImVec2(area.min.x - 6 - w, y - line / 2), text, label);
  }
  for (double t : linear_ticks(area.x0, area.x1)) {
    const float x = area.at(t, y_ticks.empty() ? 0.0 : y_ticks.front()).x;
    draw->AddLine(ImVec2(x, area.max.y), ImVec2(x, area.max.y + 4), kAxisColor);
    std::snprintf(label, sizeof label, "%g", t);
    const float w = ImGui::CalcTextSize(label).x;
    draw->AddText(ImVec2(x - w / 2, area.max.y + 4), text, label);
  }
  draw->AddText(ImVec2(area.min.x, area.max.y + line + 6), dim, xlabel);
  ImGui::Dummy(size);
  return area;
}

// One entry per line of the legend, in the plot's top-right corner (or the
// bottom-right one, where the data leaves room).
void draw_legend(const PlotArea& area, const std::vector<std::pair<std::string, ImU32>>& entries,
                 bool bottom = false) {
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const float line = ImGui::GetTextLineHeight();
  float width = 0;
  for (const auto& [label, color] : entries) {
    width = std::max(width, ImGui::CalcTextSize(label.c_str()).x);
  }
  const float height = line * static_cast<float>(entries.size());
  const ImVec2 corner(area.max.x - width - 40, bottom ? area.max.y - height - 6 : area.min.y + 6);
  draw->AddRectFilled(ImVec2(corner.x - 6, corner.y - 4),
                      ImVec2(area.max.x - 6, corner.y + height + 4), IM_COL32(20, 22, 28, 230));
  for (size_t i = 0; i < entries.size(); ++i) {
    const float y = corner.y + line * (static_cast<float>(i) + 0.5f);
    draw->AddLine(ImVec2(corner.x, y), ImVec2(corner.x + 24, y), entries[i].second, 3.0f);
    draw->AddText(ImVec2(corner.x + 30, y - line / 2), ImGui::GetColorU32(ImGuiCol_Text),
                  entries[i].first.c_str());
  }
}

// A heatmap's colour bar beside it, as tall as the map's cells.
void colorbar_beside_last_map(const char* id, const viz::ColorScale& scale) {
  const DrawnHeatmap map = drawn_heatmaps().back();
  ImGui::SameLine();
  // A group, so that what follows on the line starts at the line's top; in
  // it the bar starts level with the cells (its top label half a line higher).
  ImGui::BeginGroup();
  const float drop = map.y - ImGui::GetTextLineHeight() / 2 - ImGui::GetCursorScreenPos().y -
                     ImGui::GetStyle().ItemSpacing.y;
  if (drop > 0) ImGui::Dummy(ImVec2(1, drop));
  draw_colorbar(id, scale, map.cell * static_cast<float>(map.rows));
  ImGui::EndGroup();
}

// Gradients: blue negative, white zero, red positive, symmetric around 0.
viz::ColorScale gradient_scale(const std::vector<Tensor>& maps) {
  std::vector<double> all;
  for (const Tensor& m : maps) {
    const std::vector<double> values = m.to_vector();
    all.insert(all.end(), values.begin(), values.end());
  }
  return viz::fit_scale(all, viz::Colormap::Diverging);
}

}  // namespace

// ---- what both tasks share ---------------------------------------------------------------
// The step count, Adam (one per model), the history and the loss curves. A
// task says how to make its data and parameters, how to evaluate them and
// how to draw a step.
class TrainingScene::Trainer {
 public:
  struct Curve {
    std::string field;  // the record's loss field
    std::string label;  // in the legend
    ImU32 color;
  };
  Trainer(std::vector<History::Field> fields, std::vector<Curve> curves, double lr)
      : history_(std::move(fields), TrainingScene::kHistory),
        curves_(std::move(curves)),
        losses_(curves_.size()),
        lr_(lr) {}
  virtual ~Trainer() = default;
  virtual const char* title() const = 0;
  // The note under the controls: what the task is and what to look for.
  virtual const char* note() const = 0;
  // The fixed data (inputs, targets, lengths) by name.
  virtual std::map<std::string, Tensor> data() const = 0;
  // Draws step `step` of the history (`record`) in the space left.
  virtual void draw(const std::map<std::string, Tensor>& record, int64_t step) = 0;

  // Step 0 again: data and parameters drawn from `seed`, fresh Adam, empty
  // history and curves, then the first evaluation.
  void reset(uint64_t seed) {
    manual_seed(seed);
    init();
    for (LossCurve& curve : losses_) curve.clear();
    history_.clear();
    rebuild_optimizers();
    evaluate_and_record();
    first_loss_ = last_loss_;
  }
  // One Adam step on the gradients of the newest evaluation, then the next.
  void advance() {
    for (auto& optimizer : optimizers_) optimizer->step();
    evaluate_and_record();
  }
  // Adam's learning rate is fixed at construction (as in PyTorch's
  // constructor), so a new rate means a new Adam: its moments start over.
  void set_learning_rate(double lr) {
    lr_ = lr;
    rebuild_optimizers();
  }
  double learning_rate() const { return lr_; }
  const History& history() const { return history_; }
  // Mean over the curves (the models) of the loss at step 0 and now.
  double first_loss() const { return first_loss_; }
  double last_loss() const { return last_loss_; }

 protected:
  // Data and initial parameters (the seed is set).
  virtual void init() = 0;
  // One Adam for each group (each model).
  virtual std::vector<std::vector<Tensor>> parameter_groups() const = 0;
  // Forward and backward at the current parameters (their grad() filled for
  // Adam): the record of this step, with the fields the history holds.
  virtual std::map<std::string, Tensor> evaluate() = 0;

  // The loss curves since step 0, a vertical line at the step shown.
  void draw_loss_plot(ImVec2 size, int64_t shown_step) const {
    double lo = HUGE_VAL, hi = 0;
    for (const LossCurve& curve : losses_) {
      for (float v : curve.points()) {
        lo = std::min(lo, static_cast<double>(v));
        hi = std::max(hi, static_cast<double>(v));
      }
    }
    lo = std::max(lo, 1e-6);
    const int64_t stride = losses_.front().steps_per_point();
    const double last_x =
        std::max<double>(1, static_cast<double>(losses_.front().points().size()) * stride);
    const PlotArea area = draw_axes("Loss (log scale) since step 0", size, 0, last_x, lo / 1.2,
                                    hi * 1.2, true, "step");
    ImDrawList* draw = ImGui::GetWindowDrawList();
    std::vector<std::pair<std::string, ImU32>> legend;
    for (size_t c = 0; c < curves_.size(); ++c) {
      std::vector<ImVec2> line;
      const std::vector<float>& points = losses_[c].points();
      for (size_t i = 0; i < points.size(); ++i) {
        line.push_back(area.at(static_cast<double>(static_cast<int64_t>(i) * stride), points[i]));
      }
      draw->AddPolyline(line.data(), static_cast<int>(line.size()), curves_[c].color, 0, 2.0f);
      legend.emplace_back(curves_[c].label, curves_[c].color);
    }
    const float x = area.at(static_cast<double>(shown_step), 1.0).x;
    draw->AddLine(ImVec2(x, area.min.y), ImVec2(x, area.max.y), IM_COL32(255, 255, 255, 120));
    draw_legend(area, legend);
  }

 private:
  void rebuild_optimizers() {
    optimizers_.clear();
    for (auto& group : parameter_groups()) {
      optimizers_.push_back(std::make_unique<optim::Adam>(group, lr_));
    }
  }
  void evaluate_and_record() {
    for (auto& optimizer : optimizers_) optimizer->zero_grad();
    const std::map<std::string, Tensor> record = evaluate();
    history_.push(record);
    double sum = 0;
    for (size_t c = 0; c < curves_.size(); ++c) {
      const double loss = record.at(curves_[c].field).item();
      AG_CHECK(std::isfinite(loss), title(),
               "the loss is no longer finite; lower the learning rate and reset");
      losses_[c].add(loss);
      sum += loss;
    }
    last_loss_ = sum / static_cast<double>(curves_.size());
  }

  History history_;
  std::vector<Curve> curves_;
  std::vector<LossCurve> losses_;
  std::vector<std::unique_ptr<optim::Adam>> optimizers_;
  double lr_;
  double first_loss_ = 0, last_loss_ = 0;
};

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

class NadarayaWatsonTask : public TrainingScene::Trainer {
 public:
  NadarayaWatsonTask()
      : Trainer({{"w", {1}},
                 {"shown.loss", {1}},
                 {"shown.grad.w", {1}},
                 {"shown.weights", {kPoints, kPoints}},
                 {"shown.grad_weights", {kPoints, kPoints}},
                 {"shown.grad_scores", {kPoints, kPoints}},
                 {"shown.test_weights", {kPoints, kPoints}},
                 {"shown.fit", {kPoints}}},
                {{"shown.loss", "training loss (leave one out)", kFitColor}}, 0.05) {}
  const char* title() const override { return "Nadaraya-Watson regression"; }
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

  void draw(const std::map<std::string, Tensor>& record, int64_t step) override {
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float spacing = ImGui::GetStyle().ItemSpacing.x;
    const float row_height = std::floor((avail.y - 3 * ImGui::GetTextLineHeightWithSpacing()) / 2);
    const float bar = 70.0f;
    char text[160];
    std::snprintf(text, sizeof text,
                  "1. The model at step %lld: w = %.3f. Test inputs query the training inputs.",
                  static_cast<long long>(step), record.at("w").item());
    ImGui::TextUnformatted(text);
    const float plot_width = std::floor((avail.x - bar - 3 * spacing) * 0.36f);
    draw_fit(record, ImVec2(plot_width, row_height));
    ImGui::SameLine();
    const float map_width = std::floor(avail.x - 2 * plot_width - bar - 3 * spacing);
    const viz::ColorScale weight_scale{viz::Colormap::Viridis, 0.0, kWeightTop};
    draw_heatmap({"training/nw_test_weights", "weights (colours stop at 0.2)",
                  record.at("shown.test_weights"), Tensor(), weight_scale, "training inputs (keys)",
                  "test inputs", "test input", "training input", 40},
                 ImVec2(map_width, row_height));
    colorbar_beside_last_map("test weights bar", weight_scale);
    ImGui::SameLine();
    draw_loss_plot(ImVec2(plot_width, row_height), step);

    std::snprintf(text, sizeof text,
                  "2. The training step: each training input queries the others (its own key "
                  "masked), loss %.4f",
                  record.at("shown.loss").item());
    ImGui::TextUnformatted(text);
    const ImVec2 third(std::floor((avail.x - 3 * bar - 6 * spacing) / 3), row_height);
    const Tensor& grad_weights = record.at("shown.grad_weights");
    const Tensor& grad_scores = record.at("shown.grad_scores");
    draw_heatmap({"training/nw_weights", "weights", record.at("shown.weights"), keep_, weight_scale,
                  "training inputs (keys)", "training inputs", "query", "key", 40},
                 third);
    colorbar_beside_last_map("weights bar", weight_scale);
    ImGui::SameLine();
    const viz::ColorScale grad_weights_scale = gradient_scale({grad_weights});
    draw_heatmap(
        {"training/nw_grad_weights", "dL/dweights", grad_weights, Tensor(), grad_weights_scale,
         "training inputs (keys)", "training inputs", "query", "key", 40},
        third);
    colorbar_beside_last_map("dL/dweights bar", grad_weights_scale);
    ImGui::SameLine();
    const viz::ColorScale grad_scores_scale = gradient_scale({grad_scores});
    draw_heatmap({"training/nw_grad_scores", "dL/dscores", grad_scores, Tensor(), grad_scores_scale,
                  "training inputs (keys)", "training inputs", "query", "key", 40},
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
        [&](const Tensor& scores) { return masked_softmax(scores, keep_, MaskedRows::Zero); },
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

  // The truth, the training points and the fitted curve of the step shown.
  void draw_fit(const std::map<std::string, Tensor>& record, ImVec2 size) const {
    const std::vector<double> x = x_train_.to_vector(), y = y_train_.to_vector(),
                              x_test = x_test_.to_vector(), truth = y_truth_.to_vector(),
                              fit = record.at("shown.fit").to_vector();
    const PlotArea area =
        draw_axes("Fitted curve f(x) and the truth", size, 0, 5, -2, 5, false, "x");
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
                {{"truth 2 sin x + x^0.8", kTruthColor},
                 {"training points (noisy)", kPointColor},
                 {"fit: attention pooling", kFitColor}},
                /*bottom=*/true);
  }

  Tensor x_train_, y_train_, x_test_, y_truth_;  // [n] each
  Tensor keep_;                                  // bool [n, n]: false on the diagonal
  Tensor w_;                                     // [1], the kernel's width
};

// ---- retrieval, additive vs dot product ------------------------------------------
// B examples, each with T keys and values of which the first valid_len are
// real and the rest padding (masked with d2l's valid_lens). The query is a
// noisy copy of one valid key; the right output is that key's value. Two
// models learn it from the same data:
//   additive     d2l's AdditiveAttention: w_v . tanh(W_q q + W_k k), h hidden units
//   dot product  learned projections W_q, W_k, then (W_q q) . (W_k k) / sqrt(d)
// with about as many parameters (h = 8: 136 vs 128). Loss: mean squared error
// of the output against the right value, full batch, one Adam per model.
constexpr int64_t kExamples = 16, kKeys = 8, kSize = 8, kValueSize = 4, kHiddens = 8;

struct Model {
  const char* name;  // "additive", "dot": the record's prefix
  const char* label;
  ImU32 color;
};
const Model kModels[] = {{"additive", "additive", kAdditiveColor},
                         {"dot", "dot product", kDotColor}};

// The parameters by module name, and their shapes.
const std::pair<const char*, Shape> kRetrievalParameters[] = {
    {"additive.W_k.weight", {kHiddens, kSize}},
    {"additive.W_q.weight", {kHiddens, kSize}},
    {"additive.w_v.weight", {1, kHiddens}},
    {"dot.W_q.weight", {kSize, kSize}},
    {"dot.W_k.weight", {kSize, kSize}}};

std::vector<History::Field> retrieval_fields() {
  std::vector<History::Field> fields;
  for (const auto& [name, shape] : kRetrievalParameters) {
    fields.push_back({name, shape});
    fields.push_back({std::string("shown.grad.") + name, shape});
  }
  for (const Model& model : kModels) {
    const std::string prefix = std::string("shown.") + model.name;
    fields.push_back({prefix + ".loss", {1}});
    for (const char* map : {".weights", ".grad_weights", ".grad_scores"}) {
      fields.push_back({prefix + map, {kExamples, kKeys}});
    }
  }
  return fields;
}

class RetrievalTask : public TrainingScene::Trainer {
 public:
  RetrievalTask()
      : Trainer(retrieval_fields(),
                {{"shown.additive.loss", "additive", kAdditiveColor},
                 {"shown.dot.loss", "dot product", kDotColor}},
                0.01) {}
  const char* title() const override { return "Retrieval: additive vs dot product"; }
  const char* note() const override {
    return "Each of the 16 examples has 8 keys, some of them padding (hatched: past its "
           "valid_len, masked), and a query that is a noisy copy of one valid key (framed in "
           "red). The right output is that key's value, so the right weights put 1 on the "
           "framed key. Both models start from random parameters and see the same data; "
           "each has its own Adam. Dot product compares q and k directly, so learning W_q and "
           "W_k to match them is easy; additive attention must build a match test out of "
           "tanh units, and learns more slowly.";
  }
  std::map<std::string, Tensor> data() const override {
    return {{"queries", queries_},       {"keys", keys_},     {"values", values_},
            {"valid_lens", valid_lens_}, {"answer", answer_}, {"target", target_}};
  }

  void draw(const std::map<std::string, Tensor>& record, int64_t step) override {
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float spacing = ImGui::GetStyle().ItemSpacing.x;
    // Per pair: two maps kGap apart (room for the first one's axis label), a
    // colour bar and its labels, the spacing between. The maps are as wide
    // as that allows (cells square, their tick labels ~30 px); the loss plot
    // takes the height they leave.
    const float bar = 70.0f, line = ImGui::GetTextLineHeightWithSpacing();
    const float map_width = std::floor((avail.x - 3 * (bar + kGap) - 6 * spacing) / 6);
    const float cell = std::clamp(std::floor((map_width - 30) / kKeys), 6.0f, kMaxCell);
    const float maps_height = cell * kExamples + 7 * line;
    const float top_height = std::floor(std::max(avail.y * 0.3f, avail.y - maps_height));
    draw_loss_plot(ImVec2(std::floor(avail.x * 0.5f), top_height), step);
    ImGui::SameLine();
    ImGui::BeginGroup();
    draw_summary(record, step);
    ImGui::EndGroup();

    ImGui::TextUnformatted(
        "Rows: the 16 examples (one query each); columns: their 8 keys. Each quantity for "
        "both models, side by side.");
    const ImVec2 map_size(map_width, avail.y - top_height - 3 * line);
    // One colour scale per quantity, shared by the two models, so that equal
    // colours mean equal numbers across the pair.
    const viz::ColorScale weight_scale{viz::Colormap::Viridis, 0.0, 1.0};
    draw_pair(record, "weights", "weights (framed: the right key)", weight_scale, map_size);
    const viz::ColorScale grad_weights_scale = gradient_scale(
        {record.at("shown.additive.grad_weights"), record.at("shown.dot.grad_weights")});
    ImGui::SameLine();
    draw_pair(record, "grad_weights", "dL/dweights", grad_weights_scale, map_size);
    const viz::ColorScale grad_scores_scale = gradient_scale(
        {record.at("shown.additive.grad_scores"), record.at("shown.dot.grad_scores")});
    ImGui::SameLine();
    draw_pair(record, "grad_scores", "dL/dscores", grad_scores_scale, map_size);
  }

 protected:
  void init() override {
    // Valid lengths 5..8; the query copies one of the valid keys. Keys have
    // one length, sqrt(d), so that no key wins a dot product by being long.
    valid_lens_ = (rand({kExamples}) * 4.0).to(kInt64) + 5;
    target_ = (rand({kExamples}) * valid_lens_.to(kFloat32)).to(kInt64);
    const Tensor directions = randn({kExamples, kKeys, kSize});
    keys_ = directions / sqrt(sum(directions * directions, -1, true)) * std::sqrt(double{kSize});
    values_ = randn({kExamples, kKeys, kValueSize});
    // pick [B, 1, T]: one-hot rows, so that a bmm picks the target key's row.
    const Tensor pick =
        unsqueeze(eq(unsqueeze(target_, 1), unsqueeze(arange(kKeys, kInt64), 0)).to(kFloat32), 1);
    queries_ = bmm(pick, keys_) + 0.3 * randn({kExamples, 1, kSize});
    answer_ = bmm(pick, values_);
    keep_ = sequence_mask(valid_lens_, kKeys);
    additive_ = std::make_unique<nn::AdditiveAttention>(kSize, kSize, kHiddens);
    dot_W_q_ = std::make_unique<nn::Linear>(kSize, kSize, /*bias=*/false);
    dot_W_k_ = std::make_unique<nn::Linear>(kSize, kSize, /*bias=*/false);
  }
  std::vector<std::vector<Tensor>> parameter_groups() const override {
    return {additive_->parameters(), {dot_W_q_->weight, dot_W_k_->weight}};
  }

  std::map<std::string, Tensor> evaluate() override {
    // Scores [B, 1, T] as the two modules compute them inside their forward.
    const Tensor additive = additive_scores(additive_->W_q(queries_), additive_->W_k(keys_),
                                            reshape(additive_->w_v.weight, {kHiddens}));
    const Tensor dot_scores =
        bmm((*dot_W_q_)(queries_), transpose((*dot_W_k_)(keys_), 1, 2)) / std::sqrt(double{kSize});
    const auto weights_of = [&](const Tensor& scores) {
      return masked_softmax(scores, valid_lens_);
    };
    const auto loss_of = [&](const Tensor& weights) {
      return mse_loss(bmm(weights, values_), answer_);
    };
    std::map<std::string, Tensor> record;
    const std::pair<const char*, Tensor> scores[] = {{"additive", additive}, {"dot", dot_scores}};
    for (const auto& [name, model_scores] : scores) {
      const Staged staged = staged_backward(model_scores, weights_of, loss_of);
      const std::string prefix = std::string("shown.") + name;
      record[prefix + ".loss"] = reshape(staged.loss, {1});
      record[prefix + ".weights"] = reshape(staged.weights, {kExamples, kKeys});
      record[prefix + ".grad_weights"] = reshape(staged.grad_weights, {kExamples, kKeys});
      record[prefix + ".grad_scores"] = reshape(staged.grad_scores, {kExamples, kKeys});
    }
    const std::pair<std::string, Tensor> parameters[] = {
        {"additive.W_k.weight", additive_->W_k.weight},
        {"additive.W_q.weight", additive_->W_q.weight},
        {"additive.w_v.weight", additive_->w_v.weight},
        {"dot.W_q.weight", dot_W_q_->weight},
        {"dot.W_k.weight", dot_W_k_->weight}};
    for (const auto& [name, p] : parameters) {
      record[name] = p.detach().clone();
      record["shown.grad." + name] = p.grad().clone();
    }
    return record;
  }

 private:
  // Example b's largest weight is on its target key, as a fraction of B.
  double right_key_fraction(const Tensor& weights) const {
    const std::vector<double> picked = argmax(weights, -1).to_vector();
    const std::vector<double> target = target_.to_vector();
    int right = 0;
    for (size_t b = 0; b < picked.size(); ++b) right += picked[b] == target[b] ? 1 : 0;
    return static_cast<double>(right) / static_cast<double>(picked.size());
  }

  void draw_summary(const std::map<std::string, Tensor>& record, int64_t step) const {
    ImGui::Text("Step %lld", static_cast<long long>(step));
    if (!ImGui::BeginTable("losses", 3, ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg)) return;
    ImGui::TableSetupColumn("model");
    ImGui::TableSetupColumn("loss");
    ImGui::TableSetupColumn("right key");
    ImGui::TableHeadersRow();
    for (const Model& model : kModels) {
      const std::string prefix = std::string("shown.") + model.name;
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(model.color), "%s", model.label);
      ImGui::TableNextColumn();
      ImGui::Text("%.5f", record.at(prefix + ".loss").item());
      ImGui::TableNextColumn();
      ImGui::Text("%.0f%%", 100 * right_key_fraction(record.at(prefix + ".weights")));
    }
    ImGui::EndTable();
    show_note(
        "right key: how many of the 16 examples put their largest weight on the key their "
        "query copies (chance: about 1 in 6).");
    ImGui::Spacing();
    ImGui::TextUnformatted("Try this");
    show_note(
        "- Dot product's rows gather on their framed keys within about 50 steps, and its "
        "gradient maps fade to white as its loss falls. Additive attention learns more slowly "
        "and, at the default settings, levels off with a few rows wrong.\n"
        "- Padding: the hatched keys never get weight, and dL/dscores there is exactly 0: no "
        "gradient passes a masked score.\n"
        "- Set the learning rate to about 0.1 and press Reset: dot-product scores grow so fast "
        "that the softmax saturates. One example locks onto a wrong key with weight 1, and its "
        "row of dL/dscores turns white: no gradient is left to pull it back.\n"
        "- Drag the history slider back to look at any of the last 300 steps.");
  }

  static constexpr float kGap = 52.0f;      // pixels between the two maps of a pair
  static constexpr float kMaxCell = 32.0f;  // the largest cell side, in pixels

  // The additive and the dot-product map of one quantity ("weights",
  // "grad_weights", "grad_scores"), then their shared colour bar. The
  // weights hatch the padding and frame each example's target key; the
  // gradients show every number (dL/dscores is exactly 0 at the padding).
  void draw_pair(const std::map<std::string, Tensor>& record, const char* field, const char* title,
                 const viz::ColorScale& scale, ImVec2 size) const {
    const bool weights = std::string(field) == "weights";
    ImGui::BeginGroup();
    ImGui::TextUnformatted(title);
    ImGui::BeginGroup();
    for (const Model& model : kModels) {
      const std::string id = std::string("training/") + model.name + "_" + field;
      draw_heatmap(
          {id, model.label, record.at(std::string("shown.") + model.name + "." + field),
           weights ? keep_ : Tensor(), scale, "key", "example", "example", "key", kMaxCell},
          size);
      if (weights) frame_target_keys(drawn_heatmaps().back());
      ImGui::SameLine(0, kGap);
    }
    ImGui::EndGroup();
    colorbar_beside_last_map((std::string(field) + " bar").c_str(), scale);
    ImGui::EndGroup();
  }

  // A red frame along the edges of each example's target cell (its centre
  // keeps the colour of its value; red shows on both ends of viridis).
  void frame_target_keys(const DrawnHeatmap& map) const {
    ImDrawList* draw = ImGui::GetWindowDrawList();
    const std::vector<double> target = target_.to_vector();
    for (size_t b = 0; b < target.size(); ++b) {
      const ImVec2 a(map.x + map.cell * static_cast<float>(target[b]),
                     map.y + map.cell * static_cast<float>(b));
      draw->AddRect(ImVec2(a.x + 1, a.y + 1), ImVec2(a.x + map.cell - 1, a.y + map.cell - 1),
                    IM_COL32(255, 70, 70, 255), 0.0f, 0, map.cell >= 14 ? 2.0f : 1.0f);
    }
  }

  Tensor queries_, keys_, values_, answer_;  // [B, 1, d], [B, T, d], [B, T, v], [B, 1, v]
  Tensor valid_lens_, target_;               // int64 [B]
  Tensor keep_;                              // bool [B, T]: false at padding
  std::unique_ptr<nn::AdditiveAttention> additive_;
  std::unique_ptr<nn::Linear> dot_W_q_, dot_W_k_;
};

}  // namespace

// ---- the scene: controls, and the shown task ------------------------------------------------
TrainingScene::TrainingScene() {
  trainers_[static_cast<size_t>(Task::Retrieval)] = std::make_unique<RetrievalTask>();
  trainers_[static_cast<size_t>(Task::NadarayaWatson)] = std::make_unique<NadarayaWatsonTask>();
  for (auto& trainer : trainers_) trainer->reset(static_cast<uint64_t>(seed_));
}

TrainingScene::~TrainingScene() = default;

void TrainingScene::set_task(Task task) {
  task_ = task;
  shown_ = -1;
  error_.clear();
}

void TrainingScene::set_paused(bool paused) {
  paused_ = paused;
  if (!paused_) shown_ = -1;
}

void TrainingScene::single_step() {
  paused_ = true;
  if (shown_ >= 0 && shown_ < steps()) {
    show_step(shown_ + 1);
    return;
  }
  try {
    current().advance();
  } catch (const Error& e) {
    error_ = e.what();
  }
  shown_ = -1;
}

void TrainingScene::reset() {
  error_.clear();
  current().reset(static_cast<uint64_t>(seed_));
  shown_ = -1;
}

void TrainingScene::show_step(int64_t step) {
  step = std::clamp(step, oldest_step(), steps());
  if (step < steps()) paused_ = true;
  shown_ = step == steps() ? -1 : step;
}

int64_t TrainingScene::steps() const {
  return current().history().newest();
}
int64_t TrainingScene::shown_step() const {
  return shown_ < 0 ? steps() : shown_;
}
int64_t TrainingScene::oldest_step() const {
  return current().history().oldest();
}
void TrainingScene::set_learning_rate(double lr) {
  current().set_learning_rate(lr);
}
double TrainingScene::learning_rate() const {
  return current().learning_rate();
}

std::map<std::string, Tensor> TrainingScene::inputs() const {
  std::map<std::string, Tensor> out = current().data();
  for (auto& [name, t] : current().history().at(shown_step())) out[name] = t;
  out["shown.step"] = tensor({static_cast<double>(shown_step())}, {1}, kInt64);
  return out;
}

void TrainingScene::print_stats(std::ostream& out) const {
  out << "loss_first " << current().first_loss() << "\n";
  out << "loss_last " << current().last_loss() << "\n";
}

void TrainingScene::draw() {
  if (!paused_ && error_.empty()) {
    try {
      for (int i = 0; i < steps_per_frame; ++i) current().advance();
    } catch (const Error& e) {
      error_ = e.what();
      paused_ = true;
    }
  }
  draw_panes(
      300, [&] { draw_controls(); }, error_,
      [&] { current().draw(current().history().at(shown_step()), shown_step()); });
}

// ---- panel: the knobs --------------------------------------------------------------------
void TrainingScene::draw_controls() {
  ImGui::TextUnformatted("Task");
  int task = static_cast<int>(task_);
  bool changed = ImGui::RadioButton("retrieval: additive vs dot product", &task,
                                    static_cast<int>(Task::Retrieval));
  changed |= ImGui::RadioButton("Nadaraya-Watson regression", &task,
                                static_cast<int>(Task::NadarayaWatson));
  if (changed) set_task(static_cast<Task>(task));
  ImGui::Separator();

  if (ImGui::Button(paused_ ? "Play" : "Pause", ImVec2(80, 0))) set_paused(!paused_);
  ImGui::SameLine();
  if (ImGui::Button("Step", ImVec2(80, 0))) single_step();
  ImGui::SameLine();
  if (ImGui::Button("Reset", ImVec2(80, 0))) reset();
  ImGui::SliderInt("steps/frame", &steps_per_frame, 1, 20);
  // A new rate means a new Adam (see Trainer::set_learning_rate): make it
  // once, when the slider is let go, not on every frame of the drag.
  if (!lr_dragged_) lr_slider_ = static_cast<float>(learning_rate());
  ImGui::SliderFloat("learning rate", &lr_slider_, 1e-3f, 1.0f, "%.4f",
                     ImGuiSliderFlags_Logarithmic);
  lr_dragged_ = ImGui::IsItemActive();
  if (ImGui::IsItemDeactivatedAfterEdit()) set_learning_rate(lr_slider_);
  if (ImGui::SliderInt("seed", &seed_, 0, 99)) reset();
  ImGui::Separator();

  ImGui::TextUnformatted("History: the last steps, kept to look back at");
  int64_t shown = shown_step();
  const int64_t oldest = oldest_step(), newest = steps();
  if (ImGui::SliderScalar("step", ImGuiDataType_S64, &shown, &oldest, &newest)) show_step(shown);
  ImGui::BeginDisabled(shown_ < 0);
  if (ImGui::Button("back to live")) set_paused(false);
  ImGui::EndDisabled();
  ImGui::Text("%lld steps taken; holding %lld to %lld", static_cast<long long>(newest),
              static_cast<long long>(oldest), static_cast<long long>(newest));
  ImGui::Separator();

  show_note(current().note());
  ImGui::Spacing();
  show_note(
      "Gradient maps: red where the loss grows with the number (the step lowers it), blue "
      "where it falls (the step raises it), white where it does not matter.");
  if (ImGui::CollapsingHeader("Where the gradients come from")) {
    show_note(
        "From the real backward, cut in three: loss -> weights, weights -> scores, scores -> "
        "parameters. Each cut end is a leaf (detach, then requires_grad_), so the library fills "
        "its grad(): dL/dweights, then dL/dscores; the last backward hands the parameters "
        "exactly what one uncut backward would, and Adam steps with it.");
  }
}

std::unique_ptr<Scene> make_training_scene() {
  return std::make_unique<TrainingScene>();
}

}  // namespace ag::viewer
