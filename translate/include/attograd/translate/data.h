// Generated translation tasks for d2l's seq2seq (section "Bahdanau
// Attention"), with no download: every example comes from a seeded RNG.
//
//   dates    "Thursday, May 3, 1979", "05/03/79", "3.5.1979", ... -> "1979-05-03"
//   reverse  "48213"  -> "31284"
//   sort     "48213"  -> "12348"
//
// Character-level, as d2l's tokenize_nmt splits words: each character is a
// token. A Vocab maps tokens to indices; a Dataset holds a training set and a
// held-out set whose sources never appear in training (disjoint by
// construction: the held-out sources are drawn first, and a training draw
// that hits one is drawn again), and builds d2l's padded arrays:
//
//   src [B, src_steps] int64   tokens + <eos>, then <pad> (or truncated)
//   src_valid_len [B] int64    how many entries are not <pad>
//   tgt [B, tgt_steps], tgt_valid_len [B]   the same for the targets
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "attograd/core.h"

namespace ag::translate {

// ---- vocabulary ------------------------------------------------------------------
// d2l's Vocab: the reserved tokens first (<pad> 0, <bos> 1, <eos> 2, <unk> 3),
// then the tokens seen at least min_freq times, most frequent first (ties in
// byte order, so that the same corpus gives the same indices everywhere).
class Vocab {
 public:
  static constexpr int64_t kPad = 0, kBos = 1, kEos = 2, kUnk = 3;
  static const std::vector<std::string>& reserved_tokens();

  Vocab();  // the reserved tokens only
  Vocab(const std::vector<std::vector<std::string>>& corpus, int64_t min_freq = 0);
  // A vocabulary restored as it was (e.g. from a saved model): idx_to_token
  // must start with the reserved tokens and hold no token twice.
  static Vocab from_tokens(std::vector<std::string> idx_to_token);

  int64_t size() const { return static_cast<int64_t>(idx_to_token_.size()); }
  bool contains(const std::string& token) const { return token_to_idx_.count(token) > 0; }
  // The index of `token`, <unk> when unknown (as d2l's vocab[token]).
  int64_t index(const std::string& token) const;
  std::vector<int64_t> indices(const std::vector<std::string>& tokens) const;
  // indices(tokenize_chars(text)), without a string per character: a table
  // of the 256 one-byte tokens' indices, kept with the vocabulary (a training
  // step encodes its whole batch this way).
  std::vector<int64_t> char_indices(const std::string& text) const;
  // The token at `index`; throws ag::Error outside [0, size()).
  const std::string& token(int64_t index) const;
  std::vector<std::string> tokens(const std::vector<int64_t>& indices) const;
  const std::vector<std::string>& idx_to_token() const { return idx_to_token_; }

 private:
  void index_bytes();  // fills byte_to_idx_ from token_to_idx_

  std::vector<std::string> idx_to_token_;
  std::map<std::string, int64_t> token_to_idx_;
  std::array<int64_t, 256> byte_to_idx_{};  // index(std::string(1, byte))
};

// One token per character (bytes: the generated tasks are ASCII).
std::vector<std::string> tokenize_chars(const std::string& text);
// The tokens joined back into text; reserved tokens are left out.
std::string detokenize_chars(const std::vector<std::string>& tokens);

// ---- tasks -----------------------------------------------------------------------
enum class Task { Dates, Reverse, Sort };
// "dates", "reverse", "sort" and back; task_from_name throws ag::Error listing them.
const char* task_name(Task task);
Task task_from_name(const std::string& name);

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
  std::string target;
  std::vector<FieldSpan> spans;  // dates only: one span per field
};

// A calendar date; valid ones lie in [kFirstYear, kLastYear].
struct Date {
  int year = 1970, month = 1, day = 1;
  bool operator==(const Date&) const = default;
};
inline constexpr int kFirstYear = 1950, kLastYear = 2049;
// Days since 1970-01-01 and back (proleptic Gregorian calendar), and the
// weekday (0 = Sunday ... 6 = Saturday).
int64_t days_from_civil(const Date& date);
Date civil_from_days(int64_t days);
int weekday(const Date& date);
// "1979-05-03".
std::string iso_date(const Date& date);

// The date written in format `format` (0 <= format < num_date_formats()), with
// the spans of its year, month and day. Two-digit years stand for 1950..2049.
int num_date_formats();
Example format_date(const Date& date, int format);

// One random example of `task`; reverse and sort draw 3..10 digits.
Example generate_example(Task task, std::mt19937_64& rng);

// ---- datasets --------------------------------------------------------------------
struct Batch {
  Tensor src, src_valid_len;  // [B, src_steps], [B]
  Tensor tgt, tgt_valid_len;  // [B, tgt_steps], [B]
};

// d2l's truncate_pad: the first num_steps entries of `line`, padded with `pad`.
std::vector<int64_t> truncate_pad(std::vector<int64_t> line, int64_t num_steps, int64_t pad);

struct DatasetOptions {
  Task task = Task::Dates;
  int64_t num_train = 50000;
  int64_t num_heldout = 1000;
  uint64_t seed = 0;
};

class Dataset {
 public:
  // Draws the held-out examples (distinct sources), then the training
  // examples (sources not held out); builds the vocabularies from the
  // training examples and sets the step counts to the longest source and
  // target + <eos>, with room for the longest the task can generate.
  explicit Dataset(const DatasetOptions& options);

  Task task() const { return task_; }
  const std::vector<Example>& train() const { return train_; }
  const std::vector<Example>& heldout() const { return heldout_; }
  // The sources of the first `count` held-out examples (all if fewer).
  std::vector<std::string> heldout_sources(int64_t count) const {
    std::vector<std::string> sources;
    for (const Example& example : heldout_) {
      if (static_cast<int64_t>(sources.size()) == count) break;
      sources.push_back(example.source);
    }
    return sources;
  }
  const Vocab& src_vocab() const { return src_vocab_; }
  const Vocab& tgt_vocab() const { return tgt_vocab_; }
  int64_t src_steps() const { return src_steps_; }
  int64_t tgt_steps() const { return tgt_steps_; }

 private:
  Task task_;
  std::vector<Example> train_, heldout_;
  Vocab src_vocab_, tgt_vocab_;
  int64_t src_steps_ = 0, tgt_steps_ = 0;
};

// The longest source and target `task` generates, in characters.
int64_t max_source_length(Task task);
int64_t max_target_length(Task task);

// d2l's build_array_nmt for a batch of examples.
Batch make_batch(const std::vector<const Example*>& examples, const Vocab& src_vocab,
                 const Vocab& tgt_vocab, int64_t src_steps, int64_t tgt_steps);
// Only the source side (for prediction): [B, src_steps] and [B].
// Each text is tokenized into characters; a character the vocabulary lacks,
// an empty text or one longer than src_steps - 1 (no room for <eos>) throws
// ag::Error naming the text.
std::pair<Tensor, Tensor> encode_sources(const std::vector<std::string>& texts,
                                         const Vocab& src_vocab, int64_t src_steps);

// Shuffled minibatches over the training set, epoch after epoch: each epoch
// visits every example once in an order drawn from the seed (d2l's
// DataLoader(shuffle=True)); the last, partial batch of an epoch is dropped
// so that every batch has batch_size rows.
class BatchIterator {
 public:
  BatchIterator(const Dataset& data, int64_t batch_size, uint64_t seed);
  Batch next();

 private:
  const Dataset& data_;
  int64_t batch_size_;
  std::mt19937_64 rng_;
  std::vector<int64_t> order_;
  size_t position_ = 0;
};

}  // namespace ag::translate
