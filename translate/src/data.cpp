// Vocab, detokenization, the Dataset, padding and minibatches (see data.h).
#include "attograd/translate/data.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <numeric>
#include <optional>
#include <utility>

namespace ag::translate {

// ---- vocabulary ------------------------------------------------------------------
const std::vector<std::string>& Vocab::reserved_tokens() {
  static const std::vector<std::string> reserved{"<pad>", "<bos>", "<eos>", "<unk>"};
  return reserved;
}

Vocab::Vocab() : Vocab(std::vector<std::vector<std::string>>{}) {}

Vocab::Vocab(const std::vector<std::vector<std::string>>& corpus, int64_t min_freq) {
  std::map<std::string, int64_t> counts;
  for (const auto& line : corpus)
    for (const auto& token : line) ++counts[token];
  std::vector<std::pair<std::string, int64_t>> by_frequency(counts.begin(), counts.end());
  // Most frequent first; std::map already gave byte order, which stable_sort keeps for ties.
  std::stable_sort(by_frequency.begin(), by_frequency.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  idx_to_token_ = reserved_tokens();
  for (const auto& [token, count] : by_frequency) {
    const bool reserved = std::find(idx_to_token_.begin(), idx_to_token_.begin() + 4, token) !=
                          idx_to_token_.begin() + 4;
    if (count >= min_freq && !reserved) idx_to_token_.push_back(token);
  }
  for (size_t i = 0; i < idx_to_token_.size(); ++i)
    token_to_idx_[idx_to_token_[i]] = static_cast<int64_t>(i);
  index_bytes();
}

Vocab Vocab::from_tokens(std::vector<std::string> idx_to_token) {
  const auto& reserved = reserved_tokens();
  AG_CHECK(idx_to_token.size() >= reserved.size() &&
               std::equal(reserved.begin(), reserved.end(), idx_to_token.begin()),
           "Vocab::from_tokens", "the tokens must start with <pad> <bos> <eos> <unk>");
  Vocab vocab;
  vocab.idx_to_token_ = std::move(idx_to_token);
  vocab.token_to_idx_.clear();
  for (size_t i = 0; i < vocab.idx_to_token_.size(); ++i) {
    const auto [it, inserted] =
        vocab.token_to_idx_.emplace(vocab.idx_to_token_[i], static_cast<int64_t>(i));
    AG_CHECK(inserted, "Vocab::from_tokens",
             "token '" + it->first + "' appears twice (index " + std::to_string(it->second) +
                 " and " + std::to_string(i) + ")");
  }
  vocab.index_bytes();
  return vocab;
}

void Vocab::index_bytes() {
  for (size_t byte = 0; byte < byte_to_idx_.size(); ++byte)
    byte_to_idx_[byte] = index(std::string(1, static_cast<char>(byte)));
}

int64_t Vocab::index(const std::string& token) const {
  const auto it = token_to_idx_.find(token);
  return it == token_to_idx_.end() ? kUnk : it->second;
}

std::vector<int64_t> Vocab::indices(const std::vector<std::string>& tokens) const {
  std::vector<int64_t> out;
  out.reserve(tokens.size());
  for (const auto& token : tokens) out.push_back(index(token));
  return out;
}

std::vector<int64_t> Vocab::char_indices(const std::string& text) const {
  std::vector<int64_t> out;
  out.reserve(text.size());
  for (const char c : text) out.push_back(byte_to_idx_[static_cast<unsigned char>(c)]);
  return out;
}

const std::string& Vocab::token(int64_t index) const {
  AG_CHECK(index >= 0 && index < size(), "Vocab::token",
           "index " + std::to_string(index) + " is outside [0, " + std::to_string(size()) + ")");
  return idx_to_token_[static_cast<size_t>(index)];
}

std::vector<std::string> Vocab::tokens(const std::vector<int64_t>& indices) const {
  std::vector<std::string> out;
  out.reserve(indices.size());
  for (int64_t index : indices) out.push_back(token(index));
  return out;
}

std::string detokenize(const std::vector<std::string>& tokens, Tokenization tokenization) {
  const auto& reserved = Vocab::reserved_tokens();
  const char* separator = tokenization == Tokenization::Phonemes ? " " : "";
  std::string text;
  for (const auto& token : tokens) {
    if (std::find(reserved.begin(), reserved.end(), token) != reserved.end()) continue;
    if (!text.empty()) text += separator;
    text += token;
  }
  return text;
}

std::string detokenize_chars(const std::vector<std::string>& tokens) {
  return detokenize(tokens, Tokenization::Characters);
}

// ---- datasets --------------------------------------------------------------------
std::vector<int64_t> truncate_pad(std::vector<int64_t> line, int64_t num_steps, int64_t pad) {
  AG_CHECK(num_steps >= 0, "truncate_pad", "num_steps " + std::to_string(num_steps) + " < 0");
  line.resize(static_cast<size_t>(num_steps), pad);
  return line;
}

namespace {

// Drops the examples longer than max_length tokens (Dataset's max_length) and
// sets the longest lengths to those of the examples kept.
void keep_short_examples(TaskData& data, int64_t max_length, const TaskFormat& format) {
  int64_t longest_source = 0, longest_target = 0;
  const auto too_long = [&](const Example& e) {
    const auto source = static_cast<int64_t>(tokenize(e.source, format.source).size());
    if (source > max_length) return true;
    int64_t longest = 0;
    for (const std::string& answer : e.answers()) {
      longest =
          std::max<int64_t>(longest, static_cast<int64_t>(tokenize(answer, format.target).size()));
    }
    if (longest > max_length) return true;
    longest_source = std::max(longest_source, source);
    longest_target = std::max(longest_target, longest);
    return false;
  };
  for (std::vector<Example>* split : {&data.train, &data.dev, &data.test}) {
    std::erase_if(*split, too_long);
  }
  AG_CHECK(!data.train.empty(), "Dataset",
           "no training example is at most " + std::to_string(max_length) + " long");
  data.max_source_length = longest_source;
  data.max_target_length = longest_target;
}

}  // namespace

Dataset::Dataset(TaskFormat task, TaskData data, int64_t max_length) : task_(std::move(task)) {
  AG_CHECK(max_length >= 0, "Dataset",
           "max_length must be >= 0, got " + std::to_string(max_length));
  if (max_length > 0) keep_short_examples(data, max_length, task_);
  train_ = std::move(data.train);
  dev_ = std::move(data.dev);
  heldout_ = std::move(data.test);
  description_ = std::move(data.description);
  std::vector<std::vector<std::string>> sources, targets;
  for (const auto& e : train_) {
    sources.push_back(tokenize(e.source, task_.source));
    targets.push_back(tokenize(e.target, task_.target));
  }
  src_vocab_ = Vocab(sources);
  tgt_vocab_ = Vocab(targets);
  src_steps_ = data.max_source_length + 1;
  tgt_steps_ = data.max_target_length + 1;
}

namespace {

// Tokens + <eos>, truncated or padded to num_steps; the valid length counts
// the entries that are not <pad> (d2l's build_array_nmt).
void append_line(const std::string& text, Tokenization tokenization, const Vocab& vocab,
                 int64_t num_steps, std::vector<double>& array, std::vector<double>& valid_len) {
  std::vector<int64_t> line = tokenization == Tokenization::Characters
                                  ? vocab.char_indices(text)
                                  : vocab.indices(tokenize(text, tokenization));
  line.push_back(Vocab::kEos);
  int64_t valid = 0;
  for (int64_t index : truncate_pad(std::move(line), num_steps, Vocab::kPad)) {
    array.push_back(static_cast<double>(index));
    valid += index != Vocab::kPad;
  }
  valid_len.push_back(static_cast<double>(valid));
}

}  // namespace

Batch make_batch(const std::vector<const Example*>& examples, const Vocab& src_vocab,
                 const Vocab& tgt_vocab, int64_t src_steps, int64_t tgt_steps,
                 const TaskFormat& format) {
  AG_CHECK(!examples.empty() && src_steps > 0 && tgt_steps > 0, "make_batch",
           "need examples and positive step counts, got " + std::to_string(examples.size()) +
               " examples, steps " + std::to_string(src_steps) + " and " +
               std::to_string(tgt_steps));
  std::vector<double> src, src_len, tgt, tgt_len;
  for (const Example* e : examples) {
    append_line(e->source, format.source, src_vocab, src_steps, src, src_len);
    append_line(e->target, format.target, tgt_vocab, tgt_steps, tgt, tgt_len);
  }
  const auto batch = static_cast<int64_t>(examples.size());
  return {ag::tensor(src, {batch, src_steps}, kInt64), ag::tensor(src_len, {batch}, kInt64),
          ag::tensor(tgt, {batch, tgt_steps}, kInt64), ag::tensor(tgt_len, {batch}, kInt64)};
}

Tensor cut_padding(const Tensor& tokens, const Tensor& valid_len) {
  const std::vector<double> lens = valid_len.to_vector();
  return tokens.narrow(1, 0, static_cast<int64_t>(*std::max_element(lens.begin(), lens.end())));
}

namespace {

// source_problem for phonemes: the tokens' count and each one's membership.
std::optional<std::string> phoneme_source_problem(const std::string& text, const Vocab& src_vocab,
                                                  int64_t src_steps) {
  const std::vector<std::string> tokens = tokenize(text, Tokenization::Phonemes);
  if (tokens.empty()) return "translate: empty text";
  if (static_cast<int64_t>(tokens.size()) >= src_steps)
    return "translate: \"" + text + "\" has " + std::to_string(tokens.size()) +
           " phonemes; the model reads at most " + std::to_string(src_steps - 1);
  for (const std::string& token : tokens) {
    if (src_vocab.contains(token)) continue;
    std::vector<std::string> known(src_vocab.idx_to_token().begin() + 4,
                                   src_vocab.idx_to_token().end());
    std::sort(known.begin(), known.end());
    std::string listed;
    for (const std::string& k : known) listed += (listed.empty() ? "" : " ") + k;
    return "translate: unknown phoneme '" + token + "' in \"" + text + "\" (the model knows " +
           listed + ")";
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> source_problem(const std::string& text, const Vocab& src_vocab,
                                          int64_t src_steps, Tokenization source) {
  if (source == Tokenization::Phonemes) return phoneme_source_problem(text, src_vocab, src_steps);
  if (text.empty()) return "translate: empty text";
  if (static_cast<int64_t>(text.size()) >= src_steps)
    return "translate: \"" + text + "\" has " + std::to_string(text.size()) +
           " characters; the model reads at most " + std::to_string(src_steps - 1);
  for (size_t i = 0; i < text.size(); ++i) {
    if (src_vocab.contains(std::string(1, text[i]))) continue;
    std::string known;
    for (int64_t k = 4; k < src_vocab.size(); ++k) known += src_vocab.token(k);
    std::sort(known.begin(), known.end());
    // A UTF-8 character is shown whole: its lead byte (11xxxxxx) and the
    // continuation bytes (10xxxxxx) after it.
    const auto c = static_cast<unsigned char>(text[i]);
    size_t end = i + 1;
    while (c >= 0xc0 && end < text.size() && (static_cast<unsigned char>(text[end]) & 0xc0) == 0x80)
      ++end;
    std::string shown = "byte " + std::to_string(static_cast<int>(c));
    if (std::isprint(c) || end > i + 1)
      shown.assign(1, '\'').append(text, i, end - i).append(1, '\'');
    return "translate: unknown character " + shown + " in \"" + text + "\" (the model knows \"" +
           known + "\")";
  }
  return std::nullopt;
}

std::pair<Tensor, Tensor> encode_sources(const std::vector<std::string>& texts,
                                         const Vocab& src_vocab, int64_t src_steps,
                                         Tokenization source) {
  AG_CHECK(!texts.empty(), "translate", "no text to translate");
  std::vector<double> src, src_len;
  for (const auto& text : texts) {
    if (const std::optional<std::string> why = source_problem(text, src_vocab, src_steps, source))
      throw Error(*why);
    append_line(text, source, src_vocab, src_steps, src, src_len);
  }
  const auto batch = static_cast<int64_t>(texts.size());
  return {ag::tensor(src, {batch, src_steps}, kInt64), ag::tensor(src_len, {batch}, kInt64)};
}

BatchIterator::BatchIterator(const Dataset& data, int64_t batch_size, uint64_t seed)
    : data_(data), batch_size_(batch_size), rng_(seed), order_(data.train().size()) {
  AG_CHECK(batch_size > 0 && batch_size <= static_cast<int64_t>(data.train().size()),
           "BatchIterator",
           "batch size " + std::to_string(batch_size) + " must be in [1, " +
               std::to_string(data.train().size()) + "] (the training set's size)");
  std::iota(order_.begin(), order_.end(), 0);
  position_ = order_.size();  // shuffle before the first batch
}

Batch BatchIterator::next() {
  if (position_ + static_cast<size_t>(batch_size_) > order_.size()) {
    std::shuffle(order_.begin(), order_.end(), rng_);
    position_ = 0;
  }
  std::vector<const Example*> examples;
  examples.reserve(static_cast<size_t>(batch_size_));
  for (int64_t i = 0; i < batch_size_; ++i)
    examples.push_back(&data_.train()[static_cast<size_t>(order_[position_++])]);
  return make_batch(examples, data_.src_vocab(), data_.tgt_vocab(), data_.src_steps(),
                    data_.tgt_steps(), data_.task());
}

}  // namespace ag::translate
