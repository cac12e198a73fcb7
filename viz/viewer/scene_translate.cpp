// Scene "translate" (see scene_translate.h).
//
// Each frame the session takes its steps: one minibatch for each model
// (translate::Seq2SeqTrainer, the library's train_seq2seq one step at a
// time), then greedy prediction of the shown held-out inputs, whose outputs
// and alignments go into the history; every kEvalEvery steps the held-out
// split is measured. What is on screen is always read from the history.
#include "scene_translate.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>

#include "heatmap_widget.h"

namespace ag::viewer {

namespace tr = ag::translate;

namespace {

const ImU32 kModelColors[2] = {IM_COL32(31, 119, 180, 255), IM_COL32(255, 127, 14, 255)};
const char* const kModelLabels[2] = {"additive attention", "dot-product attention"};

// The held-out inputs the scene shows: the first kShown of the split.
std::vector<std::string> shown_sources(const tr::Dataset& data) {
  std::vector<std::string> sources;
  for (int64_t i = 0; i < TranslateTrainer::kShown; ++i) {
    sources.push_back(data.heldout()[static_cast<size_t>(i)].source);
  }
  return sources;
}

}  // namespace

// ---- the trainer ------------------------------------------------------------------------
TranslateTrainer::TranslateTrainer(tr::Task task) {
  set_task(task);
}

void TranslateTrainer::set_task(tr::Task task) {
  task_ = task;
  data_ = std::make_unique<tr::Dataset>(tr::DatasetOptions{task, kTrain, kHeldout, 0});
  for (auto& trainer : trainers_) trainer.reset();
}

std::vector<RecordField> TranslateTrainer::fields() const {
  const int64_t shown = kShown, tgt = data_->tgt_steps(), src = data_->src_steps();
  std::vector<RecordField> out;
  for (const char* model : kModels) {
    const std::string m = model;
    out.push_back({m + ".loss", {1}});
    out.push_back({m + ".accuracy", {1}});
    out.push_back({m + ".output", {shown, tgt}});
    out.push_back({m + ".rows", {shown}});
    out.push_back({m + ".alignment", {shown, tgt, src}});
  }
  return out;
}

std::vector<Trainer::Series> TranslateTrainer::series() const {
  return {{"additive.loss", "additive loss", kModelColors[0], Axis::Loss},
          {"dot.loss", "dot-product loss", kModelColors[1], Axis::Loss},
          {"additive.accuracy", "additive held-out", kModelColors[0], Axis::Fraction},
          {"dot.accuracy", "dot-product held-out", kModelColors[1], Axis::Fraction}};
}

std::map<std::string, Tensor> TranslateTrainer::start(double lr) {
  // The session has set the seed: both models draw their initial parameters
  // from it, one after the other; the minibatch order is the same for both.
  tr::TrainOptions options;
  options.lr = lr;
  options.batch_size = kBatchSize;
  for (size_t m = 0; m < 2; ++m) {
    tr::ModelConfig config;
    config.attention = kModels[m];
    translators_[m] = tr::make_translator(config, *data_);
    trainers_[m] = std::make_unique<tr::Seq2SeqTrainer>(translators_[m], *data_, options);
  }
  steps_ = 0;
  double loss[2];
  for (size_t m = 0; m < 2; ++m) {
    accuracy_[m] = tr::evaluate(translators_[m], data_->heldout()).accuracy;
    loss[m] = trainers_[m]->next_loss();
  }
  return record(loss);
}

std::map<std::string, Tensor> TranslateTrainer::step() {
  AG_CHECK(trainers_[0] != nullptr, "TranslateTrainer::step", "start() was not called");
  double loss[2];
  for (size_t m = 0; m < 2; ++m) loss[m] = trainers_[m]->step();
  ++steps_;
  if (steps_ % kEvalEvery == 0) {
    for (size_t m = 0; m < 2; ++m) {
      accuracy_[m] = tr::evaluate(translators_[m], data_->heldout()).accuracy;
    }
  }
  return record(loss);
}

void TranslateTrainer::set_learning_rate(double lr) {
  for (auto& trainer : trainers_) {
    if (trainer) trainer->set_learning_rate(lr);
  }
}

std::map<std::string, Tensor> TranslateTrainer::data() const {
  const auto [src, valid_len] =
      tr::encode_sources(shown_sources(*data_), data_->src_vocab(), data_->src_steps());
  return {{"src", src}, {"src_valid_len", valid_len}};
}

std::map<std::string, Tensor> TranslateTrainer::record(const double (&loss)[2]) {
  const int64_t tgt = data_->tgt_steps(), src = data_->src_steps();
  const auto [sources, valid_len] =
      tr::encode_sources(shown_sources(*data_), data_->src_vocab(), src);
  std::map<std::string, Tensor> out;
  for (size_t m = 0; m < 2; ++m) {
    const std::vector<tr::Prediction> predictions =
        tr::predict_seq2seq(*translators_[m].model, sources, valid_len, tgt);
    std::vector<double> output(static_cast<size_t>(kShown * tgt), -1.0);
    std::vector<double> rows(static_cast<size_t>(kShown), 0.0);
    std::vector<double> alignment(static_cast<size_t>(kShown * tgt * src), 0.0);
    for (int64_t i = 0; i < kShown; ++i) {
      const tr::Prediction& p = predictions[static_cast<size_t>(i)];
      for (size_t t = 0; t < p.output.size(); ++t) {
        output[static_cast<size_t>(i * tgt) + t] = static_cast<double>(p.output[t]);
      }
      const int64_t n = p.alignment.shape()[0], cols = p.alignment.shape()[1];
      rows[static_cast<size_t>(i)] = static_cast<double>(n);
      const std::vector<double> weights = p.alignment.to_vector();
      for (int64_t r = 0; r < n; ++r) {
        for (int64_t c = 0; c < cols; ++c) {
          alignment[static_cast<size_t>((i * tgt + r) * src + c)] =
              weights[static_cast<size_t>(r * cols + c)];
        }
      }
    }
    const std::string name = kModels[m];
    out[name + ".loss"] = tensor({loss[m]}, {1});
    out[name + ".accuracy"] = tensor({accuracy_[m]}, {1});
    out[name + ".output"] = tensor(std::move(output), {kShown, tgt});
    out[name + ".rows"] = tensor(std::move(rows), {kShown});
    out[name + ".alignment"] = tensor(std::move(alignment), {kShown, tgt, src});
  }
  return out;
}

// ---- the scene ----------------------------------------------------------------------------
TranslateScene::TranslateScene(Stepping stepping) : trainer_(tr::Task::Dates), stepping_(stepping) {
  start_session();
}

void TranslateScene::start_session() {
  session_ = std::make_unique<TrainingSession>(trainer_, TrainingSession::kHistory, stepping_);
  // Without a worker (the browser) a frame takes steps for at most ~10 ms
  // (at least one step) so that the page keeps drawing.
  session_->set_steps_per_frame(20);
  session_->set_frame_budget(10.0);
}

void TranslateScene::set_task(tr::Task task) {
  if (task == trainer_.task()) return;
  const bool paused = session_->paused();
  const int rate = session_->max_steps_per_second();
  session_.reset();  // its worker stops before the trainer changes
  trainer_.set_task(task);
  start_session();
  session_->set_paused(paused);
  session_->set_max_steps_per_second(rate);
}

void TranslateScene::set_example(int example) {
  example_ = std::clamp(example, 0, static_cast<int>(TranslateTrainer::kShown) - 1);
}

std::map<std::string, Tensor> TranslateScene::inputs() const {
  std::map<std::string, Tensor> out = trainer_.data();
  for (auto& [name, t] : session_->shown_record()) out["shown." + name] = t;
  out["shown.step"] = tensor({static_cast<double>(session_->shown_step())}, {1}, kInt64);
  out["shown.example"] = tensor({static_cast<double>(example_)}, {1}, kInt64);
  return out;
}

std::vector<Knob> TranslateScene::knobs() {
  return {
      choice_knob("task", "the task both models learn (new data and models)",
                  {"dates", "reverse", "sort"},
                  [this](int task) { set_task(static_cast<tr::Task>(task)); }),
      choice_knob("paused", "yes: training waits at its step 0 until Play (or Step)", {"no", "yes"},
                  [this](int paused) { session_->set_paused(paused == 1); }),
      number_knob("steps_per_frame",
                  "without a worker thread (the browser, tests): training steps each frame, at "
                  "most (each steps both models); sets no frame budget",
                  1, 20, true,
                  [this](double steps) {
                    session_->set_steps_per_frame(static_cast<int>(steps));
                    session_->set_frame_budget(0);
                  }),
      number_knob(
          "max_steps_per_second",
          "with a worker thread (the desktop): training steps a second at most; 0: as "
          "fast as it can",
          0, 1000, true,
          [this](double steps) { session_->set_max_steps_per_second(static_cast<int>(steps)); }),
      number_knob("lr", "the learning rate (Adam's) of both models", 1e-4, 0.1, false,
                  [this](double lr) { session_->set_learning_rate(lr); }),
      number_knob("seed", "the models' initial parameters", 0, 99, true,
                  [this](double seed) { session_->set_seed(static_cast<int>(seed)); }),
      number_knob("example", "which held-out input is shown", 0, TranslateTrainer::kShown - 1, true,
                  [this](double example) { set_example(static_cast<int>(example)); }),
  };
}

void TranslateScene::print_stats(std::ostream& out) const {
  out << "loss_first " << session_->first_loss() << "\n";
  out << "loss_last " << session_->last_loss() << "\n";
  out << "accuracy " << session_->shown_record().at("additive.accuracy").item() << "\n";
}

void TranslateScene::before_last_frame() {
  session_->set_paused(true);
  session_->sync();
}

void TranslateScene::draw() {
  session_->frame();
  draw_panes(
      300, [&] { draw_controls(); }, session_->error(),
      [&] {
        const std::map<std::string, Tensor> record = session_->shown_record();
        const ImVec2 avail = ImGui::GetContentRegionAvail();
        const float plot_height = std::floor(std::max(160.0f, avail.y * 0.35f));
        session_->draw_curves(ImVec2(avail.x, plot_height));
        const float width = std::floor((avail.x - ImGui::GetStyle().ItemSpacing.x) / 2);
        const ImVec2 size(width, ImGui::GetContentRegionAvail().y);
        draw_model(0, record, size);
        ImGui::SameLine();
        draw_model(1, record, size);
      });
}

void TranslateScene::draw_controls() {
  ImGui::TextUnformatted("Task");
  int task = static_cast<int>(trainer_.task());
  bool changed = ImGui::RadioButton("dates: 'May 3, 1979' -> 1979-05-03", &task, 0);
  changed |= ImGui::RadioButton("reverse: 48213 -> 31284", &task, 1);
  changed |= ImGui::RadioButton("sort: 48213 -> 12348", &task, 2);
  if (changed) set_task(static_cast<tr::Task>(task));
  ImGui::Separator();
  session_->draw_controls();
  ImGui::Separator();
  ImGui::Text("Held-out input %d of %d", example_ + 1, static_cast<int>(TranslateTrainer::kShown));
  draw_prev_next(example_, static_cast<int>(TranslateTrainer::kShown));
  ImGui::Spacing();
  show_note(
      "Two seq2seq models (GRU encoder and decoder, d2l's Bahdanau decoder) learn the task from "
      "the same data, seed and minibatches; they differ only in the attention scoring "
      "function. The plot: each model's minibatch loss per token (left axis) and its exact "
      "match on 300 held-out inputs (right axis, measured every 50 steps).");
  show_note(
      "Alignment: row i is how output character i looked at the source characters (its "
      "attention weights, summing to 1). Hover a cell for the pair and the weight.");
}

void TranslateScene::draw_model(size_t model, const std::map<std::string, Tensor>& record,
                                ImVec2 size) const {
  const tr::Dataset& data = trainer_.data_set();
  const std::string name = TranslateTrainer::kModels[model];
  const int64_t tgt = data.tgt_steps(), src = data.src_steps();
  const tr::Example& example = data.heldout()[static_cast<size_t>(example_)];
  const std::vector<std::string> source = tr::tokenize_chars(example.source);
  const std::vector<double> output = record.at(name + ".output").to_vector();
  const int64_t rows =
      static_cast<int64_t>(record.at(name + ".rows").to_vector()[static_cast<size_t>(example_)]);
  std::vector<std::string> out_tokens;
  for (int64_t t = 0; t < tgt; ++t) {
    const double index = output[static_cast<size_t>(example_ * tgt + t)];
    if (index < 0) break;
    out_tokens.push_back(data.tgt_vocab().token(static_cast<int64_t>(index)));
  }
  const std::string answer = tr::detokenize_chars(out_tokens);
  if (rows > static_cast<int64_t>(out_tokens.size())) out_tokens.push_back("<eos>");

  ImGui::BeginChild(("translate/" + name).c_str(), size);
  ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(kModelColors[model]), "%s",
                     kModelLabels[model]);
  ImGui::Text("held-out exact match %.1f%%", 100.0 * record.at(name + ".accuracy").item());
  ImGui::Text("source  %s", example.source.c_str());
  ImGui::Text("target  %s", example.target.c_str());
  const bool right = answer == example.target;
  ImGui::TextColored(right ? ImVec4(0.2f, 0.7f, 0.2f, 1) : ImVec4(0.9f, 0.2f, 0.2f, 1),
                     "output  %s  %s", answer.c_str(), right ? "(right)" : "(wrong)");
  if (rows > 0) {
    const int64_t cols = static_cast<int64_t>(source.size()) + 1;  // and <eos>
    const Tensor map = record.at(name + ".alignment")
                           .narrow(0, example_, 1)
                           .reshape({tgt, src})
                           .narrow(0, 0, rows)
                           .narrow(1, 0, cols);
    std::string columns, row_text;
    for (const std::string& c : source) columns += c + " ";
    for (const std::string& t : out_tokens) row_text += t + " ";
    HeatmapView view{"translate/" + name + "_alignment",
                     "alignment",
                     map,
                     Tensor(),
                     {viz::Colormap::Viridis, 0.0, 1.0},
                     "source: " + columns + "<eos>",
                     "output: " + row_text,
                     "output",
                     "source"};
    view.max_cell = 24.0f;
    draw_heatmap(view, ImVec2(0, 0));
  }
  ImGui::EndChild();
}

std::unique_ptr<Scene> make_translate_scene() {
  return std::make_unique<TranslateScene>(Stepping::Background);
}

}  // namespace ag::viewer
