// The p2g task (sounds to spelling) on CMUdict: its entry in the task table
// (tasks.h). g2p read backwards: a pronunciation in, a spelling out.
//
//   N AY F       -> knife
//   N AY T       -> night or knight (homophones: either is right)
//   K ER N AH L  -> kernel or colonel
//
// The split is g2p's, by word (cmudict_split): a word is a test word in both
// tasks or in neither. A dev or test example is one pronunciation of a dev or
// test word, with every word the dictionary spells that way as a right
// answer; a pronunciation of a test word and of a dev word is a test example.
// A training pair whose pronunciation is a dev or test example's is left out
// (and counted), so that no held-out input is ever trained on, as in g2p.
// Its figures: word accuracy (the output is one of the spellings) and the
// letter error rate (letter edits to the nearest spelling, per letter of it).
#include <map>
#include <set>
#include <string>
#include <vector>

#include "attograd/translate/cmudict.h"
#include "attograd/translate/tasks.h"

namespace ag::translate {

namespace {

// Each pronunciation's words, in the dictionary's order.
Lexicon spellings_of(const Cmudict& dict) {
  Lexicon spellings;
  for (const CmudictEntry& entry : dict.entries)
    for (const std::string& pronunciation : entry.pronunciations)
      spellings[pronunciation].push_back(entry.word);
  return spellings;
}

// `pronunciation` to be spelled `word`, or any other word that says it.
Example spelling_example(const std::string& pronunciation, const std::string& word,
                         const std::vector<std::string>& spellings) {
  Example e;
  e.source = pronunciation;
  e.target = word;
  for (const std::string& other : spellings)
    if (other != word) e.alternatives.push_back(other);
  return e;
}

TaskData p2g_data(const std::string& path) {
  const Cmudict dict = read_cmudict(path);
  const Lexicon spellings = spellings_of(dict);
  TaskData data;
  std::set<std::string> held_out;  // the dev and test examples' pronunciations
  for (const Split split : {Split::Test, Split::Dev}) {
    std::vector<Example>& examples = split == Split::Test ? data.test : data.dev;
    for (const CmudictEntry& entry : dict.entries) {
      if (cmudict_split(entry.word) != split) continue;
      for (const std::string& pronunciation : entry.pronunciations)
        if (held_out.insert(pronunciation).second)
          examples.push_back(
              spelling_example(pronunciation, entry.word, spellings.at(pronunciation)));
    }
  }
  int64_t train_words = 0, left_out = 0;
  for (const CmudictEntry& entry : dict.entries) {
    if (cmudict_split(entry.word) != Split::Train) continue;
    ++train_words;
    for (const std::string& pronunciation : entry.pronunciations) {
      if (held_out.count(pronunciation) > 0) {
        ++left_out;
        continue;
      }
      Example e;
      e.source = pronunciation;
      e.target = entry.word;
      data.train.push_back(std::move(e));
    }
  }
  AG_CHECK(!data.train.empty(), "p2g", path + ": no pronunciation falls in the training split");
  data.max_source_length = dict.stats.longest_pronunciation;
  data.max_target_length = dict.stats.longest_word;
  const auto n = [](auto value) { return std::to_string(value); };
  data.description = cmudict_summary(path, dict) + "\nsplit by crc32(word) % 20: train " +
                     n(train_words) + " words (" + n(data.train.size()) + " pairs; " + n(left_out) +
                     " left out: their pronunciation is held out), dev " + n(data.dev.size()) +
                     " pronunciations, test " + n(data.test.size()) + " pronunciations";
  return data;
}

// Every pronunciation of the dictionary as one example (--evaluate).
std::vector<Example> pronunciation_examples(const Cmudict& dict) {
  const Lexicon spellings = spellings_of(dict);
  std::vector<Example> examples;
  std::set<std::string> seen;
  for (const CmudictEntry& entry : dict.entries)
    for (const std::string& pronunciation : entry.pronunciations)
      if (seen.insert(pronunciation).second)
        examples.push_back(
            spelling_example(pronunciation, entry.word, spellings.at(pronunciation)));
  return examples;
}

// Phonemes as a user types them, read as the dictionary writes them: any
// spaces and tabs between them, upper case, a stress digit dropped
// ("n  ay1 f" -> "N AY F").
std::string read_pronunciation(std::string text) {
  for (char& c : text) {
    if (c == '\t' || c == '\r' || c == '\n') c = ' ';
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  std::string read;
  for (std::string phoneme : tokenize(text, Tokenization::Phonemes)) {
    if (phoneme.size() > 1 && phoneme.back() >= '0' && phoneme.back() <= '2') phoneme.pop_back();
    read += (read.empty() ? "" : " ") + phoneme;
  }
  return read;
}

}  // namespace

Task p2g_task() {
  Task task;
  task.format = {"p2g", Tokenization::Phonemes, Tokenization::Characters};
  task.summary = "p2g: a pronunciation's spelling, \"N AY F\" -> \"knife\" (CMUdict)";
  task.data = [](const DatasetOptions& o) { return p2g_data(o.dict_path); };
  // g2p's recipe, not tuned for p2g: the same dictionary the other way
  // round, its inputs and outputs of about the same lengths.
  task.defaults = [](const std::string& model) { return find_task("g2p").defaults(model); };
  task.check = [](const TaskOptions& o) { check_dictionary_options("p2g", o); };
  task.figures = [](const std::vector<Example>&, const std::vector<Translation>&,
                    const Evaluation& scored) {
    const double letter_error_rate =
        scored.reference_tokens > 0
            ? static_cast<double>(scored.edits) / static_cast<double>(scored.reference_tokens)
            : 0.0;
    return std::vector<Figure>{
        {"pronunciations", std::to_string(scored.count) + " pronunciations",
         static_cast<double>(scored.count)},
        percent_figure("word_accuracy", "word accuracy", scored.accuracy),
        percent_figure("letter_error_rate", "letter error rate", letter_error_rate,
                       std::to_string(scored.edits) + " edits / " +
                           std::to_string(scored.reference_tokens) + " letters")};
  };
  task.headline = "word_accuracy";
  task.read_input = read_pronunciation;
  task.dictionary_examples = pronunciation_examples;
  task.lexicon = spellings_of;
  return task;
}

}  // namespace ag::translate
