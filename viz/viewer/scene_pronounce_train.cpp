// The pronounce scene's train mode (see scene_pronounce.h): two small models
// learn CMUdict live, on the session's worker; the frames draw the shown
// step's record only.
#include <imgui.h>

#include <algorithm>
#include <cmath>

#include "scene_pronounce.h"

namespace ag::viewer {

namespace tr = ag::translate;

void PronounceScene::set_mode(Mode mode) {
  // Training waits while the learner asks (its worker would take the CPU the
  // answers need); Play goes on from where it stopped.
  if (mode == Mode::Ask && mode_ == Mode::Train && session_) session_->set_paused(true);
  mode_ = mode;
  if (mode_ == Mode::Train && !session_) start_training();
  if (mode_ == Mode::Train) post_typed_word();
}

void PronounceScene::start_training() {
  // The dictionary is read once (a second or so); a new session starts the
  // models over at step 0, keeping the speed and pause settings.
  const bool paused = session_ && session_->paused();
  session_.reset();  // its worker stops before anything changes
  try {
    if (!trainer_) trainer_ = std::make_unique<PronounceTrainer>(dict_path_);
    trainer_->set_models(train_models_);
    post_typed_word();  // no session: set on the trainer directly
    session_ = std::make_unique<TrainingSession>(*trainer_, TrainingSession::kHistory, stepping_);
    // Without a worker (the browser) a frame takes steps for at most ~10 ms
    // (at least one step) so that the page keeps drawing.
    session_->set_steps_per_frame(4);
    session_->set_frame_budget(10.0);
    session_->set_paused(paused || mode_ != Mode::Train);
    train_error_.clear();
  } catch (const Error& e) {
    train_error_ = e.what();
  }
}

void PronounceScene::set_train_models(const ScoringPair& models) {
  check_scoring_pair(models, "attograd-viewer");
  if (models == train_models_) return;
  train_models_ = models;
  if (session_) start_training();  // else the first start uses them
}

void PronounceScene::post_typed_word() {
  if (!trainer_) return;
  std::string word;
  try {
    word = checked_word(field_, trainer_->data_set().src_steps() - 1);
  } catch (const Error& e) {
    word_error_ = e.what();
    return;  // the models keep answering the last good word
  }
  word_error_.clear();
  word_ = word;
  if (!session_) {
    trainer_->set_typed(word);
    return;
  }
  // The record is made again at once, so a paused session shows it too.
  session_->post([word](Trainer& t) { static_cast<PronounceTrainer&>(t).set_typed(word); },
                 /*rerecord=*/true);
}

void PronounceScene::draw_train() {
  // 1. Let the session train (a worker steps; without one, the frame does).
  if (session_) session_->frame();
  const std::string error =
      !train_error_.empty() ? train_error_ : (session_ ? session_->error() : "");
  draw_panes(
      300, [&] { draw_train_controls(); }, error,
      [&] {
        if (!session_) return;
        // 2. The shown step's record: the curves on top, the two models below.
        const std::map<std::string, Tensor> record = session_->shown_record();
        const ImVec2 avail = ImGui::GetContentRegionAvail();
        const float plot_height = std::floor(std::clamp(avail.y * 0.3f, 140.0f, 260.0f));
        session_->draw_curves(ImVec2(avail.x, plot_height));
        const float width = std::floor((avail.x - ImGui::GetStyle().ItemSpacing.x) / 2);
        const ImVec2 size(width, ImGui::GetContentRegionAvail().y);
        draw_train_model(0, record, size);
        ImGui::SameLine();
        draw_train_model(1, record, size);
      });
}

void PronounceScene::draw_train_controls() {
  draw_mode_choice();
  ImGui::TextUnformatted("Scoring functions");
  ScoringPair models = train_models_;
  if (draw_scoring_pair_choice(models)) set_train_models(models);
  ImGui::Separator();
  if (session_) {
    session_->draw_controls();
    ImGui::Separator();
  }
  draw_word_field();
  ImGui::Spacing();
  show_note(
      "Two small seq2seq models (a GRU of 32, d2l's decoder) learn CMUdict's training words "
      "from the same seed and minibatches; they differ only in the attention scoring "
      "function. The plot: each model's minibatch loss per phoneme (left axis) and its word "
      "error rate on 300 dev words (right axis, every 50 steps).");
}

void PronounceScene::draw_train_model(size_t model, const std::map<std::string, Tensor>& record,
                                      ImVec2 size) const {
  // 1. The word the record answered and this model's answer.
  const tr::Dataset& data = trainer_->data_set();
  const std::string& name = trainer_->model(model);
  const int64_t length = static_cast<int64_t>(record.at("typed.length").item());
  std::vector<std::string> phonemes;
  for (const double index : record.at(name + ".typed.output").to_vector()) {
    if (index < 0) break;
    phonemes.push_back(data.tgt_vocab().token(static_cast<int64_t>(index)));
  }
  const int64_t rows = static_cast<int64_t>(record.at(name + ".typed.rows").item());
  ImGui::BeginChild(("pronounce/" + name).c_str(), size);
  ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(kScoringColors[model]), "%s attention",
                     name.c_str());
  ImGui::SameLine();
  ImGui::Text("  dev WER %.1f%%", 100.0 * record.at(name + ".wer").item());
  const std::string answer = tr::detokenize(phonemes, tr::Tokenization::Phonemes);
  ImGui::Text("says  %s  /%s/", answer.empty() ? "(nothing)" : answer.c_str(),
              arpabet_to_ipa(phonemes).c_str());
  // 2. Its alignment, labelled with the record's word (the field may hold
  //    a newer one the worker has not answered yet).
  if (rows > 0 && length > 0) {
    std::vector<std::string> letters;
    const std::vector<double> bytes = record.at("typed.letters").to_vector();
    for (int64_t i = 0; i + 1 < length; ++i) {
      letters.emplace_back(1, static_cast<char>(bytes[static_cast<size_t>(i)]));
    }
    letters.push_back("<eos>");
    if (rows > static_cast<int64_t>(phonemes.size())) phonemes.push_back("<eos>");
    const Tensor alignment =
        record.at(name + ".typed.alignment").narrow(0, 0, rows).narrow(1, 0, length);
    draw_pronounce_alignment("pronounce/" + name + "_alignment", "alignment", letters, phonemes,
                             alignment, ImGui::GetContentRegionAvail());
  }
  ImGui::EndChild();
}

}  // namespace ag::viewer
