// Fuzz target for the text attograd-translate --predict reads: any bytes,
// split into texts at each newline, go through translate::encode_sources
// with the vocabulary of a small fixed corpus (the characters of the dates
// task's formats). Every text must either encode or raise ag::Error; a
// crash, a sanitizer report, another exception or an encoding that breaks
// encode_sources' promise (a row per text: its characters' indices, <eos>,
// then <pad>; the valid length counts the first two) is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "attograd/translate/data.h"

namespace {

namespace tr = ag::translate;

// Enough steps for the longest dates source, so that length errors and
// successes both happen often.
constexpr int64_t kSrcSteps = 24;

const tr::Vocab& vocab() {
  static const tr::Vocab v = [] {
    std::vector<std::vector<std::string>> corpus;
    for (const char* text : {"Thursday, May 3, 1979", "05/03/79", "3.5.1979", "May 3rd '79",
                             "1979-05-03", "Wednesday, September 26, 2001"})
      corpus.push_back(tr::tokenize_chars(text));
    return tr::Vocab(corpus);
  }();
  return v;
}

// Aborts (the fuzzer's "bug found") unless row `row` of the encoding is `text`.
void check_row(const std::string& text, const std::vector<double>& src,
               const std::vector<double>& lengths, size_t row) {
  const std::vector<int64_t> indices = vocab().char_indices(text);
  if (lengths[row] != static_cast<double>(indices.size() + 1)) std::abort();
  for (size_t t = 0; t < static_cast<size_t>(kSrcSteps); ++t) {
    const double expected = t < indices.size()    ? static_cast<double>(indices[t])
                            : t == indices.size() ? tr::Vocab::kEos
                                                  : tr::Vocab::kPad;
    if (expected == tr::Vocab::kUnk || src[row * kSrcSteps + t] != expected) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> texts(1);
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == '\n')
      texts.emplace_back();
    else
      texts.back() += static_cast<char>(data[i]);
  }
  try {
    const auto [src, lengths] = tr::encode_sources(texts, vocab(), kSrcSteps);
    const std::vector<double> s = src.to_vector(), l = lengths.to_vector();
    if (l.size() != texts.size() || s.size() != texts.size() * kSrcSteps) std::abort();
    for (size_t row = 0; row < texts.size(); ++row) check_row(texts[row], s, l, row);
  } catch (const ag::Error&) {
  }
  return 0;
}
