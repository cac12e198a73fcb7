// The task interface of attograd-translate: what every task hands the data
// layer (data.h), which knows no task's details. One file per task:
//
//   dates          dates.h    generated: "Thursday, May 3, 1979" -> "1979-05-03"
//   reverse, sort  digits.h   generated: "48213" -> "31284", "12348"
//   g2p            cmudict.h  read from CMUdict: "knife" -> "N AY F"
//
// A task is a name, a tokenization of its targets, and a TaskData: its
// examples split into train, dev and test, and the longest source and target
// it can present (so that the step counts hold every one). Sources are
// characters for every task; targets are characters for the generated tasks
// and space-separated phonemes for g2p. An example may have several right
// answers (a word's alternate pronunciations).
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace ag::translate {

enum class Task { Dates, Reverse, Sort, G2p };
// "dates", "reverse", "sort", "g2p" and back; task_from_name throws ag::Error listing them.
const char* task_name(Task task);
Task task_from_name(const std::string& name);
// "dates, reverse, sort or g2p", for messages.
std::string task_names();

// ---- tokenization ----------------------------------------------------------------
// Characters: one token per byte (the generated tasks and every source are
// ASCII). Phonemes: tokens separated by spaces ("N AY F"), joined back by
// single spaces.
enum class Tokenization { Characters, Phonemes };
Tokenization target_tokenization(Task task);
// Phonemes: runs of spaces separate, so "N  AY F" is three tokens. (The way
// back, detokenize, is data.h's: it drops the Vocab's reserved tokens.)
std::vector<std::string> tokenize(const std::string& text, Tokenization tokenization);
std::vector<std::string> tokenize_chars(const std::string& text);  // Characters
// A-Z folded to a-z, every other byte as it is ("Knife" -> "knife"): words
// as CMUdict's readers and the Pronouncer compare them.
std::string fold_ascii_case(std::string text);

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
  // More right answers (g2p's dev and test words: the other pronunciations).
  std::vector<std::string> alternatives;

  // Whether `output` is target or one of the alternatives.
  bool accepts(const std::string& output) const;
  // target, then the alternatives.
  std::vector<std::string> answers() const;
};

// What a task gives the Dataset. Generated tasks leave dev empty (their
// held-out set is drawn fresh, and nothing is tuned on it); g2p fills all three.
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
