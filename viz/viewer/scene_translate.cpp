// Scene "translate" (see scene_translate.h): the knobs, the controls (the
// task, the two scoring functions), and the two models' answers and
// alignments, all read from the session's records (the trainer,
// translate_trainer.cpp, may be training on a worker).
#include "scene_translate.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "heatmap_widget.h"

namespace ag::viewer {

namespace tr = ag::translate;

namespace {

// A character as a one-cell tick label: a space as a middle dot, <eos> as
// a return arrow (the note under the maps says so).
std::string tick_label(const std::string& token) {
  if (token == " ") return "\xc2\xb7";
  if (token == "<eos>") return "\xe2\x86\xb5";
  return token;
}

}  // namespace

// ---- the scene's state and knobs ----------------------------------------------------------
TranslateScene::TranslateScene(Stepping stepping)
    : trainer_(live_task_names().front()), stepping_(stepping) {
  start_session();
}

void TranslateScene::start_session() {
  session_ = std::make_unique<TrainingSession>(trainer_, TrainingSession::kHistory, stepping_);
  // Without a worker (the browser) a frame takes steps for at most ~10 ms
  // (at least one step) so that the page keeps drawing.
  session_->set_steps_per_frame(20);
  session_->set_frame_budget(10.0);
  frame_at_95_ = step_at_95_ = -1;
  frames_ = 0;
}

void TranslateScene::change_trainer(const std::function<void()>& change) {
  const bool paused = session_->paused();
  const int rate = session_->max_steps_per_second();
  session_.reset();  // its worker stops before the trainer changes
  change();
  start_session();
  session_->set_paused(paused);
  session_->set_max_steps_per_second(rate);
}

void TranslateScene::set_task(const std::string& task) {
  if (task == trainer_.task()) return;
  change_trainer([&] { trainer_.set_task(task); });
  // The text box's text, for the new task's vocabulary (if it is shown).
  typed_.clear();
  typed_error_.clear();
  if (show_typed_) set_text(text_box_);
}

void TranslateScene::set_models(const ScoringPair& models) {
  if (models == ScoringPair{trainer_.model(0), trainer_.model(1)}) return;
  change_trainer([&] { trainer_.set_models(models); });
}

void TranslateScene::set_stepping(Stepping stepping) {
  if (stepping == stepping_) return;
  const bool paused = session_->paused();
  session_.reset();
  stepping_ = stepping;
  start_session();
  session_->set_paused(paused);  // the trainer keeps its typed text
}

void TranslateScene::set_example(int example) {
  example_ = std::clamp(example, 0, static_cast<int>(TranslateTrainer::kShown) - 1);
  show_typed_ = false;
}

void TranslateScene::set_text(const std::string& text) {
  std::snprintf(text_box_, sizeof text_box_, "%s", text.c_str());
  show_typed_ = true;
  typed_error_ = trainer_.check_text(text);  // reads the data only: safe beside the worker
  if (!typed_error_.empty() || text == typed_) return;
  typed_ = text;
  // The record is made again at once, so a paused session shows it too.
  session_->post([text](Trainer& t) { static_cast<TranslateTrainer&>(t).set_typed(text); },
                 /*rerecord=*/true);
}

void TranslateScene::save(const std::string& prefix) {
  session_->call([prefix](Trainer& t) { static_cast<TranslateTrainer&>(t).save(prefix); });
  const std::string error = session_->error();
  if (!error.empty()) throw Error(error);
}

std::map<std::string, Tensor> TranslateScene::inputs() const {
  std::map<std::string, Tensor> out = trainer_.data();
  for (auto& [name, t] : session_->shown_record()) out["shown." + name] = t;
  out["shown.step"] = tensor({static_cast<double>(session_->shown_step())}, {1}, kInt64);
  out["shown.example"] = tensor({show_typed_ ? -1.0 : example_}, {1}, kInt64);
  return out;
}

std::vector<Knob> TranslateScene::knobs() {
  std::vector<Knob> knobs = {
      task_knob("the task both models learn (new data and models)",
                [this](const std::string& task) { set_task(task); }),
      scoring_pair_knob([this](const ScoringPair& models) { set_models(models); }),
      stepping_knob([this](Stepping stepping) { set_stepping(stepping); }),
      number_knob("example", "which held-out input is shown", 0, TranslateTrainer::kShown - 1, true,
                  [this](double example) { set_example(static_cast<int>(example)); }),
      Knob{"text", "translate this text (as if typed in the text box) and show it",
           "any text (bad text shows a message, as in the box)",
           [this](const std::string& text) { set_text(text); }},
      Knob{"save_prefix",
           "before the last frame of --frames, save both models to PREFIX-NAME.npz, e.g. "
           "PREFIX-additive.npz and PREFIX-dot.npz (attograd-translate --load reads them)",
           "a path prefix", [this](const std::string& prefix) { save_prefix_ = prefix; }},
  };
  for (Knob& knob : training_session_knobs(session_)) knobs.push_back(std::move(knob));
  return knobs;
}

void TranslateScene::print_stats(std::ostream& out) const {
  out << "loss_first " << session_->first_loss() << "\n";
  out << "loss_last " << session_->last_loss() << "\n";
  out << "accuracy " << session_->shown_record().at(trainer_.model(0) + ".accuracy").item() << "\n";
  out << "steps " << session_->steps() << "\n";
  if (frame_at_95_ >= 0) {
    out << "frames_to_accuracy_95 " << frame_at_95_ << "\n";
    out << "steps_to_accuracy_95 " << step_at_95_ << "\n";
  }
}

void TranslateScene::before_last_frame() {
  session_->set_paused(true);
  session_->sync();
  if (!save_prefix_.empty()) save(save_prefix_);
}

void TranslateScene::note_progress(const std::map<std::string, Tensor>& record) {
  ++frames_;
  if (frame_at_95_ < 0 && record.at(trainer_.model(0) + ".accuracy").item() >= 0.95) {
    frame_at_95_ = frames_;
    step_at_95_ = session_->shown_step();
  }
}

// ---- drawing ------------------------------------------------------------------------------
void TranslateScene::draw() {
  // 1. Let the session train (a worker steps; without one, the frame does).
  session_->frame();
  draw_panes(
      300, [&] { draw_controls(); }, session_->error(),
      [&] {
        // 2. The shown step's record: the curves on top, the two models below.
        const std::map<std::string, Tensor> record = session_->shown_record();
        note_progress(record);
        const ImVec2 avail = ImGui::GetContentRegionAvail();
        const float plot_height = std::floor(std::clamp(avail.y * 0.3f, 140.0f, 300.0f));
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
  std::string task = trainer_.task();
  if (draw_task_choice(task)) set_task(task);
  ImGui::Separator();
  ImGui::TextUnformatted("Scoring functions");
  ScoringPair models = {trainer_.model(0), trainer_.model(1)};
  if (draw_scoring_pair_choice(models)) set_models(models);
  ImGui::Separator();
  session_->draw_controls();
  ImGui::Separator();
  draw_input_choice();
  ImGui::Spacing();
  show_note(
      "Two seq2seq models (GRU encoder and decoder, d2l's Bahdanau decoder) learn the task from "
      "the same data, seed and minibatches; they differ only in the attention scoring "
      "function. The plot: each model's minibatch loss per token (left axis) and its exact "
      "match on 300 held-out inputs (right axis, measured every 50 steps).");
}

void TranslateScene::draw_input_choice() {
  // 1. A held-out input (Prev / Next), or the text box.
  ImGui::TextUnformatted("Input");
  if (ImGui::RadioButton("held-out", !show_typed_)) show_typed_ = false;
  ImGui::SameLine();
  ImGui::Text("%d of %d", example_ + 1, static_cast<int>(TranslateTrainer::kShown));
  int example = example_;
  draw_prev_next(example, static_cast<int>(TranslateTrainer::kShown));
  if (example != example_) set_example(example);
  if (ImGui::RadioButton("your text", show_typed_)) set_text(text_box_);
  // 2. The models answer as the learner types: every edit is a new text.
  ImGui::SetNextItemWidth(-1);
  if (ImGui::InputTextWithHint("##text", "e.g. 14.7.1989", text_box_, sizeof text_box_)) {
    set_text(text_box_);
  }
  if (show_typed_ && !typed_error_.empty()) {
    show_error(typed_error_);
    if (!typed_.empty()) show_note(("The maps still show \"" + typed_ + "\".").c_str());
  }
}

void TranslateScene::draw_model(size_t model, const std::map<std::string, Tensor>& record,
                                ImVec2 size) const {
  // 1. What this model was given and what it answered: a held-out example
  //    (with its target), or the typed text the record translated.
  const tr::Dataset& data = trainer_.data_set();
  const std::string& name = trainer_.model(model);
  const int64_t tgt = data.tgt_steps(), src = data.src_steps();
  std::string source_text, target;
  std::vector<std::string> source;
  std::vector<double> output;
  int64_t rows = 0;
  Tensor alignment;
  if (show_typed_) {
    const std::vector<double> indices = record.at("typed.source").to_vector();
    const int64_t length = static_cast<int64_t>(record.at("typed.length").item());
    for (int64_t i = 0; i + 1 < length; ++i) {
      source.push_back(
          data.src_vocab().token(static_cast<int64_t>(indices[static_cast<size_t>(i)])));
    }
    source_text = tr::detokenize_chars(source);
    output = record.at(name + ".typed.output").to_vector();
    rows = static_cast<int64_t>(record.at(name + ".typed.rows").item());
    alignment = record.at(name + ".typed.alignment");
  } else {
    const tr::Example& example = data.heldout()[static_cast<size_t>(example_)];
    source_text = example.source;
    target = example.target;
    source = tr::tokenize_chars(source_text);
    output = record.at(name + ".output").narrow(0, example_, 1).reshape({tgt}).to_vector();
    rows =
        static_cast<int64_t>(record.at(name + ".rows").to_vector()[static_cast<size_t>(example_)]);
    alignment = record.at(name + ".alignment").narrow(0, example_, 1).reshape({tgt, src});
  }
  std::vector<std::string> out_tokens;
  for (int64_t t = 0; t < tgt && output[static_cast<size_t>(t)] >= 0; ++t) {
    out_tokens.push_back(
        data.tgt_vocab().token(static_cast<int64_t>(output[static_cast<size_t>(t)])));
  }
  const std::string answer = tr::detokenize_chars(out_tokens);
  if (rows > static_cast<int64_t>(out_tokens.size())) out_tokens.push_back("<eos>");

  // 2. The text lines.
  ImGui::BeginChild(("translate/" + name).c_str(), size);
  ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(kScoringColors[model]), "%s attention",
                     name.c_str());
  ImGui::SameLine();
  ImGui::Text("  held-out exact match %.1f%%", 100.0 * record.at(name + ".accuracy").item());
  ImGui::Text("source  %s", source_text.empty() ? "(none: type a text)" : source_text.c_str());
  if (!target.empty()) {
    ImGui::Text("target  %s", target.c_str());
    const bool right = answer == target;
    ImGui::TextColored(right ? ImVec4(0.2f, 0.7f, 0.2f, 1) : ImVec4(0.9f, 0.2f, 0.2f, 1),
                       "output  %s  %s", answer.c_str(), right ? "(right)" : "(wrong)");
  } else {
    ImGui::Text("output  %s", answer.c_str());
  }
  // 3. The alignment: a row per output character, a column per source
  //    character and <eos>, each labelled with its character.
  if (rows > 0 && !source.empty()) {
    const int64_t cols = static_cast<int64_t>(source.size()) + 1;
    HeatmapView view{"translate/" + name + "_alignment",
                     "alignment (each row sums to 1)",
                     alignment.narrow(0, 0, rows).narrow(1, 0, cols),
                     Tensor(),
                     {viz::Colormap::Viridis, 0.0, 1.0},
                     "source",
                     "output",
                     "output",
                     "source"};
    view.max_cell = 32.0f;
    for (const std::string& c : source) view.col_labels.push_back(tick_label(c));
    view.col_labels.push_back(tick_label("<eos>"));
    for (const std::string& t : out_tokens) view.row_labels.push_back(tick_label(t));
    const float room =
        ImGui::GetContentRegionAvail().y - 2.0f * ImGui::GetTextLineHeightWithSpacing();
    const float bar = ImGui::CalcTextSize("0.75").x + 40.0f;  // the colour bar and its labels
    draw_heatmap(view, ImVec2(ImGui::GetContentRegionAvail().x - bar, std::max(room, 60.0f)));
    colorbar_beside_last_map((name + "_bar").c_str(), view.scale);
    show_note("\xc2\xb7 is a space, \xe2\x86\xb5 the end (<eos>). Hover a cell for its weight.");
  }
  ImGui::EndChild();
}

std::unique_ptr<Scene> make_translate_scene() {
  return std::make_unique<TranslateScene>(Stepping::Background);
}

}  // namespace ag::viewer
