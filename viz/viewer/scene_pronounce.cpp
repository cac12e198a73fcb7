// Scene "pronounce" (see scene_pronounce.h): the knobs, the controls both
// modes share, and ask mode, where the shipped model answers the typed word.
#include "scene_pronounce.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "heatmap_widget.h"

namespace ag::viewer {

namespace tr = ag::translate;

namespace {

// Words whose spelling hides their sounds: a silent k, an x that says two
// sounds, a gh that says none, letters that say an r that is not written.
const char* const kGallery[] = {"knife",     "box",        "thought", "queue",
                                "xylophone", "psychology", "colonel"};

const ImVec4 kRight(0.3f, 0.8f, 0.3f, 1), kWrong(1.0f, 0.4f, 0.4f, 1);

// Phonemes as text items on one line, those marked drawn in red.
void phoneme_line(const std::vector<std::string>& phonemes, const std::vector<bool>& marked) {
  for (size_t i = 0; i < phonemes.size(); ++i) {
    ImGui::SameLine(0, i == 0 ? -1.0f : ImGui::CalcTextSize(" ").x);
    if (marked[i]) {
      ImGui::TextColored(kWrong, "%s", phonemes[i].c_str());
    } else {
      ImGui::TextUnformatted(phonemes[i].c_str());
    }
  }
  if (phonemes.empty()) {
    ImGui::SameLine();
    ImGui::TextUnformatted("(nothing)");
  }
}

std::vector<std::string> without_eos(std::vector<std::string> tokens) {
  if (!tokens.empty() && tokens.back() == "<eos>") tokens.pop_back();
  return tokens;
}

}  // namespace

void draw_pronounce_alignment(const std::string& id, const std::string& title,
                              const std::vector<std::string>& letters,
                              const std::vector<std::string>& phonemes, const Tensor& alignment,
                              ImVec2 size) {
  // Letters across (the word and <eos>), phonemes down, one row per output
  // step (the one that emitted <eos> too): as d2l draws an alignment.
  HeatmapView view{id,       title,     alignment, Tensor(), {viz::Colormap::Viridis, 0.0, 1.0},
                   "letter", "phoneme", "phoneme", "letter"};
  view.max_cell = 60.0f;
  view.show_values = true;  // short words: each weight fits its cell
  for (const std::string& letter : letters) {
    view.col_labels.push_back(letter == "<eos>" ? "\xe2\x86\xb5" : letter);
  }
  for (const std::string& phoneme : phonemes) {
    view.row_labels.push_back(phoneme == "<eos>" ? "\xe2\x86\xb5" : phoneme);
  }
  const float bar = colorbar_width(view.scale) + ImGui::GetStyle().ItemSpacing.x;
  draw_heatmap(view, ImVec2(std::max(size.x - bar, 60.0f), std::max(size.y, 60.0f)));
  colorbar_beside_last_map((id + "_bar").c_str(), view.scale);
}

// ---- state and knobs ----------------------------------------------------------------------
PronounceScene::PronounceScene(Stepping stepping)
    : stepping_(stepping),
      model_path_(find_source_file(kShippedG2pModel)),
      dict_path_(tr::kDefaultCmudictPath) {}

PronounceScene::~PronounceScene() = default;

void PronounceScene::load() {
  if (loaded_) return;
  loaded_ = true;
  load_error_.clear();
  dict_error_.clear();
  try {
    shipped_ = tr::load_translator(model_path_);
    if (shipped_.task != tr::Task::G2p) {
      throw Error("pronounce: " + model_path_ + " is a model of the " +
                  tr::task_name(shipped_.task) + " task, not g2p");
    }
  } catch (const Error& e) {
    shipped_ = tr::Translator();
    load_error_ = e.what();
  }
  try {
    dict_ = load_pronouncing_dictionary(dict_path_);
  } catch (const Error& e) {
    dict_ = PronouncingDictionary();
    dict_error_ = e.what();
  }
  answer_word();
}

void PronounceScene::set_model_path(const std::string& path) {
  model_path_ = path;
  loaded_ = false;
  has_answer_ = false;
}

void PronounceScene::set_dict_path(const std::string& path) {
  dict_path_ = path;
  loaded_ = false;
}

void PronounceScene::set_word(const std::string& text) {
  std::snprintf(field_, sizeof field_, "%s", text.c_str());
  if (loaded_) answer_word();  // else load() does
  if (mode_ == Mode::Train) post_typed_word();
}

void PronounceScene::type_word(const std::string& text) {
  set_word(text);
  typed_this_frame_ = true;
}

void PronounceScene::set_beam(int beam) {
  beam_ = std::clamp(beam, 1, 10);
  if (loaded_) answer_word();
}

void PronounceScene::answer_word() {
  // The field keeps what was typed; the answer is the last word that could
  // be read, and word_error_ says why this one cannot.
  word_error_.clear();
  if (!load_error_.empty()) return;
  try {
    word_ = checked_word(field_, shipped_.src_steps - 1);
    answer_ = tr::translate(shipped_, {word_}, 1, 1)[0];
    beam_pending_ = beam_ > 1;  // K = 1 is the greedy answer itself
    has_answer_ = true;
    shown_candidate_ = -1;
  } catch (const Error& e) {
    word_error_ = e.what();
  }
}

void PronounceScene::search_beam() {
  beam_pending_ = false;
  try {
    answer_.beam = tr::translate(shipped_, {word_}, 1, beam_)[0].beam;
  } catch (const Error& e) {
    word_error_ = e.what();
  }
}

void PronounceScene::ask_random_test_word() {
  load();
  if (dict_.test_words.empty() || !load_error_.empty()) return;
  std::uniform_int_distribution<size_t> pick(0, dict_.test_words.size() - 1);
  const std::string word = dict_.test_words[pick(random_)];
  set_word(word);
  if (!has_answer_ || word_ != word) return;
  const std::vector<std::string>& answers = dict_.words.at(word);
  last_random_right_ = std::find(answers.begin(), answers.end(), answer_.output) != answers.end();
  last_random_ = word;
  ++random_asked_;
  random_right_ += last_random_right_ ? 1 : 0;
}

std::map<std::string, Tensor> PronounceScene::inputs() const {
  std::map<std::string, Tensor> out;
  if (mode_ == Mode::Train) {
    if (session_) {
      for (auto& [name, t] : session_->shown_record()) out["shown." + name] = t;
    }
    return out;
  }
  if (!has_answer_) return out;
  const auto [src, valid_len] = tr::encode_sources({word_}, shipped_.src_vocab, shipped_.src_steps);
  out["src"] = src;
  out["src_valid_len"] = valid_len;
  std::vector<double> output;
  for (const std::string& token : without_eos(answer_.output_tokens)) {
    output.push_back(static_cast<double>(shipped_.tgt_vocab.index(token)));
  }
  out["output"] = tensor(output, {static_cast<int64_t>(output.size())}, kInt64);
  out["alignment"] = answer_.alignment;
  return out;
}

std::vector<Knob> PronounceScene::knobs() {
  std::vector<Knob> knobs = {
      choice_knob("mode",
                  "ask: the shipped model answers the typed word; train: two small models "
                  "learn the dictionary live",
                  {"ask", "train"}, [this](int mode) { set_mode(static_cast<Mode>(mode)); }),
      Knob{"word", "the word in the text field (bad words show a message, as in the field)",
           "any text", [this](const std::string& word) { set_word(word); }},
      number_knob("beam", "ask mode: the beam's candidates (K; 1 is greedy search)", 1, 10, true,
                  [this](double beam) { set_beam(static_cast<int>(beam)); }),
      Knob{"model", "ask mode: the g2p model file (attograd-translate --save)", "a path",
           [this](const std::string& path) { set_model_path(path); }},
      Knob{"dict", "the CMUdict file (Debian's pocketsphinx-en-us)", "a path",
           [this](const std::string& path) { set_dict_path(path); }},
      stepping_knob([this](Stepping stepping) {
        stepping_ = stepping;
        if (session_) start_training();
      }),
  };
  // The session's knobs make the session first (train mode's), so that
  // --set pronounce.paused=yes works before or after pronounce.mode=train.
  for (Knob& knob : training_session_knobs(session_)) {
    knob.set = [this, set = std::move(knob.set)](const std::string& value) {
      if (!session_) start_training();
      AG_CHECK(session_ != nullptr, "attograd-viewer", train_error_);
      set(value);
    };
    knobs.push_back(std::move(knob));
  }
  return knobs;
}

void PronounceScene::print_stats(std::ostream& out) const {
  std::string output = "(none)";
  if (mode_ == Mode::Ask && has_answer_) output = answer_.output;
  if (mode_ == Mode::Train && trainer_ && session_) {
    const std::map<std::string, Tensor> record = session_->shown_record();
    std::vector<std::string> phonemes;
    for (const double index : record.at("additive.typed.output").to_vector()) {
      if (index < 0) break;
      phonemes.push_back(trainer_->data_set().tgt_vocab().token(static_cast<int64_t>(index)));
    }
    output = tr::detokenize(phonemes, tr::Tokenization::Phonemes);
    out << "dev_wer_first " << trainer_->first_wer() << "\n";
    out << "dev_wer_last " << record.at("additive.wer").item() << "\n";
    out << "loss_first " << session_->first_loss() << "\n";
    out << "loss_last " << session_->last_loss() << "\n";
    out << "steps " << session_->steps() << "\n";
  }
  out << "pronounce_output " << (output.empty() ? "(none)" : output) << "\n";
}

void PronounceScene::before_last_frame() {
  if (!session_) return;
  session_->set_paused(true);
  session_->sync();
}

// ---- drawing ------------------------------------------------------------------------------
void PronounceScene::draw() {
  load();
  if (mode_ == Mode::Train) {
    draw_train();
  } else {
    draw_panes(
        300, [&] { draw_controls(); }, load_error_, [&] { draw_answer(); });
  }
  typed_this_frame_ = false;  // both modes' fields type; the next frame starts clean
}

// Both modes' control panes start with the choice between them.
void PronounceScene::draw_mode_choice() {
  ImGui::TextUnformatted("Mode");
  int mode = static_cast<int>(mode_);
  bool changed = ImGui::RadioButton("ask the trained model", &mode, 0);
  changed |= ImGui::RadioButton("train two models live", &mode, 1);
  if (changed) set_mode(static_cast<Mode>(mode));
  ImGui::Separator();
}

void PronounceScene::draw_controls() {
  draw_mode_choice();
  draw_word_field();
  if (mode_ == Mode::Ask) {
    ImGui::SetNextItemWidth(120);
    int beam = beam_;
    if (ImGui::SliderInt("beam K", &beam, 1, 10)) set_beam(beam);
    ImGui::Separator();
    draw_gallery();
    ImGui::Spacing();
    show_note(
        "The model: d2l's seq2seq with Bahdanau's additive attention, trained on CMUdict's "
        "training words (translate/models/g2p-cmudict.npz). It reads the letters and says "
        "ARPAbet phonemes; the map shows which letters each phoneme looked at.");
  }
}

void PronounceScene::draw_word_field() {
  ImGui::TextUnformatted("Word");
  ImGui::SetNextItemWidth(-1);
  if (ImGui::InputTextWithHint("##word", "type a word, e.g. knife", field_, sizeof field_)) {
    type_word(field_);
  }
  if (!word_error_.empty()) {
    show_error(word_error_);
    if (has_answer_) show_note(("Shown: \"" + word_ + "\".").c_str());
  }
}

void PronounceScene::draw_gallery() {
  // 1. Tricky words, as buttons that wrap at the pane's edge.
  ImGui::TextUnformatted("Tricky words");
  const float right = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
  for (size_t i = 0; i < std::size(kGallery); ++i) {
    if (i > 0) {
      const float width = ImGui::CalcTextSize(kGallery[i]).x + 2 * ImGui::GetStyle().FramePadding.x;
      if (ImGui::GetItemRectMax().x + ImGui::GetStyle().ItemSpacing.x + width <= right) {
        ImGui::SameLine();
      }
    }
    if (ImGui::Button(kGallery[i])) set_word(kGallery[i]);
  }
  // 2. Words of the test split, which the model never saw, and how many it
  //    got right so far.
  ImGui::BeginDisabled(dict_.test_words.empty() || !load_error_.empty());
  if (ImGui::Button("random test word")) ask_random_test_word();
  ImGui::EndDisabled();
  if (random_asked_ > 0) {
    ImGui::SameLine();
    ImGui::TextColored(last_random_right_ ? kRight : kWrong, "%s",
                       last_random_right_ ? "right" : "wrong");
    ImGui::Text("right: %d of %d (%.0f%%)", random_right_, random_asked_,
                100.0 * random_right_ / random_asked_);
  }
}

void PronounceScene::draw_answer() {
  if (!has_answer_) {
    show_note(word_error_.empty()
                  ? "Type a word in the field on the left."
                  : "No answer yet: the field's text is not a word the model can read (the "
                    "message on the left says why).");
    if (!dict_error_.empty()) show_error(dict_error_);
    return;
  }
  // The beam follows the greedy answer on the first frame without a
  // keystroke (this frame, unless the field was edited in it).
  if (beam_pending_ && !typed_this_frame_) search_beam();
  // 1. The greedy answer, in ARPAbet and IPA.
  const std::vector<std::string> phonemes = without_eos(answer_.output_tokens);
  ImGui::Text("%s", word_.c_str());
  ImGui::SameLine();
  ImGui::TextDisabled("says");
  ImGui::SameLine();
  ImGui::Text("%s    /%s/", answer_.output.c_str(), arpabet_to_ipa(phonemes).c_str());
  draw_dictionary(phonemes);
  ImGui::Separator();
  // 2. The shown candidate's alignment (the greedy answer's until one is
  //    clicked) on the left, the beam's candidates on the right.
  const bool greedy =
      shown_candidate_ < 0 || shown_candidate_ >= static_cast<int>(answer_.beam.size());
  const std::vector<std::string>& rows =
      greedy ? answer_.output_tokens
             : answer_.beam[static_cast<size_t>(shown_candidate_)].output_tokens;
  const Tensor& alignment =
      greedy ? answer_.alignment : answer_.beam[static_cast<size_t>(shown_candidate_)].alignment;
  const float list_width = std::min(330.0f, ImGui::GetContentRegionAvail().x * 0.42f);
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float map_width = avail.x - list_width - ImGui::GetStyle().ItemSpacing.x;
  ImGui::BeginChild("pronounce/map", ImVec2(map_width, avail.y));
  const char* title = greedy ? "greedy answer's alignment" : "candidate's alignment";
  if (rows.empty()) {
    show_note("The model said nothing: no rows to draw.");
  } else {
    draw_pronounce_alignment(
        "pronounce/alignment", title, answer_.source_tokens, rows, alignment,
        ImVec2(ImGui::GetContentRegionAvail().x,
               ImGui::GetContentRegionAvail().y - ImGui::GetTextLineHeightWithSpacing() * 2));
    show_note("Each row sums to 1. \xe2\x86\xb5 is the end (<eos>). Hover a cell for its weight.");
  }
  ImGui::EndChild();
  ImGui::SameLine();
  draw_candidates(ImVec2(list_width, avail.y));
}

void PronounceScene::draw_dictionary(const std::vector<std::string>& model_phonemes) {
  // The dictionary's pronunciations, each with the phonemes it and the
  // model's answer differ in marked red; the model's answer again below,
  // marked against the nearest of them.
  if (!dict_error_.empty()) {
    show_error(dict_error_);
    return;
  }
  const auto found = dict_.words.find(word_);
  if (found == dict_.words.end()) {
    show_note("Not in the dictionary: nothing to check the answer against.");
    return;
  }
  const std::vector<std::string>& answers = found->second;
  const bool right = std::find(answers.begin(), answers.end(), answer_.output) != answers.end();
  ImGui::Text("CMUdict (a %s word):", split_name(tr::cmudict_split(word_)));
  ImGui::SameLine();
  ImGui::TextColored(right ? kRight : kWrong, "%s",
                     right ? "the model is right" : "the model is wrong");
  size_t nearest = 0;
  int64_t nearest_distance = -1;
  for (size_t i = 0; i < answers.size() && i < 4; ++i) {
    const std::vector<std::string> dict_phonemes =
        tr::tokenize(answers[i], tr::Tokenization::Phonemes);
    const PhonemeDiff diff = diff_phonemes(model_phonemes, dict_phonemes);
    const int64_t distance = tr::edit_distance(model_phonemes, dict_phonemes);
    if (nearest_distance < 0 || distance < nearest_distance) {
      nearest = i;
      nearest_distance = distance;
    }
    ImGui::TextDisabled("  dictionary");
    phoneme_line(dict_phonemes, diff.b_differs);
    ImGui::SameLine();
    ImGui::TextDisabled("  /%s/", arpabet_to_ipa(dict_phonemes).c_str());
  }
  if (answers.size() > 4) ImGui::TextDisabled("  (and %zu more)", answers.size() - 4);
  const PhonemeDiff diff =
      diff_phonemes(model_phonemes, tr::tokenize(answers[nearest], tr::Tokenization::Phonemes));
  ImGui::TextDisabled("  model     ");
  phoneme_line(model_phonemes, diff.a_differs);
}

void PronounceScene::draw_candidates(ImVec2 size) {
  ImGui::BeginChild("pronounce/beam", size, true);
  if (beam_pending_) {
    ImGui::Text("The beam's best %d", beam_);
    show_note("Searching when the typing pauses.");
    ImGui::EndChild();
    return;
  }
  if (answer_.beam.empty()) {
    ImGui::TextUnformatted("Beam K = 1: greedy search");
    show_note("Raise K to see the beam's best K pronunciations and their scores.");
    ImGui::EndChild();
    return;
  }
  ImGui::Text("The beam's best %zu", answer_.beam.size());
  show_note("score = log P / L^0.75 (L: phonemes and <eos>). Click one for its alignment.");
  if (ImGui::Selectable("greedy answer", shown_candidate_ < 0)) shown_candidate_ = -1;
  for (size_t i = 0; i < answer_.beam.size(); ++i) {
    const tr::Translation::Candidate& c = answer_.beam[i];
    char line[160];
    std::snprintf(line, sizeof line, "%6.3f  %s%s##candidate%zu", c.score, c.output.c_str(),
                  c.finished ? "" : " (unfinished)", i);
    if (ImGui::Selectable(line, shown_candidate_ == static_cast<int>(i))) {
      shown_candidate_ = static_cast<int>(i);
    }
  }
  ImGui::EndChild();
}

std::unique_ptr<Scene> make_pronounce_scene() {
  return std::make_unique<PronounceScene>(Stepping::Background);
}

}  // namespace ag::viewer
