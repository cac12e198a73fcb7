// Scene "pronounce" (see scene_pronounce.h): the knobs, the controls both
// modes share, and ask mode, where the shipped models answer the typed word
// side by side.
#include "scene_pronounce.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>

#include "heatmap_widget.h"

namespace ag::viewer {

namespace tr = ag::translate;

namespace {

// Words whose spelling hides their sounds: a silent k, an x that says two
// sounds, a gh that says none, letters that say an r that is not written.
const char* const kGallery[] = {"knife",     "box",        "thought", "queue",
                                "xylophone", "psychology", "colonel"};

const ImVec4 kRight(0.3f, 0.8f, 0.3f, 1), kWrong(1.0f, 0.4f, 0.4f, 1);

// Phonemes as text items on one line (starting a new one), those marked
// drawn in `colour`.
void phoneme_line(const std::vector<std::string>& phonemes, const std::vector<bool>& marked,
                  const ImVec4& colour) {
  for (size_t i = 0; i < phonemes.size(); ++i) {
    if (i > 0) ImGui::SameLine(0, ImGui::CalcTextSize(" ").x);
    if (marked[i]) {
      ImGui::TextColored(colour, "%s", phonemes[i].c_str());
    } else {
      ImGui::TextUnformatted(phonemes[i].c_str());
    }
  }
  if (phonemes.empty()) ImGui::TextUnformatted("(nothing)");
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
namespace {

// A model's name in ask mode: its scoring function, "transformer", or
// "ensemble" (several files decoded as one).
std::string model_name(const tr::Translator& t) {
  if (!t.members.empty()) return "ensemble";
  return t.config.model == "transformer" ? "transformer" : t.config.attention;
}

// "bidirectional GRU encoder, additive attention, 3.1M parameters"; an
// ensemble's begins "3 models as one (...), " and describes its first.
std::string model_summary(const tr::Translator& t) {
  int64_t parameters = 0;
  for (const Tensor& p : t.model->parameters()) parameters += p.numel();
  char count[32];
  std::snprintf(count, sizeof count, "%.1fM parameters", parameters / 1e6);
  const std::string ensemble =
      t.members.empty()
          ? ""
          : std::to_string(t.members.size()) + " models as one (their probabilities averaged), ";
  if (t.config.model == "transformer") {
    return ensemble + "d2l's Transformer, " + std::to_string(t.config.num_blks) + " blocks of " +
           std::to_string(t.config.num_hiddens) + ", " + count;
  }
  return ensemble + t.config.encoder + " GRU encoder, " + t.config.attention + " attention, " +
         count;
}

std::vector<std::string> shipped_paths() {
  std::vector<std::string> paths;
  for (const char* relative : tr::kShippedG2pModels) paths.push_back(find_source_file(relative));
  return paths;
}

bool says_one_of(const std::vector<std::string>& answers, const std::string& output) {
  return std::find(answers.begin(), answers.end(), output) != answers.end();
}

}  // namespace

PronounceScene::PronounceScene(Stepping stepping)
    : stepping_(stepping), model_paths_(shipped_paths()), dict_path_(tr::kDefaultCmudictPath) {}

PronounceScene::~PronounceScene() = default;

void PronounceScene::load() {
  if (loaded_) return;
  loaded_ = true;
  load_error_.clear();
  dict_error_.clear();
  models_.clear();
  for (const std::string& path : model_paths_) {
    AskedModel& m = models_.emplace_back();
    m.path = path;
    m.name = std::filesystem::path(path).stem().string();  // until it loads
    // "a.npz+b.npz": an ensemble of the files (translate/ensemble.h).
    const std::vector<std::string> files = split_list(path, '+');
    for (const std::string& file : files)
      m.file_names +=
          (m.file_names.empty() ? "" : " + ") + std::filesystem::path(file).filename().string();
    try {
      m.pronouncer.emplace(files);  // refuses a model of another task
      m.name = model_name(m.pronouncer->translator());
    } catch (const Error& e) {
      m.pronouncer.reset();
      m.load_error = e.what();
      load_error_ += (load_error_.empty() ? "" : "\n") + m.load_error;
    }
  }
  // Two models of one scoring function are told apart by their place.
  for (size_t i = 0; i < models_.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (models_[j].name == models_[i].name) models_[i].name += "_" + std::to_string(i + 1);
    }
  }
  const bool any_loaded = std::any_of(models_.begin(), models_.end(),
                                      [](const AskedModel& m) { return m.load_error.empty(); });
  if (any_loaded) load_error_.clear();  // each column says its own
  if (models_.empty()) load_error_ = "pronounce: no model files given (the models knob)";
  random_right_.assign(models_.size(), 0);
  last_random_right_.assign(models_.size(), false);
  random_asked_ = 0;
  try {
    dict_ = load_pronouncing_dictionary(dict_path_);
  } catch (const Error& e) {
    dict_ = PronouncingDictionary();
    dict_error_ = e.what();
  }
  answer_word();
}

void PronounceScene::set_model_paths(const std::vector<std::string>& paths) {
  model_paths_ = paths;
  loaded_ = false;
  models_.clear();
}

void PronounceScene::set_dict_path(const std::string& path) {
  dict_path_ = path;
  loaded_ = false;
}

const tr::PronunciationVariant* PronounceScene::answer(size_t model) const {
  if (model >= models_.size() || !models_[model].has_answer) return nullptr;
  return &models_[model].answer;
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
  // The field keeps what was typed; the answers are the last word's that
  // could be read by every model, and word_error_ says why this one cannot.
  word_error_.clear();
  if (!load_error_.empty()) return;
  int64_t max_letters = std::numeric_limits<int64_t>::max();
  for (const AskedModel& m : models_) {
    if (m.pronouncer) max_letters = std::min(max_letters, m.pronouncer->translator().src_steps - 1);
  }
  try {
    word_ = checked_word(field_, max_letters);
    for (AskedModel& m : models_) {
      if (!m.pronouncer) continue;
      m.answer = m.pronouncer->pronounce({word_}, {.nbest = 1, .beam = 1})[0].variants[0];
      m.beam.clear();
      m.has_answer = true;
      m.shown_candidate = -1;
    }
    beam_pending_ = beam_ > 1;  // K = 1 is the greedy answer itself
  } catch (const Error& e) {
    word_error_ = e.what();
  }
}

void PronounceScene::search_beam() {
  beam_pending_ = false;
  for (AskedModel& m : models_) {
    if (!m.has_answer) continue;
    try {
      m.beam = m.pronouncer->pronounce({word_}, {.nbest = beam_, .beam = beam_})[0].variants;
    } catch (const Error& e) {
      word_error_ = e.what();
    }
  }
}

void PronounceScene::ask_random_test_word() {
  load();
  if (dict_.test_words.empty() || !load_error_.empty()) return;
  std::uniform_int_distribution<size_t> pick(0, dict_.test_words.size() - 1);
  const std::string word = dict_.test_words[pick(random_)];
  set_word(word);
  if (word_ != word) return;
  const std::vector<std::string>& answers = dict_.words.at(word);
  ++random_asked_;
  for (size_t i = 0; i < models_.size(); ++i) {
    last_random_right_[i] =
        models_[i].has_answer && says_one_of(answers, models_[i].answer.phonemes);
    random_right_[i] += last_random_right_[i] ? 1 : 0;
  }
}

std::map<std::string, Tensor> PronounceScene::inputs() const {
  std::map<std::string, Tensor> out;
  if (mode_ == Mode::Train) {
    if (session_) {
      for (auto& [name, t] : session_->shown_record()) out["shown." + name] = t;
    }
    return out;
  }
  for (const AskedModel& m : models_) {
    if (!m.has_answer) continue;
    const tr::Translator& t = m.pronouncer->translator();
    const auto [src, valid_len] = tr::encode_sources({word_}, t.src_vocab, t.src_steps);
    out[m.name + ".src"] = src;
    out[m.name + ".src_valid_len"] = valid_len;
    std::vector<double> output;
    for (const std::string& token : without_eos(m.answer.output_tokens)) {
      output.push_back(static_cast<double>(t.tgt_vocab.index(token)));
    }
    out[m.name + ".output"] = tensor(output, {static_cast<int64_t>(output.size())}, kInt64);
    out[m.name + ".alignment"] = m.answer.alignment;
  }
  return out;
}

std::vector<Knob> PronounceScene::knobs() {
  std::vector<Knob> knobs = {
      choice_knob("mode",
                  "ask: the shipped models answer the typed word side by side; train: two "
                  "small models learn the dictionary live",
                  {"ask", "train"}, [this](int mode) { set_mode(static_cast<Mode>(mode)); }),
      Knob{"word", "the word in the text field (bad words show a message, as in the field)",
           "any text", [this](const std::string& word) { set_word(word); }},
      number_knob("beam", "ask mode: the beam's candidates (K; 1 is greedy search)", 1, 10, true,
                  [this](double beam) { set_beam(static_cast<int>(beam)); }),
      Knob{"models",
           "ask mode: the g2p model files shown side by side (attograd-translate --save; "
           "default: the shipped ones); a+b+c is one column, the files decoded as an ensemble",
           "paths, comma-separated",
           [this](const std::string& paths) { set_model_paths(split_list(paths)); }},
      scoring_pair_knob([this](const ScoringPair& models) { set_train_models(models); }),
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
  const auto said = [](const std::string& output) { return output.empty() ? "(none)" : output; };
  std::string output = "(none)";
  if (mode_ == Mode::Ask) {
    std::string names;
    for (const AskedModel& m : models_) {
      names += (names.empty() ? "" : ",") + m.name;
      out << "pronounce_output_" << m.name << " "
          << (m.has_answer ? said(m.answer.phonemes) : "(none)") << "\n";
      if (m.has_answer)
        out << "pronounce_confidence_" << m.name << " " << m.answer.confidence << "\n";
    }
    out << "pronounce_models " << (names.empty() ? "(none)" : names) << "\n";
    if (!models_.empty() && models_[0].has_answer) output = said(models_[0].answer.phonemes);
  }
  if (mode_ == Mode::Train && trainer_ && session_) {
    const std::map<std::string, Tensor> record = session_->shown_record();
    std::vector<std::string> phonemes;
    const std::string& first = trainer_->model(0);
    for (const double index : record.at(first + ".typed.output").to_vector()) {
      if (index < 0) break;
      phonemes.push_back(trainer_->data_set().tgt_vocab().token(static_cast<int64_t>(index)));
    }
    output = said(tr::detokenize(phonemes, tr::Tokenization::Phonemes));
    out << "dev_wer_first " << trainer_->first_wer() << "\n";
    out << "dev_wer_last " << record.at(first + ".wer").item() << "\n";
    out << "loss_first " << session_->first_loss() << "\n";
    out << "loss_last " << session_->last_loss() << "\n";
    out << "steps " << session_->steps() << "\n";
  }
  out << "pronounce_output " << output << "\n";
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
        300, [&] { draw_controls(); }, load_error_, [&] { draw_answers(); });
  }
  typed_this_frame_ = false;  // both modes' fields type; the next frame starts clean
}

// Both modes' control panes start with the choice between them.
void PronounceScene::draw_mode_choice() {
  ImGui::TextUnformatted("Mode");
  int mode = static_cast<int>(mode_);
  bool changed = ImGui::RadioButton("ask the trained models", &mode, 0);
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
    ImGui::Separator();
    // 3. What each model is: d2l's seq2seq trained on CMUdict's training
    //    words (docs/g2p.md), one scoring function each.
    ImGui::TextUnformatted("The models");
    for (size_t i = 0; i < models_.size(); ++i) {
      const AskedModel& m = models_[i];
      ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(kScoringColors[i % 4]), "%s",
                         m.name.c_str());
      ImGui::SameLine();
      ImGui::PushTextWrapPos(0.0f);  // an ensemble's names may take lines
      ImGui::TextDisabled("%s", m.file_names.c_str());
      ImGui::PopTextWrapPos();
      show_note(m.load_error.empty() ? model_summary(m.pronouncer->translator()).c_str()
                                     : "(not loaded)");
    }
    show_note(
        "Each read the letters and says ARPAbet phonemes; its map shows which letters each "
        "phoneme looked at.");
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
    if (!word_.empty()) show_note(("Shown: \"" + word_ + "\".").c_str());
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
  // 2. Words of the test split, which no model saw, and how many each got
  //    right so far.
  ImGui::BeginDisabled(dict_.test_words.empty() || !load_error_.empty());
  if (ImGui::Button("random test word")) ask_random_test_word();
  ImGui::EndDisabled();
  if (random_asked_ == 0) return;
  for (size_t i = 0; i < models_.size(); ++i) {
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(kScoringColors[i % 4]), "%s",
                       models_[i].name.c_str());
    ImGui::SameLine();
    ImGui::TextColored(last_random_right_[i] ? kRight : kWrong, "%s",
                       last_random_right_[i] ? "right" : "wrong");
    ImGui::SameLine();
    ImGui::Text("%d of %d (%.0f%%)", random_right_[i], random_asked_,
                100.0 * random_right_[i] / random_asked_);
  }
}

void PronounceScene::draw_answers() {
  const bool any_answer =
      std::any_of(models_.begin(), models_.end(), [](const AskedModel& m) { return m.has_answer; });
  if (!any_answer) {
    show_note(word_error_.empty()
                  ? "Type a word in the field on the left."
                  : "No answer yet: the field's text is not a word the models can read (the "
                    "message on the left says why).");
    if (!dict_error_.empty()) show_error(dict_error_);
    return;
  }
  // The beams follow the greedy answers on the first frame without a
  // keystroke (this frame, unless the field was edited in it).
  if (beam_pending_ && !typed_this_frame_) search_beam();
  // 1. The word, each model's answer against the dictionary and the others.
  draw_dictionary();
  ImGui::Separator();
  // 2. A column per model: its alignment and its beam.
  const float spacing = ImGui::GetStyle().ItemSpacing.x;
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float n = static_cast<float>(models_.size());
  const ImVec2 column((avail.x - spacing * (n - 1)) / n, avail.y);
  for (size_t i = 0; i < models_.size(); ++i) {
    if (i > 0) ImGui::SameLine();
    draw_model(models_[i], i, column);
  }
}

void PronounceScene::draw_dictionary() {
  // The dictionary's pronunciations; under them each model's answer, its
  // phonemes red where the nearest pronunciation differs, and, when the
  // models disagree, yellow where it differs from the first model's.
  const ImVec4 kOther(1.0f, 0.85f, 0.2f, 1);
  ImGui::Text("%s", word_.c_str());
  const auto found = dict_.words.find(word_);
  const std::vector<std::string>* answers = found == dict_.words.end() ? nullptr : &found->second;
  ImGui::SameLine();
  if (!dict_error_.empty()) {
    show_error(dict_error_);
  } else if (answers == nullptr) {
    ImGui::TextDisabled("is not in CMUdict: nothing to check the answers against");
  } else {
    ImGui::TextDisabled("in CMUdict (a %s word):", split_name(tr::cmudict_split(word_)));
    for (size_t i = 0; i < answers->size() && i < 4; ++i) {
      const std::vector<std::string> phonemes =
          tr::tokenize((*answers)[i], tr::Tokenization::Phonemes);
      ImGui::SameLine();
      ImGui::Text("%s%s /%s/", i == 0 ? "" : " or ", (*answers)[i].c_str(),
                  arpabet_to_ipa(phonemes).c_str());
    }
    if (answers->size() > 4) {
      ImGui::SameLine();
      ImGui::TextDisabled("(and %zu more)", answers->size() - 4);
    }
  }
  // A row per model: its answer (red where the nearest pronunciation
  // differs), its IPA, right or wrong, and, for the models after the first
  // when they disagree, its answer again, yellow where the first's differs.
  const AskedModel* first = nullptr;
  bool all_agree = true;
  for (const AskedModel& m : models_) {
    if (!m.has_answer) continue;
    if (first == nullptr) first = &m;
    all_agree = all_agree && m.answer.phonemes == first->answer.phonemes;
  }
  if (first == nullptr) return;
  if (ImGui::BeginTable("pronounce/answers", 5, ImGuiTableFlags_SizingFixedFit)) {
    for (size_t i = 0; i < models_.size(); ++i) {
      const AskedModel& m = models_[i];
      if (!m.has_answer) continue;
      const std::vector<std::string> phonemes = without_eos(m.answer.output_tokens);
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(kScoringColors[i % 4]), "%s",
                         m.name.c_str());
      ImGui::TableNextColumn();
      std::vector<bool> marked(phonemes.size(), false);
      if (answers != nullptr) {
        // Against the nearest pronunciation (fewest phoneme edits).
        std::vector<std::string> nearest;
        int64_t nearest_distance = -1;
        for (const std::string& answer : *answers) {
          const std::vector<std::string> reference =
              tr::tokenize(answer, tr::Tokenization::Phonemes);
          const int64_t distance = tr::edit_distance(phonemes, reference);
          if (nearest_distance < 0 || distance < nearest_distance) {
            nearest = reference;
            nearest_distance = distance;
          }
        }
        marked = diff_phonemes(phonemes, nearest).a_differs;
      }
      phoneme_line(phonemes, marked, kWrong);
      ImGui::TableNextColumn();
      ImGui::TextDisabled("/%s/", arpabet_to_ipa(phonemes).c_str());
      ImGui::TableNextColumn();
      if (answers != nullptr) {
        const bool right = says_one_of(*answers, m.answer.phonemes);
        ImGui::TextColored(right ? kRight : kWrong, "%s", right ? "right" : "wrong");
      }
      ImGui::TableNextColumn();
      if (!all_agree && &m != first) {
        ImGui::TextDisabled("against %s:", first->name.c_str());
        ImGui::SameLine();
        const std::vector<bool> other =
            diff_phonemes(phonemes, without_eos(first->answer.output_tokens)).a_differs;
        phoneme_line(phonemes, other, kOther);
      }
    }
    ImGui::EndTable();
  }
  if (models_.size() > 1) {
    show_note(all_agree ? "The models agree."
                        : "The models disagree: yellow marks where each differs from the "
                          "first.");
  }
}

void PronounceScene::draw_model(AskedModel& m, size_t index, ImVec2 size) {
  // The shown candidate's alignment (the greedy answer's until one is
  // clicked) above, the beam's candidates below.
  ImGui::BeginChild(("pronounce/" + m.name).c_str(), size);
  ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(kScoringColors[index % 4]), "%s",
                     m.name.c_str());
  if (!m.load_error.empty()) {
    show_error(m.load_error);
    ImGui::EndChild();
    return;
  }
  ImGui::SameLine();
  ImGui::Text("says %s", m.answer.phonemes.empty() ? "(nothing)" : m.answer.phonemes.c_str());
  // How sure it is: the probability of the whole answer, <eos> included.
  ImGui::SameLine();
  ImGui::TextDisabled("confidence %.2f", m.answer.confidence);
  const bool greedy = m.shown_candidate < 0 || m.shown_candidate >= static_cast<int>(m.beam.size());
  const tr::PronunciationVariant& shown =
      greedy ? m.answer : m.beam[static_cast<size_t>(m.shown_candidate)];
  const float line = ImGui::GetTextLineHeightWithSpacing();
  const float list_height = std::min(line * (static_cast<float>(beam_) + 4.5f), size.y * 0.4f);
  const float list_top = size.y - list_height;  // the same in every column
  const float map_height = list_top - ImGui::GetCursorPosY() - line;
  if (shown.output_tokens.empty()) {
    show_note("The model said nothing: no rows to draw.");
  } else {
    draw_pronounce_alignment("pronounce/" + m.name + "/alignment",
                             greedy ? "greedy answer's alignment" : "candidate's alignment",
                             tr::alignment_columns(word_), shown.output_tokens, shown.alignment,
                             ImVec2(ImGui::GetContentRegionAvail().x, map_height));
  }
  ImGui::SetCursorPosY(std::max(list_top, ImGui::GetCursorPosY()));
  draw_candidates(m, ImVec2(ImGui::GetContentRegionAvail().x, list_height));
  ImGui::EndChild();
}

void PronounceScene::draw_candidates(AskedModel& m, ImVec2 size) {
  ImGui::BeginChild(("pronounce/" + m.name + "/beam").c_str(), size, true);
  if (beam_pending_) {
    ImGui::Text("The beam's best %d", beam_);
    show_note("Searching when the typing pauses.");
    ImGui::EndChild();
    return;
  }
  if (m.beam.empty()) {
    ImGui::TextUnformatted("Beam K = 1: greedy search");
    show_note("Raise K to see the beam's best K pronunciations and their scores.");
    ImGui::EndChild();
    return;
  }
  // Ranked as --nbest ranks them: by probability, the posterior renormalised
  // over the K; the beam itself keeps them by score (d2l's length penalty).
  ImGui::Text("The beam's %zu, most probable first", m.beam.size());
  ImGui::SameLine();
  ImGui::TextDisabled("(click one for its alignment)");
  ImGui::TextDisabled("posterior  score = log P / L^0.75");
  if (ImGui::Selectable("greedy answer", m.shown_candidate < 0)) m.shown_candidate = -1;
  for (size_t i = 0; i < m.beam.size(); ++i) {
    const tr::PronunciationVariant& c = m.beam[i];
    char line[160];
    std::snprintf(line, sizeof line, "%8.3f   %6.3f  %s%s##candidate%zu", c.posterior, c.score,
                  c.phonemes.c_str(), c.finished ? "" : " (unfinished)", i);
    if (ImGui::Selectable(line, m.shown_candidate == static_cast<int>(i))) {
      m.shown_candidate = static_cast<int>(i);
    }
  }
  ImGui::EndChild();
}

std::unique_ptr<Scene> make_pronounce_scene() {
  return std::make_unique<PronounceScene>(Stepping::Background);
}

}  // namespace ag::viewer
