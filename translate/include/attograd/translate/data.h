// The data side of attograd-translate, for any task (task.h): d2l's Vocab,
// the Dataset (a task's examples split into train, dev and test, and the
// vocabularies of the training split), padding and minibatches. It knows no
// task: a task's entry (tasks.h) hands it the examples and their format.
//
// Sources and targets are characters (as d2l's tokenize_nmt splits words
// into tokens) or phonemes, as the task's format says. A Vocab maps tokens
// to indices; the Dataset builds d2l's padded arrays:
//
//   src [B, src_steps] int64   tokens + <eos>, then <pad> (or truncated)
//   src_valid_len [B] int64    how many entries are not <pad>
//   tgt [B, tgt_steps], tgt_valid_len [B]   the same for the targets
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "attograd/core.h"
#include "attograd/translate/task.h"

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

// The tokens joined back into text, without the reserved tokens: characters
// side by side, phonemes with single spaces between ("N AY F").
std::string detokenize(const std::vector<std::string>& tokens, Tokenization tokenization);
std::string detokenize_chars(const std::vector<std::string>& tokens);  // Characters

// ---- datasets --------------------------------------------------------------------
struct Batch {
  Tensor src, src_valid_len;  // [B, src_steps], [B]
  Tensor tgt, tgt_valid_len;  // [B, tgt_steps], [B]
};

// d2l's truncate_pad: the first num_steps entries of `line`, padded with `pad`.
std::vector<int64_t> truncate_pad(std::vector<int64_t> line, int64_t num_steps, int64_t pad);

class Dataset {
 public:
  // A task's examples (its table entry's data, tasks.h: make_dataset), with
  // the vocabularies of the training examples, tokenized as `task` says, and
  // the step counts: the longest source and target the task can present +
  // <eos>. max_length > 0 keeps only the examples whose source and every
  // answer have at most max_length tokens (in every split), and the step
  // counts are the longest kept + 1: a smaller model that reads fewer padded
  // steps trains faster (the viewer's live g2p models). Throws ag::Error
  // when no training example is left.
  Dataset(TaskFormat task, TaskData data, int64_t max_length = 0);

  const TaskFormat& task() const { return task_; }
  const std::vector<Example>& train() const { return train_; }
  // The dev split, for model selection (g2p; empty for the generated tasks).
  const std::vector<Example>& dev() const { return dev_; }
  // The held-out (test) split, never trained or tuned on.
  const std::vector<Example>& heldout() const { return heldout_; }
  // Where the examples came from, for the log ("" for the generated tasks).
  const std::string& description() const { return description_; }
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
  TaskFormat task_;
  std::vector<Example> train_, dev_, heldout_;
  std::string description_;
  Vocab src_vocab_, tgt_vocab_;
  int64_t src_steps_ = 0, tgt_steps_ = 0;
};

// d2l's build_array_nmt for a batch of examples, their sources and targets
// tokenized as `format` says (Dataset::task(); characters by default).
Batch make_batch(const std::vector<const Example*>& examples, const Vocab& src_vocab,
                 const Vocab& tgt_vocab, int64_t src_steps, int64_t tgt_steps,
                 const TaskFormat& format = {});
// Why encode_sources would refuse `text` (its ag::Error's message), or
// nothing: an empty text, one of more than src_steps - 1 tokens, a token the
// vocabulary lacks.
std::optional<std::string> source_problem(const std::string& text, const Vocab& src_vocab,
                                          int64_t src_steps,
                                          Tokenization source = Tokenization::Characters);
// Only the source side (for prediction): [B, src_steps] and [B].
// Each text is tokenized as `source` says; a token the vocabulary lacks
// (named in the message: 'x', a UTF-8 character or a byte; a phoneme), an
// empty text or one longer than src_steps - 1 tokens (no room for <eos>)
// throws ag::Error naming the text.
std::pair<Tensor, Tensor> encode_sources(const std::vector<std::string>& texts,
                                         const Vocab& src_vocab, int64_t src_steps,
                                         Tokenization source = Tokenization::Characters);
// tokens [B, steps] without the columns past the longest of valid_len [B]:
// the steps that are padding in every row.
Tensor cut_padding(const Tensor& tokens, const Tensor& valid_len);

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
