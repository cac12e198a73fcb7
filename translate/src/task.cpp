// Tokenization, examples and the generated tasks' split (task.h).
#include "attograd/translate/task.h"

#include <algorithm>
#include <set>

#include "attograd/error.h"

namespace ag::translate {

// ---- tokenization ----------------------------------------------------------------
const char* token_noun(Tokenization tokenization) {
  return tokenization == Tokenization::Phonemes ? "phoneme" : "character";
}

std::vector<std::string> tokenize(const std::string& text, Tokenization tokenization) {
  std::vector<std::string> tokens;
  if (tokenization == Tokenization::Characters) {
    tokens.reserve(text.size());
    for (char c : text) tokens.emplace_back(1, c);
    return tokens;
  }
  // Runs of spaces count as one separator: "N  AY F" is three phonemes.
  size_t begin = 0;
  while ((begin = text.find_first_not_of(' ', begin)) != std::string::npos) {
    const size_t end = std::min(text.find(' ', begin), text.size());
    tokens.push_back(text.substr(begin, end - begin));
    begin = end;
  }
  return tokens;
}

std::string fold_ascii_case(std::string text) {
  for (char& c : text) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return text;
}

std::vector<std::string> tokenize_chars(const std::string& text) {
  return tokenize(text, Tokenization::Characters);
}

// ---- examples ----------------------------------------------------------------------
bool Example::accepts(const std::string& output) const {
  return output == target ||
         std::find(alternatives.begin(), alternatives.end(), output) != alternatives.end();
}

std::vector<std::string> Example::answers() const {
  std::vector<std::string> all{target};
  all.insert(all.end(), alternatives.begin(), alternatives.end());
  return all;
}

TaskData draw_split(const std::function<Example(std::mt19937_64&)>& generate,
                    const std::function<std::string(const Example&)>& key, int64_t num_train,
                    int64_t num_heldout, uint64_t seed) {
  AG_CHECK(num_train > 0 && num_heldout >= 0, "Dataset",
           "need num_train > 0 and num_heldout >= 0, got " + std::to_string(num_train) + " and " +
               std::to_string(num_heldout));
  std::mt19937_64 rng(seed);
  TaskData data;
  std::set<std::string> heldout_keys;
  while (static_cast<int64_t>(data.test.size()) < num_heldout) {
    Example e = generate(rng);
    if (heldout_keys.insert(key(e)).second) data.test.push_back(std::move(e));
  }
  data.train.reserve(static_cast<size_t>(num_train));
  while (static_cast<int64_t>(data.train.size()) < num_train) {
    Example e = generate(rng);
    if (heldout_keys.count(key(e)) == 0) data.train.push_back(std::move(e));
  }
  return data;
}

}  // namespace ag::translate
