// How a letters-to-sounds model attends (attention_measures.h).
#include "attograd/translate/attention_measures.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "attograd/attograd.h"

namespace ag::translate {

namespace {

// The first column of the largest weight in row `row` of `weights`, a
// row-major [rows, columns] table.
int64_t peak(const std::vector<double>& weights, int64_t row, int64_t columns) {
  const auto begin = weights.begin() + row * columns;
  return std::max_element(begin, begin + columns) - begin;
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::istringstream in(text);
  for (std::string part; std::getline(in, part, separator);) parts.push_back(part);
  if (!text.empty() && text.back() == separator) parts.emplace_back();
  return parts;
}

}  // namespace

AttentionMeasures attention_measures(const std::vector<Translation>& translations) {
  AttentionMeasures m;
  double entropy = 0;
  int64_t forward = 0;
  for (const Translation& t : translations) {
    AG_CHECK(t.alignment.defined() && t.alignment.dim() == 2 &&
                 t.alignment.size(0) == static_cast<int64_t>(t.output_tokens.size()),
             "attention_measures",
             "'" + t.input + "': an alignment of shape " +
                 (t.alignment.defined() ? shape_str(t.alignment.shape()) : "none") + " for " +
                 std::to_string(t.output_tokens.size()) + " output tokens");
    const bool eos = !t.output_tokens.empty() && t.output_tokens.back() == "<eos>";
    const int64_t rows = t.alignment.size(0) - (eos ? 1 : 0), columns = t.alignment.size(1);
    const std::vector<double> w = t.alignment.to_vector();
    for (int64_t i = 0; i < rows; ++i) {
      // -sum_j w_j ln w_j, the row's entropy
      for (int64_t j = 0; j < columns; ++j) {
        const double x = w[static_cast<size_t>(i * columns + j)];
        if (x > 0) entropy -= x * std::log(x);
      }
      if (i > 0) forward += peak(w, i, columns) >= peak(w, i - 1, columns);
    }
    m.rows += rows;
    m.pairs += std::max<int64_t>(rows - 1, 0);
  }
  if (m.rows > 0) m.entropy = entropy / static_cast<double>(m.rows);
  if (m.pairs > 0) m.monotonic = static_cast<double>(forward) / static_cast<double>(m.pairs);
  return m;
}

AlignmentReference read_alignment_reference(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  AG_CHECK(file.is_open(), "read_alignment_reference",
           "cannot read '" + path + "' (scripts/g2p_align.py writes it)");
  AlignmentReference reference;
  int64_t number = 0;
  for (std::string line; std::getline(file, line);) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string where = path + ":" + std::to_string(number) + ": ";
    const std::vector<std::string> columns = split(line, '\t');
    AG_CHECK(columns.size() == 3 && !columns[0].empty(), "read_alignment_reference",
             where + "expected word<TAB>phonemes<TAB>letters of each phoneme, got " +
                 std::to_string(columns.size()) + " columns");
    if (columns[2].empty()) {  // no alignment fits (more phonemes than twice the letters)
      ++reference.unaligned;
      continue;
    }
    AlignedPronunciation p{columns[0], split(columns[1], ' '), {}};
    const std::vector<std::string> groups = split(columns[2], ' ');
    const bool phonemes_ok = std::none_of(p.phonemes.begin(), p.phonemes.end(),
                                          [](const std::string& s) { return s.empty(); });
    AG_CHECK(phonemes_ok && !p.phonemes.empty() && groups.size() == p.phonemes.size(),
             "read_alignment_reference",
             where + std::to_string(p.phonemes.size()) + " phonemes and " +
                 std::to_string(groups.size()) +
                 " letter groups (one group per phoneme, single spaces)");
    for (const std::string& group : groups) {
      std::vector<int64_t> letters;
      for (const std::string& index : split(group, '+')) {
        int64_t letter = -1;
        const auto [end, error] =
            std::from_chars(index.data(), index.data() + index.size(), letter);
        AG_CHECK(error == std::errc() && end == index.data() + index.size() && letter >= 0 &&
                     letter < static_cast<int64_t>(p.word.size()),
                 "read_alignment_reference",
                 where + "'" + group + "' is not letters of '" + p.word + "' (0 to " +
                     std::to_string(p.word.size() - 1) + ", joined by '+')");
        letters.push_back(letter);
      }
      p.letters.push_back(std::move(letters));
    }
    reference.pronunciations.push_back(std::move(p));
  }
  AG_CHECK(!reference.pronunciations.empty(), "read_alignment_reference",
           path + ": no aligned pronunciation");
  return reference;
}

AlignmentAgreement alignment_agreement(Translator& translator, const AlignmentReference& reference,
                                       const std::vector<std::string>& words, int64_t batch_size) {
  AG_CHECK(translator.model != nullptr && translator.task.name == "g2p", "alignment_agreement",
           "needs a g2p model (letters to phonemes), got task '" + translator.task.name + "'");
  AG_CHECK(batch_size > 0, "alignment_agreement",
           "batch_size " + std::to_string(batch_size) + " <= 0");
  // The pronunciations to score: those of `words` the model can take.
  const std::set<std::string> wanted(words.begin(), words.end());
  std::vector<const AlignedPronunciation*> scored;
  AlignmentAgreement a;
  for (const AlignedPronunciation& p : reference.pronunciations) {
    if (wanted.count(p.word) == 0) continue;
    const bool fits = !source_problem(p.word, translator.src_vocab, translator.src_steps) &&
                      static_cast<int64_t>(p.phonemes.size()) < translator.tgt_steps &&
                      std::all_of(p.phonemes.begin(), p.phonemes.end(), [&](const std::string& ph) {
                        return translator.tgt_vocab.contains(ph);
                      });
    if (fits)
      scored.push_back(&p);
    else
      ++a.skipped;
  }
  nn::EncoderDecoder& model = *translator.model;
  const bool was_training = model.is_training();
  model.eval();
  model.set_need_weights(true);
  NoGradGuard no_grad;
  for (size_t first = 0; first < scored.size(); first += static_cast<size_t>(batch_size)) {
    const size_t last = std::min(scored.size(), first + static_cast<size_t>(batch_size));
    std::vector<std::string> batch_words;
    size_t longest = 0;
    for (size_t i = first; i < last; ++i) {
      batch_words.push_back(scored[i]->word);
      longest = std::max(longest, scored[i]->phonemes.size());
    }
    auto [src, src_valid] = encode_sources(batch_words, translator.src_vocab, translator.src_steps);
    if (skips_padding(translator.config)) src = cut_padding(src, src_valid);
    // Teacher forcing: step t reads the reference's phoneme t - 1 (<bos> at 0).
    const auto B = static_cast<int64_t>(last - first), T = static_cast<int64_t>(longest);
    std::vector<double> input(static_cast<size_t>(B * T), static_cast<double>(Vocab::kPad));
    for (int64_t b = 0; b < B; ++b) {
      const AlignedPronunciation& p = *scored[first + static_cast<size_t>(b)];
      input[static_cast<size_t>(b * T)] = static_cast<double>(Vocab::kBos);
      for (size_t t = 1; t < p.phonemes.size(); ++t)
        input[static_cast<size_t>(b * T) + t] =
            static_cast<double>(translator.tgt_vocab.index(p.phonemes[t - 1]));
    }
    model(src, tensor(input, {B, T}, kInt64), src_valid);
    const Tensor alignment = model.decoder().alignment();  // [B, T, src columns]
    const int64_t columns = alignment.size(2);
    const std::vector<double> w = alignment.to_vector(), lens = src_valid.to_vector();
    for (int64_t b = 0; b < B; ++b) {
      const AlignedPronunciation& p = *scored[first + static_cast<size_t>(b)];
      // This row's block of [T, columns], its valid columns (the letters and <eos>) only.
      const auto valid = static_cast<int64_t>(lens[static_cast<size_t>(b)]);
      std::vector<double> rows;
      for (size_t t = 0; t < p.phonemes.size(); ++t) {
        const auto row = w.begin() + (b * T + static_cast<int64_t>(t)) * columns;
        rows.assign(row, row + valid);
        const int64_t letter = peak(rows, 0, valid);
        const std::vector<int64_t>& spelling = p.letters[t];
        a.agreeing += std::find(spelling.begin(), spelling.end(), letter) != spelling.end();
      }
      a.phonemes += static_cast<int64_t>(p.phonemes.size());
    }
    a.pronunciations += B;
  }
  model.train(was_training);
  if (a.phonemes > 0)
    a.agreement = static_cast<double>(a.agreeing) / static_cast<double>(a.phonemes);
  return a;
}

}  // namespace ag::translate
