// What every task of attograd-translate hands the layers below the task
// table (data.h, translator.h, predict.h, evaluation.h), which know no task's
// details: its examples split into train, dev and test, the longest source and
// target it can present (so that the step counts hold every one), and its
// format: its name and how its sources and targets are cut into tokens. The
// rest of a task (its data, defaults, option checks and figures) is its entry
// in the task table (tasks.h): one file per task (dates.cpp, digits.cpp,
// g2p.cpp, ...), one line each in the table (tasks.cpp).
//
// Tokens are characters or space-separated phonemes, on either side. An
// example may have several right answers (a word's alternate pronunciations).
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace ag::translate {

// ---- tokenization ----------------------------------------------------------------
// Characters: one token per byte (the generated tasks and every word are
// ASCII). Phonemes: tokens separated by spaces ("N AY F"), joined back by
// single spaces.
enum class Tokenization { Characters, Phonemes };
// "character" or "phoneme", for messages.
const char* token_noun(Tokenization tokenization);
// Phonemes: runs of spaces separate, so "N  AY F" is three tokens. (The way
// back, detokenize, is data.h's: it drops the Vocab's reserved tokens.)
std::vector<std::string> tokenize(const std::string& text, Tokenization tokenization);
std::vector<std::string> tokenize_chars(const std::string& text);  // Characters
// A-Z folded to a-z, every other byte as it is ("Knife" -> "knife"): words
// as CMUdict's readers and the Pronouncer compare them.
std::string fold_ascii_case(std::string text);

// A task's name and how a model of it reads its sources and writes its
// targets: what a Dataset and a Translator carry of their task (a saved
// model names its task; the table, tasks.h, has the rest).
struct TaskFormat {
  std::string name = "dates";
  Tokenization source = Tokenization::Characters;
  Tokenization target = Tokenization::Characters;
};

// ---- examples ----------------------------------------------------------------------
// Which characters of a date's source spell one of its fields, [begin, end)
// in source characters: the year "1979" or "79", the month "May" or "05", the
// day "3rd" or "03". The weekday spells no field.
enum class DateField { Year, Month, Day };
struct FieldSpan {
  DateField field;
  int64_t begin = 0, end = 0;
};

struct Example {
  std::string source;
  std::string target;            // what training teaches; the first right answer
  std::vector<FieldSpan> spans;  // dates only: one span per field
  // More right answers (a dictionary task's dev and test examples: a word's
  // other pronunciations, a pronunciation's other spellings).
  std::vector<std::string> alternatives;

  // Whether `output` is target or one of the alternatives.
  bool accepts(const std::string& output) const;
  // target, then the alternatives.
  std::vector<std::string> answers() const;
};

// What a task gives the Dataset. Generated tasks leave dev empty (their
// held-out set is drawn fresh from the generator; their default step counts
// were read off it); a task read from a dictionary fills all three, and
// chooses on dev.
struct TaskData {
  std::vector<Example> train, dev, test;
  // The longest source and target the task can present, in tokens, without
  // <eos>: the Dataset's step counts are these + 1.
  int64_t max_source_length = 0, max_target_length = 0;
  std::string description;  // where the examples came from, for the log ("" if nothing to say)
};

// The generated tasks' split: num_heldout examples with distinct keys are
// drawn first (the test set), then num_train examples whose key is not held
// out (a draw that hits one is drawn again), all from one generator seeded
// with `seed`. The key is what must not repeat across the split (dates: the
// date itself, so that no held-out date is trained on in any format).
TaskData draw_split(const std::function<Example(std::mt19937_64&)>& generate,
                    const std::function<std::string(const Example&)>& key, int64_t num_train,
                    int64_t num_heldout, uint64_t seed);

}  // namespace ag::translate
