// Scene "transformer" (see scene_transformer.h).
//
// Each frame the session takes its steps (TransformerTrainer: one minibatch
// per model, then greedy prediction of the shown held-out inputs and every
// attention map of it, into the history). What is on screen is always read
// from the history, so the slider can go back through the last steps.
#include "scene_transformer.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>

#include "attention_grid.h"
#include "plot.h"
#include "task_choice.h"

namespace ag::viewer {

namespace tr = ag::translate;

namespace {

// Records hold every map of kShown predictions (~170 KB a step for dates):
// a shorter history than the session's default keeps the ring at ~17 MB.
constexpr int64_t kHistorySteps = 100;

const char* const kModelLabels[2] = {"with the look-ahead mask", "without (ablation)"};

// The look-ahead mask of `n` decoder steps: step i sees steps 0 .. i.
Tensor look_ahead_keep(int64_t n) {
  std::vector<double> keep(static_cast<size_t>(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j <= i; ++j) keep[static_cast<size_t>(i * n + j)] = 1.0;
  }
  return tensor(std::move(keep), {n, n}, kBool);
}

// A token as a tick label, one narrow character where it can be: the maps'
// cells are narrow. "_" is the space, "$" <eos> (the end), "^" <bos> (the start).
std::vector<std::string> tick_labels(const std::vector<std::string>& tokens) {
  std::vector<std::string> out;
  for (const std::string& t : tokens) {
    out.push_back(t == " " ? "_" : t == "<eos>" ? "$" : t == "<bos>" ? "^" : t);
  }
  return out;
}

// record[field] [kShown, L, H, Tq, Tk] -> the example's [L, H, rows, cols].
Tensor example_maps(const std::map<std::string, Tensor>& record, const std::string& field,
                    int64_t example, int64_t rows, int64_t cols) {
  const Tensor& all = record.at(field);
  const Shape& s = all.shape();
  return all.narrow(0, example, 1)
      .reshape({s[1], s[2], s[3], s[4]})
      .narrow(2, 0, rows)
      .narrow(3, 0, cols)
      .to(kFloat64);
}

}  // namespace

TransformerScene::TransformerScene(Stepping stepping)
    : trainer_(live_task_names().front(), false), stepping_(stepping) {
  start_session();
}

void TransformerScene::start_session() {
  session_ = std::make_unique<TrainingSession>(trainer_, kHistorySteps, stepping_);
  // Without a worker (the browser) a frame takes steps for at most ~10 ms
  // (at least one step) so that the page keeps drawing.
  session_->set_steps_per_frame(20);
  session_->set_frame_budget(10.0);
  frames_ = 0;
  frame_at_95_ = step_at_95_ = -1;
}

void TransformerScene::configure(const std::string& task, bool ablation) {
  restart(task, ablation, stepping_);
}

void TransformerScene::set_stepping(Stepping stepping) {
  restart(trainer_.task(), trainer_.ablation(), stepping);
}

void TransformerScene::restart(const std::string& task, bool ablation, Stepping stepping) {
  if (task == trainer_.task() && ablation == trainer_.ablation() && stepping == stepping_) return;
  // The record's fields change with the twin: a new session, at step 0, with
  // the learner's settings kept.
  const bool paused = session_->paused();
  const int rate = session_->max_steps_per_second(), seed = session_->seed();
  const double lr = session_->learning_rate();
  session_.reset();  // its worker stops before the trainer changes
  trainer_.configure(task, ablation);
  stepping_ = stepping;
  start_session();
  if (lr != trainer_.default_learning_rate()) session_->set_learning_rate(lr);
  if (seed != 0) session_->set_seed(seed);
  session_->set_max_steps_per_second(rate);
  session_->set_paused(paused);
}

void TransformerScene::set_example(int example) {
  example_ = std::clamp(example, 0, static_cast<int>(TransformerTrainer::kShown) - 1);
}

std::map<std::string, Tensor> TransformerScene::inputs() const {
  std::map<std::string, Tensor> out = trainer_.data();
  for (auto& [name, t] : session_->shown_record()) out["shown." + name] = t;
  out["shown.step"] = tensor({static_cast<double>(session_->shown_step())}, {1}, kInt64);
  out["shown.example"] = tensor({static_cast<double>(example_)}, {1}, kInt64);
  // The parameters are read between two steps (on the worker, if any).
  std::map<std::string, Tensor> state;
  session_->call([&state](Trainer& t) { state = static_cast<TransformerTrainer&>(t).state(); });
  out.insert(state.begin(), state.end());
  return out;
}

std::vector<Knob> TransformerScene::knobs() {
  std::vector<Knob> knobs = {
      task_knob("the task the Transformer learns (new data and models)",
                [this](const std::string& task) { configure(task, trainer_.ablation()); }),
      choice_knob("ablation", "1: train a twin without the look-ahead mask beside the masked model",
                  {"0", "1"}, [this](int on) { configure(trainer_.task(), on == 1); }),
      stepping_knob([this](Stepping stepping) { set_stepping(stepping); }),
      choice_knob("maps", "which attention the maps show", {"encoder", "decoder", "cross"},
                  [this](int maps) { set_maps(static_cast<Maps>(maps)); }),
      number_knob("example", "which held-out input is shown", 0, TransformerTrainer::kShown - 1,
                  true, [this](double example) { set_example(static_cast<int>(example)); }),
      Knob{"save_prefix",
           "before the last frame of --frames, save the model to PREFIX-masked.npz (and the "
           "twin to PREFIX-unmasked.npz; attograd-translate --load reads them)",
           "a path prefix", [this](const std::string& prefix) { save_prefix_ = prefix; }},
  };
  for (Knob& knob : training_session_knobs(session_)) knobs.push_back(std::move(knob));
  return knobs;
}

void TransformerScene::before_last_frame() {
  session_->set_paused(true);
  session_->sync();
  if (save_prefix_.empty()) return;
  const std::string prefix = save_prefix_;
  session_->call([prefix](Trainer& t) { static_cast<TransformerTrainer&>(t).save(prefix); });
  const std::string error = session_->error();
  if (!error.empty()) throw Error(error);
}

void TransformerScene::print_stats(std::ostream& out) const {
  const std::map<std::string, Tensor> record = session_->shown_record();
  out << "loss_first " << session_->first_loss() << "\n";
  out << "loss_last " << session_->last_loss() << "\n";
  out << "accuracy " << record.at("masked.accuracy").item() << "\n";
  if (trainer_.ablation()) {
    out << "masked_loss " << record.at("masked.loss").item() << "\n";
    out << "unmasked_loss " << record.at("unmasked.loss").item() << "\n";
    out << "unmasked_accuracy " << record.at("unmasked.accuracy").item() << "\n";
  }
  out << "steps " << session_->steps() << "\n";
  if (frame_at_95_ >= 0) {
    out << "frames_to_accuracy_95 " << frame_at_95_ << "\n";
    out << "steps_to_accuracy_95 " << step_at_95_ << "\n";
  }
}

// ---- drawing ---------------------------------------------------------------------------------
void TransformerScene::draw() {
  session_->frame();
  draw_panes(
      300, [&] { draw_controls(); }, session_->error(),
      [&] {
        const std::map<std::string, Tensor> record = session_->shown_record();
        ++frames_;
        if (frame_at_95_ < 0 && record.at("masked.accuracy").item() >= 0.95) {
          frame_at_95_ = frames_;
          step_at_95_ = session_->shown_step();
        }
        const ImVec2 avail = ImGui::GetContentRegionAvail();
        const float plot_height = std::floor(std::clamp(avail.y * 0.26f, 140.0f, 260.0f));
        session_->draw_curves(ImVec2(avail.x, plot_height));
        draw_answers(record);
        int maps = static_cast<int>(maps_);
        ImGui::TextUnformatted("Maps:");
        ImGui::SameLine();
        ImGui::RadioButton("encoder self-attention", &maps, 0);
        ImGui::SameLine();
        ImGui::RadioButton("decoder self-attention", &maps, 1);
        ImGui::SameLine();
        ImGui::RadioButton("cross-attention", &maps, 2);
        maps_ = static_cast<Maps>(maps);
        draw_maps(record);
      });
}

void TransformerScene::draw_controls() {
  ImGui::TextUnformatted("Task");
  std::string task = trainer_.task();
  bool changed = draw_task_choice(task);
  bool ablation = trainer_.ablation();
  changed |= ImGui::Checkbox("train a twin without the\nlook-ahead mask (ablation)", &ablation);
  if (changed) configure(task, ablation);
  ImGui::Separator();
  session_->draw_controls();
  ImGui::Separator();
  ImGui::Text("Held-out input %d of %d", example_ + 1,
              static_cast<int>(TransformerTrainer::kShown));
  draw_prev_next(example_, static_cast<int>(TransformerTrainer::kShown));
  ImGui::Spacing();
  show_note(
      "d2l's Transformer (2 blocks, 4 heads, d 32, FFN 64, no dropout) learns the task by "
      "teacher forcing; the plot shows its minibatch loss per token (left axis) and its exact "
      "match on 300 held-out inputs (right axis, every 50 steps).");
  show_note(
      "Each map is one head of one block: row i is how query i spread its attention over the "
      "keys (the weights sum to 1). Decoder self-attention: a step may not look at the steps "
      "after it (the hatched cells). Hover a cell for the tokens and the weight.");
  if (trainer_.ablation()) {
    show_note(
        "The twin trains without the look-ahead mask: each step sees the next target token, "
        "which is its label, so it learns to copy and its training loss drops fast. Predicting, "
        "the future is not there yet, and its answers fail.");
  }
}

std::vector<std::string> TransformerScene::output_tokens(
    const std::map<std::string, Tensor>& record, size_t m) const {
  const tr::Dataset& data = trainer_.data_set();
  const int64_t tgt = data.tgt_steps();
  const std::string name = TransformerTrainer::kModels[m];
  const std::vector<double> output = record.at(name + ".output").to_vector();
  const auto rows =
      static_cast<int64_t>(record.at(name + ".rows").to_vector()[static_cast<size_t>(example_)]);
  std::vector<std::string> tokens;
  for (int64_t t = 0; t < tgt; ++t) {
    const double index = output[static_cast<size_t>(example_ * tgt + t)];
    if (index < 0) break;
    tokens.push_back(data.tgt_vocab().token(static_cast<int64_t>(index)));
  }
  if (rows > static_cast<int64_t>(tokens.size())) tokens.push_back("<eos>");
  return tokens;
}

void TransformerScene::draw_answers(const std::map<std::string, Tensor>& record) const {
  const tr::Example& example = trainer_.data_set().heldout()[static_cast<size_t>(example_)];
  ImGui::Text("source  %s", example.source.c_str());
  ImGui::SameLine(0, 40);
  ImGui::Text("target  %s", example.target.c_str());
  for (size_t m = 0; m < static_cast<size_t>(trainer_.models()); ++m) {
    std::vector<std::string> tokens = output_tokens(record, m);
    if (!tokens.empty() && tokens.back() == "<eos>") tokens.pop_back();
    const std::string answer = tr::detokenize_chars(tokens);
    const bool right = answer == example.target;
    const std::string name = TransformerTrainer::kModels[m];
    ImGui::TextColored(right ? ImVec4(0.2f, 0.75f, 0.2f, 1) : ImVec4(0.95f, 0.3f, 0.3f, 1),
                       "%s: %s %s (held-out %.1f%%)", kModelLabels[m], answer.c_str(),
                       right ? "right" : "wrong", 100.0 * record.at(name + ".accuracy").item());
  }
}

void TransformerScene::draw_maps(const std::map<std::string, Tensor>& record) const {
  const tr::Example& example = trainer_.data_set().heldout()[static_cast<size_t>(example_)];
  std::vector<std::string> source = tr::tokenize_chars(example.source);
  source.push_back("<eos>");
  const std::vector<std::string> outputs = output_tokens(record, 0);
  // The decoder's inputs: <bos>, then each output but the last (fed back).
  std::vector<std::string> inputs = {"<bos>"};
  inputs.insert(inputs.end(), outputs.begin(), outputs.end() - 1);
  const auto n_src = static_cast<int64_t>(source.size());
  const auto n_out = static_cast<int64_t>(outputs.size());

  AttentionGrid grid;
  grid.id = std::string("transformer/") + kMapIds[static_cast<int>(maps_)];
  switch (maps_) {
    case Maps::EncoderSelf:
      grid.maps = example_maps(record, "masked.enc_self", example_, n_src, n_src);
      grid.row_tokens = grid.col_tokens = source;
      grid.row_name = "source query";
      grid.col_name = "source key";
      break;
    case Maps::DecoderSelf:
      grid.maps = example_maps(record, "masked.dec_self", example_, n_out, n_out);
      grid.keep = look_ahead_keep(n_out);
      grid.row_tokens = grid.col_tokens = inputs;
      grid.row_name = "decoder input";
      grid.col_name = "earlier input";
      break;
    case Maps::Cross:
      grid.maps = example_maps(record, "masked.cross", example_, n_out, n_src);
      grid.row_tokens = outputs;
      grid.col_tokens = source;
      grid.row_name = "output";
      grid.col_name = "source";
      break;
  }
  grid.row_tokens = tick_labels(grid.row_tokens);
  grid.col_tokens = tick_labels(grid.col_tokens);
  show_note(maps_ == Maps::DecoderSelf
                ? "Tokens: _ a space, ^ the start (<bos>), $ the end (<eos>). Hatched: the "
                  "look-ahead mask, a step may not see the steps after it."
                : "Tokens: _ a space, ^ the start (<bos>), $ the end (<eos>).");
  draw_attention_grid(grid, ImGui::GetContentRegionAvail());
}

std::unique_ptr<Scene> make_transformer_scene() {
  return std::make_unique<TransformerScene>(Stepping::Background);
}

}  // namespace ag::viewer
